"""The audit log: local sign-ins, failures (beside django-axes' lockout) and sign-outs;
role and team changes made in the admin, through the ORM from either side, and by a
management command; the superusers' page and API, in each reader's language."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import ApiToken, AuditEvent
from tests.factories import TEST_PASSWORD, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_local_sign_in_failure_and_sign_out_are_recorded(client):
    user = UserFactory(username="grace")
    client.post(reverse("login"), {"username": "grace", "password": "wrong"})
    client.post(reverse("login"), {"username": "nobody-here", "password": "wrong"})
    client.post(reverse("login"), {"username": "grace", "password": TEST_PASSWORD})
    client.post(reverse("logout"))

    events = list(AuditEvent.objects.order_by("pk"))
    assert [(e.kind, e.username, e.subject_user_id, e.method) for e in events] == [
        ("sign_in_failed", "grace", user.pk, "local"),
        ("sign_in_failed", "nobody-here", None, "local"),
        ("sign_in", "grace", user.pk, "local"),
        ("sign_out", "grace", user.pk, "local"),
    ]
    assert {event.address for event in events} == {"127.0.0.1"}
    assert events[1].sentence == "Wrong username or password for nobody-here."
    assert events[2].sentence == "Signed in with a password."
    assert events[2].actor == user


def test_failures_are_recorded_while_axes_locks_the_username_out(client, settings):
    UserFactory(username="heidi")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = client.post(reverse("login"), {"username": "heidi", "password": "wrong"})
    assert response.status_code == 429, "axes still locks out"

    failures = AuditEvent.objects.filter(kind="sign_in_failed").order_by("pk")
    assert failures.count() == settings.AXES_FAILURE_LIMIT
    assert failures.last().sentence == (
        "Wrong username or password for heidi. Locked out after repeated failures."
    )
    assert failures.first().sentence == "Wrong username or password for heidi."


def test_admin_changes_of_roles_teams_and_the_superuser_flag_name_who_made_them(client):
    admin = UserFactory(role="admin", username="root")
    target = UserFactory(username="ivan")
    vision = TeamFactory(name="Vision")
    client.force_login(admin)
    url = reverse("admin:auth_user_change", args=[target.pk])
    form = client.get(url).context["adminform"].form
    data = {
        name: value
        for name, value in (
            (field, form[field].value()) for field in form.fields if field != "password"
        )
        if value not in (None, False)
    }
    data.update(
        {
            "groups": [Group.objects.get(name="Ops").pk],
            "is_superuser": "on",
            "date_joined_0": target.date_joined.strftime("%Y-%m-%d"),
            "date_joined_1": target.date_joined.strftime("%H:%M:%S"),
        }
    )
    data.pop("date_joined", None)
    data.pop("last_login", None)
    response = client.post(url, data)
    assert response.status_code == 302, response.content[:2000]
    vision.members.add(target)  # outside any request: a command's change, no actor

    events = AuditEvent.objects.filter(subject_user=target).order_by("pk")
    assert [(e.kind, e.actor_username, e.method, e.sentence) for e in events] == [
        # The admin saves the user, then its groups.
        ("role_granted", "root", "local", "ivan was given the role Administrator."),
        ("role_granted", "root", "local", "ivan was given the role Ops."),
        ("team_joined", "", "command", "ivan joined the team Vision."),
    ]


def test_changes_from_either_side_and_clear_are_recorded():
    user = UserFactory(username="judy")
    lead, ops = Group.objects.get(name="Technical lead"), Group.objects.get(name="Ops")
    vision, speech = TeamFactory(name="Vision"), TeamFactory(name="Speech")

    lead.user_set.add(user)
    user.groups.add(ops)
    user.groups.clear()
    vision.members.add(user)
    user.teams.add(speech)
    speech.members.remove(user)
    vision.members.clear()

    assert [event.sentence for event in AuditEvent.objects.order_by("pk")] == [
        "judy was given the role Technical lead.",
        "judy was given the role Ops.",
        "judy no longer has the role Ops.",
        "judy no longer has the role Technical lead.",
        "judy joined the team Vision.",
        "judy joined the team Speech.",
        "judy left the team Speech.",
        "judy left the team Vision.",
    ]


def test_a_deleted_users_events_stay_with_their_name():
    user = UserFactory(username="ken", role="lead")
    user.delete()

    event = AuditEvent.objects.get(kind="role_granted")
    assert event.subject_user is None and event.username == "ken"
    assert event.sentence == "ken was given the role Technical lead."


def _events(count):
    """``count`` events a minute apart, user-00 the oldest: odd ones sign-ins."""
    base = timezone.now() - timedelta(days=1)
    sentences = {"sign_in": "Signed in with a password.", "sign_out": "Signed out."}
    kinds = [("sign_in" if number % 2 else "sign_out") for number in range(count)]
    AuditEvent.objects.bulk_create(
        AuditEvent(
            at=base + timedelta(minutes=number),
            kind=kind,
            username=f"user-{number:02d}",
            method="local",
            detail=[{"msgid": sentences[kind], "values": {}}],
        )
        for number, kind in enumerate(kinds)
    )


def test_the_audit_page_is_newest_first_25_a_page_filtered_and_in_chinese(client):
    _events(30)
    client.force_login(UserFactory(role="admin", username="root"))
    AuditEvent.objects.filter(username="root").delete()  # the force_login's own sign-in
    url = reverse("accounts:audit_list")

    first = client.get(url).content.decode()
    names = [f"user-{number:02d}" for number in range(29, -1, -1)]
    positions = [first.find(f">{name}<") for name in names[:25]]
    assert all(position > 0 for position in positions) and positions == sorted(positions)
    assert f">{names[25]}<" not in first
    assert "Showing 1–25 of 30" in first
    second = client.get(url, {"page": 2}).content.decode()
    assert all(f">{name}<" in second for name in names[25:])

    signed_out = client.get(url, {"kind": "sign_out"}).content.decode()
    assert (
        signed_out.count('data-kind="sign_out"') == 15 and 'data-kind="sign_in"' not in signed_out
    )
    one = client.get(
        url, {"user": "USER-07"}, headers={"HX-Request": "true", "HX-Target": "audit-events"}
    )
    body = one.content.decode()
    assert "<html" not in body and body.count('data-kind="') == 1 and ">user-07<" in body

    chinese = client.get(url, headers={"accept-language": "zh-hans"}).content.decode()
    assert "已退出登录。" in chinese and "审计日志" in chinese


def test_only_superusers_read_the_audit_page_and_api(client):
    _events(3)
    for role in ("lead", "ops", "finance", "reader"):
        client.force_login(UserFactory(role=role))
        assert client.get(reverse("accounts:audit_list")).status_code == 403
        assert client.get("/api/v1/audit-events/").status_code == 403


def test_the_api_lists_events_for_a_superusers_token_in_the_readers_language(client):
    _events(3)
    admin = UserFactory(role="admin", username="root")
    _token, plaintext = ApiToken.issue(
        user=admin, description="audit", lifetime=timedelta(days=1), read_only=True
    )
    headers = {"authorization": f"Bearer {plaintext}"}

    listed = client.get("/api/v1/audit-events/?kind=sign_out", headers=headers).json()
    assert [(item["username"], item["sentence"]) for item in listed["results"]] == [
        ("user-02", "Signed out."),
        ("user-00", "Signed out."),
    ]
    event = listed["results"][0]
    chinese = client.get(
        "/api/v1/audit-events/?user=user-01", headers={**headers, "accept-language": "zh-hans"}
    ).json()
    assert [item["sentence"] for item in chinese["results"]] == ["已用密码登录。"]
    assert client.get("/api/v1/audit-events/?kind=nonsense", headers=headers).status_code == 400
    assert client.delete(f"/api/v1/audit-events/{event['id']}/", headers=headers).status_code in (
        403,
        405,
    )
    assert AuditEvent.objects.filter(pk=event["id"]).exists()
