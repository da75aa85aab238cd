"""The group mapping without a provider: OIDC_GROUP_MAPPING's syntax, its loading by
manage.py sync_group_mapping (a missing team is audited, not a crash), what a sign-in's
groups give (services.sso_sign_in, as the SSO backend calls it with the claims), and the
superusers' pages that edit it."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.accounts.models import AuditEvent, GroupMapping, OidcIdentity
from apps.accounts.services import (
    MappingEntry,
    MappingSyntaxError,
    parse_group_mapping,
    sso_sign_in,
)
from tests.factories import TeamFactory, UserFactory

pytestmark = pytest.mark.django_db
ISSUER = "https://idp.example.com"


def _sign_in(sub, groups, **claims):
    return sso_sign_in(issuer=ISSUER, claims={"sub": sub, **claims}, idp_groups=set(groups))


def _roles(user):
    return set(user.groups.values_list("name", flat=True))


def _teams(user):
    return set(user.teams.values_list("slug", flat=True))


def test_the_mapping_syntax():
    assert parse_group_mapping(
        "gpu-admins=admin; ml-vision=lead:vision;finance=finance\nml-audio=:audio;"
    ) == [
        MappingEntry("gpu-admins", "admin", ""),
        MappingEntry("ml-vision", "lead", "vision"),
        MappingEntry("finance", "finance", ""),
        MappingEntry("ml-audio", "", "audio"),
    ]
    # A group name may hold "=" (LDAP DNs do): the last one splits.
    assert parse_group_mapping("cn=ops,ou=groups=ops") == [
        MappingEntry("cn=ops,ou=groups", "ops", "")
    ]
    for wrong in ("ml-vision", "=lead", "ml-vision=", "ml-vision=boss:vision"):
        with pytest.raises(MappingSyntaxError):
            parse_group_mapping(wrong)


def test_sync_adds_what_is_missing_and_audits_a_team_that_does_not_exist():
    TeamFactory(name="Vision", slug="vision")
    out, err = StringIO(), StringIO()
    call_command(
        "sync_group_mapping", mapping="gpu-admins=admin;ml-vision=lead:vision;ml-audio=ops:audio",
        stdout=out, stderr=err,
    )  # fmt: skip

    assert set(GroupMapping.objects.values_list("idp_group", "role", "team__slug")) == {
        ("gpu-admins", "admin", None),
        ("ml-vision", "lead", "vision"),
    }
    assert "2 added, 0 already there, 0 removed" in out.getvalue()
    assert "'audio'" in err.getvalue()
    events = AuditEvent.objects.filter(kind="mapping_changed").order_by("pk")
    assert [(event.method, event.actor) for event in events] == [("command", None)] * 3
    assert [event.sentence for event in events] == [
        "Group gpu-admins now gives Administrator.",
        "Group ml-vision now gives Technical lead and the team Vision.",
        "The group mapping entry for ml-audio names the team audio, which does not exist: "
        "the entry was skipped.",
    ]

    # Again: nothing new; with --replace, rows the variable does not list go.
    GroupMapping.objects.create(idp_group="made-on-the-page", role="ops")
    call_command("sync_group_mapping", mapping="gpu-admins=admin", stdout=out)
    assert GroupMapping.objects.count() == 3
    call_command("sync_group_mapping", mapping="gpu-admins=admin", replace=True, stdout=out)
    assert list(GroupMapping.objects.values_list("idp_group", flat=True)) == ["gpu-admins"]


def test_sync_reads_oidc_group_mapping_and_refuses_a_malformed_one(settings):
    settings.OIDC_GROUP_MAPPING = "finance=finance"
    call_command("sync_group_mapping", stdout=StringIO())
    assert list(GroupMapping.objects.values_list("idp_group", "role")) == [("finance", "finance")]
    settings.OIDC_GROUP_MAPPING = "finance"
    with pytest.raises(CommandError, match="OIDC_GROUP_MAPPING"):
        call_command("sync_group_mapping")


@pytest.fixture
def mapping():
    vision, audio = (
        TeamFactory(name="Vision", slug="vision"),
        TeamFactory(name="Audio", slug="audio"),
    )
    GroupMapping.objects.create(idp_group="ml-vision", role="lead", team=vision)
    GroupMapping.objects.create(idp_group="ml-audio", team=audio)
    GroupMapping.objects.create(idp_group="fin", role="finance")
    GroupMapping.objects.create(idp_group="admins", role="admin")
    return {"vision": vision, "audio": audio}


def test_groups_give_roles_and_teams_and_the_next_sign_in_follows_the_provider(mapping):
    user = _sign_in("s-1", ["ml-vision", "ml-audio", "unmapped"], preferred_username="eve")
    assert user.username == "eve"
    assert _roles(user) == {"Technical lead"} and _teams(user) == {"vision", "audio"}

    user = _sign_in("s-1", ["ml-audio", "fin"])
    assert _roles(user) == {"Finance"} and _teams(user) == {"audio"}

    user = _sign_in("s-1", [])
    assert _roles(user) == set() and _teams(user) == set()
    identity = OidcIdentity.objects.get(subject="s-1")
    assert (identity.mapped_roles, identity.mapped_team_ids) == ([], [])


def test_what_the_mapping_gave_is_taken_back_when_its_row_goes(mapping):
    user = _sign_in("s-2", ["ml-vision"], preferred_username="fay")
    GroupMapping.objects.filter(idp_group="ml-vision").delete()

    user = _sign_in("s-2", ["ml-vision"])

    assert _roles(user) == set() and _teams(user) == set()


def test_hand_given_roles_and_teams_stay_unless_the_mapping_manages_them(mapping):
    user = _sign_in("s-3", [], preferred_username="gus")
    speech = TeamFactory(name="Speech", slug="speech")
    user.teams.add(speech, mapping["audio"])  # speech: by hand only; audio: ml-audio's
    user.groups.add(Group.objects.get(name="Ops"), Group.objects.get(name="Finance"))

    user = _sign_in("s-3", [])

    # Ops and speech are nothing to the mapping; Finance and audio are its to give.
    assert _roles(user) == {"Ops"} and _teams(user) == {"speech"}


def test_administrator_is_the_superuser_flag(mapping):
    user = _sign_in("s-4", ["admins"], email="hal@example.com")
    assert user.username == "hal" and user.is_superuser and user.is_staff
    user = _sign_in("s-4", ["fin"])
    assert not user.is_superuser and not user.is_staff and _roles(user) == {"Finance"}


def test_usernames_are_made_unique_and_valid():
    UserFactory(username="admin")
    assert _sign_in("s-5", [], preferred_username="Admin").username == "Admin-2"
    assert _sign_in("s-6", [], preferred_username="admin").username == "admin-3"
    assert _sign_in("s-7", [], email="J.Doe+gpu@example.com").username == "J.Doe+gpu"
    assert _sign_in("s-8", [], preferred_username="李 雷/ops").username == "李-雷-ops"
    assert _sign_in("s-9", []).username == "user"
    assert get_user_model().objects.filter(oidc_identities__issuer=ISSUER).count() == 5


def test_the_mapping_pages_are_for_superusers_and_audit_each_change(client):
    vision = TeamFactory(name="Vision", slug="vision")
    admin = UserFactory(role="admin", username="root")
    client.force_login(admin)

    created = client.post(
        reverse("accounts:group_mapping_create"),
        {"idp_group": "ml-vision", "role": "lead", "team": vision.pk},
    )
    assert created.status_code == 302 and created.url == reverse("accounts:group_mapping_list")
    mapping = GroupMapping.objects.get()
    listed = client.get(reverse("accounts:group_mapping_list")).content.decode()
    assert 'data-group="ml-vision"' in listed and "Technical lead" in listed

    refused = client.post(reverse("accounts:group_mapping_create"), {"idp_group": "x"})
    assert "Choose a role, a team, or both." in refused.content.decode()
    duplicate = client.post(
        reverse("accounts:group_mapping_create"),
        {"idp_group": "ml-vision", "role": "lead", "team": vision.pk},
    )
    assert "This group already gives exactly that." in duplicate.content.decode()

    client.post(
        reverse("accounts:group_mapping_edit", args=[mapping.pk]),
        {"idp_group": "ml-vision", "role": "ops", "team": ""},
    )
    confirm = client.get(reverse("accounts:group_mapping_delete", args=[mapping.pk]))
    assert "This cannot be undone." in confirm.content.decode()
    client.post(reverse("accounts:group_mapping_delete", args=[mapping.pk]))
    assert not GroupMapping.objects.exists()

    events = AuditEvent.objects.filter(kind="mapping_changed").order_by("pk")
    assert [(event.actor_username, event.method) for event in events] == [("root", "local")] * 3
    assert [event.sentence for event in events] == [
        "Group ml-vision now gives Technical lead and the team Vision.",
        "Group mapping changed: ml-vision gives Ops (was ml-vision: Technical lead and the "
        "team Vision).",
        "Group ml-vision no longer gives Ops.",
    ]


def test_the_mapping_page_reads_in_chinese(client):
    TeamFactory(name="Vision", slug="vision")
    call_command("sync_group_mapping", mapping="ml-vision=lead:vision", stdout=StringIO())
    client.force_login(UserFactory(role="admin"))
    page = client.get(
        reverse("accounts:group_mapping_list"), headers={"accept-language": "zh-hans"}
    ).content.decode()
    assert "技术负责人" in page
    log = client.get(
        reverse("accounts:audit_list"), headers={"accept-language": "zh-hans"}
    ).content.decode()
    assert "用户组 ml-vision 现在授予角色“技术负责人”和团队 Vision。" in log


def test_every_migrate_adds_the_missing_rows_of_oidc_group_mapping(settings):
    from django.core.management.sql import emit_post_migrate_signal

    settings.OIDC_GROUP_MAPPING = "gpu-admins=admin;finance=finance"
    GroupMapping.objects.create(idp_group="finance", role="finance")

    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")
    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")

    assert sorted(GroupMapping.objects.values_list("idp_group", "role")) == [
        ("finance", "finance"),
        ("gpu-admins", "admin"),
    ]
