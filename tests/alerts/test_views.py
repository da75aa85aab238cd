"""The alert pages: what each shows, the POST-only buttons by role (send a test
notification, send a delivery again, expire a silence), the forms' team choices and
thresholds, and the Overview's firing alerts."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.alerts import services
from apps.alerts.models import Alert, AlertRule, Delivery, Silence
from tests.alerts.conftest import overdue_drill_policy
from tests.alerts.factories import make_alert, make_channel, make_rule, make_silence
from tests.factories import PoolFactory, TeamFactory, UserFactory

ROLES = ["lead", "ops", "procurement", "reader", "admin"]


@pytest.fixture
def firing(db, settings):
    """An overdue drill told to an email channel (Django's in-memory backend)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    pool = PoolFactory(name="Drilled", slug="drilled")
    overdue_drill_policy(pool, name="Pretrain", slug="pretrain")
    channel = make_channel("Mail", kind="email")
    rule = make_rule("Overdue drills", kind="drill_overdue", channel=channel)
    services.evaluate_and_deliver()
    return {"pool": pool, "channel": channel, "rule": rule, "alert": Alert.objects.get()}


@pytest.mark.django_db
def test_the_alert_list_puts_firing_alerts_first_and_filters(client, firing):
    resolved = make_alert(
        firing["rule"],
        PoolFactory(name="Old"),
        status="resolved",
        starts_at=timezone.now() + timedelta(minutes=1),
    )
    resolved.ends_at = timezone.now() + timedelta(minutes=2)
    resolved.save()
    client.force_login(UserFactory())
    page = client.get(reverse("alerts:alert_list")).content.decode()
    assert "1 alert firing" in page
    assert page.index("Pretrain: restore drill overdue since") < page.index("Old: walk alert")
    only_resolved = client.get(
        reverse("alerts:alert_list"), {"status": "resolved"}
    ).content.decode()
    assert "Old: walk alert" in only_resolved and "Pretrain" not in only_resolved
    fragment = client.get(
        reverse("alerts:alert_list"),
        {"kind": "idle_cost"},
        headers={"HX-Request": "true", "HX-Target": "alerts"},
    )
    assert (
        "<html" not in fragment.content.decode() and "No alert matches" in fragment.content.decode()
    )


@pytest.mark.django_db
def test_an_alert_page_shows_its_labels_and_notifications(client, firing):
    client.force_login(UserFactory(role="ops"))
    page = client.get(firing["alert"].get_absolute_url()).content.decode()
    assert "workload=pretrain" in page and "The restore drill of Pretrain" in page
    assert 'id="alert-deliveries"' in page and "Mail" in page and "Sent" in page
    assert reverse("alerts:silence_create") + "?matchers=" in page
    silence_form = client.get(
        reverse("alerts:silence_create"), {"matchers": "rule=overdue-drills, workload=pretrain"}
    )
    assert (
        silence_form.context["form"].initial["matchers_text"]
        == "rule=overdue-drills, workload=pretrain"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_a_test_notification_is_sent_by_those_who_change_channels(client, role, receiver):
    channel = make_channel("Pager", url=receiver.url("/hook"))
    client.force_login(UserFactory(role=role))
    response = client.post(
        reverse("alerts:channel_test", kwargs={"slug": channel.slug}), follow=True
    )
    if role in ("ops", "admin"):
        assert response.status_code == 200
        assert "A test notification went to Pager." in response.content.decode()
        assert len(receiver.received("/hook")) == 1
    else:
        assert response.status_code == 403 and not receiver.received("/hook")


@pytest.mark.django_db
def test_a_failed_test_notification_says_why(client, receiver):
    channel = make_channel("Pager", url=receiver.url("/hook"))
    receiver.answer("/hook", 500)
    client.force_login(UserFactory(role="ops"))
    page = client.post(
        reverse("alerts:channel_test", kwargs={"slug": channel.slug}), follow=True
    ).content.decode()
    assert "was not delivered" in page and "answered HTTP 500" in page


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_a_failed_delivery_is_sent_again_by_those_who_change_channels(client, role, firing):
    delivery = Delivery.objects.get()
    Delivery.objects.filter(pk=delivery.pk).update(status="failed", last_error="Gave up")
    client.force_login(UserFactory(role=role))
    response = client.post(reverse("alerts:delivery_send_again", kwargs={"pk": delivery.pk}))
    delivery.refresh_from_db()
    if role in ("ops", "admin"):
        assert response.status_code == 302
        assert (delivery.status, delivery.attempts, delivery.last_error) == ("pending", 0, "")
    else:
        assert response.status_code == 403 and delivery.status == "failed"


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_a_silence_is_expired_by_those_who_manage_silences(client, role):
    silence = make_silence(matchers={"pool": "x"})
    client.force_login(UserFactory(role=role))
    response = client.post(reverse("alerts:silence_expire", kwargs={"pk": silence.pk}))
    silence.refresh_from_db()
    if role in ("lead", "ops", "admin"):
        assert response.status_code == 302 and not silence.is_active()
    else:
        assert response.status_code == 403 and silence.is_active()


@pytest.mark.django_db
def test_the_delivery_history_shows_retries_and_errors(client, firing):
    delivery = Delivery.objects.get()
    Delivery.objects.filter(pk=delivery.pk).update(
        status="retrying",
        sent_at=None,
        attempts=3,
        next_attempt_at=timezone.now() + timedelta(minutes=2),
        last_error="https://hooks.example.com answered HTTP 502: bad gateway",
        response_status=502,
    )
    client.force_login(UserFactory(role="ops"))
    page = client.get(reverse("alerts:delivery_list")).content.decode()
    assert "Retrying" in page and "Next attempt at" in page and "answered HTTP 502" in page
    Delivery.objects.filter(pk=delivery.pk).update(status="failed", next_attempt_at=None)
    failed = client.get(reverse("alerts:delivery_list"), {"status": "failed"}).content.decode()
    assert "Send again" in failed
    reader = UserFactory()
    client.force_login(reader)
    assert "Send again" not in client.get(reverse("alerts:delivery_list")).content.decode()


@pytest.mark.django_db
def test_a_chat_channels_url_is_held_back_from_readers(client):
    channel = make_channel(
        "Chat", kind="slack", url="https://hooks.slack.com/services/T0/B0/secret"
    )
    client.force_login(UserFactory())
    for url in (reverse("alerts:channel_list"), channel.get_absolute_url()):
        page = client.get(url).content.decode()
        assert "https://hooks.slack.com/…" in page and "secret" not in page
    client.force_login(UserFactory(role="ops"))
    assert "services/T0/B0/secret" in client.get(channel.get_absolute_url()).content.decode()


@pytest.mark.django_db
def test_the_rule_form_offers_a_team_member_only_their_teams(client):
    team_a, team_b = TeamFactory(name="Team A"), TeamFactory(name="Team B")
    make_channel("Shared")
    make_channel("B chat", team=team_b)
    PoolFactory(name="B pool", team=team_b)
    client.force_login(UserFactory(role="ops", teams=[team_a]))
    form = client.get(reverse("alerts:rule_create")).context["form"]
    assert list(form.fields["team"].queryset) == [team_a]
    assert form.fields["team"].required
    assert [c.name for c in form.fields["channel"].queryset] == ["Shared"]
    assert "B pool" not in [p.name for p in form.fields["pool"].queryset]
    response = client.post(
        reverse("alerts:rule_create"),
        {
            "name": "Mine",
            "slug": "",
            "kind": "drill_overdue",
            "channel": form.fields["channel"].queryset.get().pk,
            "team": team_a.pk,
            "enabled": "on",
        },
    )
    assert response.status_code == 302
    assert AlertRule.objects.get(slug="mine").team == team_a
    # A fleet-wide rule is theirs to read, not to change.
    fleet_wide = make_rule("Fleet wide")
    assert client.get(fleet_wide.get_absolute_url()).status_code == 200
    edit = client.get(reverse("alerts:rule_edit", kwargs={"slug": fleet_wide.slug}))
    assert edit.status_code == 403 and "is fleet-wide" in edit.content.decode()


@pytest.mark.django_db
def test_the_rule_form_asks_for_the_thresholds_of_its_kind(client):
    channel = make_channel("Pager")
    client.force_login(UserFactory(role="lead"))
    url = reverse("alerts:rule_create")
    page = client.get(url).content.decode()
    # Only a kind without an evaluator says so, not the blank choice before the kinds.
    assert '<option value="" selected>---------</option>' in page
    assert "has no evaluator" not in page
    # The amount, shown for idle cost and dollars at risk only.
    assert 'data-show-values="idle_cost dollars_at_risk"' in page
    base = {"name": "Idle", "slug": "", "channel": channel.pk, "enabled": "on"}
    missing = client.post(url, {**base, "kind": "idle_cost", "window_hours": "24"})
    assert missing.status_code == 200
    assert "needs an amount in USD" in missing.content.decode()
    comma = client.post(
        url, {**base, "kind": "idle_cost", "window_hours": "24", "threshold_usd": "1,5"}
    )
    assert "use a decimal point" in comma.content.decode()
    budget = client.post(url, {**base, "kind": "budget"})
    assert "needs a percentage" in budget.content.decode()
    saved = client.post(
        url,
        {
            **base,
            "kind": "idle_cost",
            "window_hours": "24",
            "threshold_usd": "300",
            "stale_minutes": "5",
        },
    )
    assert saved.status_code == 302
    rule = AlertRule.objects.get(slug="idle")
    assert (rule.threshold_usd, rule.window_hours, rule.stale_minutes) == (
        Decimal("300.00"),
        24,
        None,
    )
    detail = client.get(rule.get_absolute_url()).content.decode()
    assert "a pool&#x27;s idle cost is above $300.00 over 24 h" in detail


@pytest.mark.django_db
def test_deleting_a_rule_asks_first_and_resolves_its_alerts(client, firing, mailoutbox):
    client.force_login(UserFactory(role="ops"))
    url = reverse("alerts:rule_delete", kwargs={"slug": firing["rule"].slug})
    page = client.get(url).content.decode()
    assert "Delete <strong>Overdue drills</strong>?" in page
    assert client.post(url).status_code == 302
    alert = Alert.objects.get()
    assert alert.status == "resolved" and alert.rule is None
    services.deliver_due()
    assert [message.subject.split("]")[0] for message in mailoutbox] == ["[FIRING", "[RESOLVED"]


@pytest.mark.django_db
def test_a_channel_that_rules_use_names_them_instead_of_deleting(client, firing):
    client.force_login(UserFactory(role="ops"))
    url = reverse("alerts:channel_delete", kwargs={"slug": firing["channel"].slug})
    page = client.get(url).content.decode()
    assert 'id="delete-blocked"' in page and "Overdue drills" in page


@pytest.mark.django_db
def test_a_silence_is_made_from_the_form_with_an_end(client, firing):
    client.force_login(UserFactory(role="lead"))
    url = reverse("alerts:silence_create")
    ends = (timezone.localtime() + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")
    starts = timezone.localtime().strftime("%Y-%m-%dT%H:%M")
    bad = client.post(
        url, {"matchers_text": "pool", "starts_at": starts, "ends_at": ends, "comment": "x"}
    )
    assert "“pool” is not label=value." in bad.content.decode()
    nothing = client.post(url, {"starts_at": starts, "ends_at": ends, "comment": "x"})
    assert "Choose a rule or give at least one matcher" in nothing.content.decode()
    made = client.post(
        url,
        {
            "rule": firing["rule"].pk,
            "matchers_text": "workload=pretrain",
            "starts_at": starts,
            "ends_at": ends,
            "comment": "Booked",
        },
    )
    assert made.status_code == 302
    silence = Silence.objects.get()
    assert silence.matchers == {"workload": "pretrain"} and silence.rule == firing["rule"]
    listed = client.get(reverse("alerts:silence_list")).content.decode()
    assert "Active" in listed and "Expire now" in listed and "workload=pretrain" in listed


@pytest.mark.django_db
def test_team_b_sees_none_of_team_as_rules_alerts_or_notifications(client, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    team_a, team_b = TeamFactory(name="Team A"), TeamFactory(name="Team B")
    pool = PoolFactory(name="A pool", team=team_a)
    overdue_drill_policy(pool, name="A training")
    rule = make_rule(
        "A drills", team=team_a, channel=make_channel("A mail", kind="email", team=team_a)
    )
    services.evaluate_and_deliver()
    alert = Alert.objects.get()
    assert alert.team == team_a
    client.force_login(UserFactory(teams=[team_b]))
    for name in ("alert_list", "rule_list", "channel_list", "delivery_list"):
        page = client.get(reverse(f"alerts:{name}")).content.decode()
        assert "A training" not in page and "A drills" not in page and "A mail" not in page, name
    assert client.get(alert.get_absolute_url()).status_code == 404
    assert client.get(rule.get_absolute_url()).status_code == 404
    client.force_login(UserFactory(teams=[team_a]))
    assert "A training" in client.get(reverse("alerts:alert_list")).content.decode()
    client.force_login(UserFactory(role="finance"))
    assert "A training" in client.get(reverse("alerts:delivery_list")).content.decode()


@pytest.mark.django_db
def test_the_overview_lists_the_firing_alerts(client, firing):
    client.force_login(UserFactory())
    response = client.get(reverse("dashboard:overview"))
    items = {item.kind: item for item in response.context["attention"]}
    assert items["alerts-firing"].sentence == "1 alert is firing (Overdue drills)."
    assert items["alerts-firing"].url == reverse("alerts:alert_list") + "?status=firing"
    assert items["alerts-firing"].severity == "danger"


@pytest.mark.django_db
def test_a_chinese_channel_and_a_chinese_reader_read_chinese(client, settings, mailoutbox):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    pool = PoolFactory(name="Drilled", slug="drilled")
    overdue_drill_policy(pool, name="Pretrain", slug="pretrain")
    channel = make_channel("Mail", kind="email", language="zh-hans")
    make_rule("Overdue drills", kind="drill_overdue", channel=channel)
    services.evaluate_and_deliver()
    (message,) = mailoutbox
    assert message.subject.startswith("[触发] Pretrain：恢复演练自 ")
    assert "规则：Overdue drills" in message.body
    alert = Alert.objects.get()
    assert alert.annotations["summary"].startswith("Pretrain: restore drill overdue since")
    client.force_login(UserFactory())
    page = client.get(alert.get_absolute_url(), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "Pretrain：恢复演练自" in page and "已发送" in page
