"""The evaluation's bookkeeping: an alert per breaching subject from the evaluation that
sees it to the one that no longer does, one delivery per alert, channel and event, and
what holds a notification back (a silence, a channel turned off), without a receiver:
the channels here are email channels on Django's in-memory backend."""

import threading
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.alerts import registry, services
from apps.alerts.models import Alert, Delivery, rule_errors
from tests.alerts.conftest import overdue_drill_policy, record_passed_drill
from tests.alerts.factories import make_alert, make_channel, make_rule, make_silence
from tests.factories import PoolFactory, TeamFactory, WorkloadFactory


@pytest.fixture
def overdue(db, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    pool = PoolFactory(name="Drilled", slug="drilled")
    policy = overdue_drill_policy(pool, name="Pretrain", slug="pretrain")
    channel = make_channel("Mail", kind="email")
    rule = make_rule("Overdue drills", kind="drill_overdue", channel=channel)
    return {"pool": pool, "policy": policy, "channel": channel, "rule": rule}


def _deliveries(**filters):
    return sorted(
        Delivery.objects.filter(**filters).values_list("event", "status"), key=lambda row: row
    )


@pytest.mark.django_db
def test_an_alert_fires_once_stays_quiet_and_resolves_once(overdue, mailoutbox):
    first, _ = services.evaluate_and_deliver()
    assert (first.fired, first.resolved) == (1, 0)
    for _ in range(3):
        again, _ = services.evaluate_and_deliver()
        assert (again.fired, again.resolved) == (0, 0)
    assert Alert.objects.count() == 1 and len(mailoutbox) == 1
    record_passed_drill(overdue["policy"])
    resolved, _ = services.evaluate_and_deliver()
    assert (resolved.fired, resolved.resolved) == (0, 1)
    assert _deliveries() == [("firing", "sent"), ("resolved", "sent")]
    assert len(mailoutbox) == 2
    alert = Alert.objects.get()
    assert alert.status == "resolved" and alert.ends_at > alert.starts_at
    # It breaches again later: a new alert, told again.
    overdue["policy"].drills.all().delete()
    from apps.backups.services import refresh_drill_schedules

    refresh_drill_schedules()
    later = timezone.now() + timedelta(days=60)  # the new schedule's drill is due by then
    services.evaluate_rules(later)
    services.deliver_due(later)
    assert Alert.objects.filter(status="firing").count() == 1
    assert Alert.objects.count() == 2 and len(mailoutbox) == 3


@pytest.mark.django_db
def test_a_repeated_delivery_is_refused_by_the_database(overdue):
    services.evaluate_rules()
    delivery = Delivery.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        Delivery.objects.create(alert=delivery.alert, channel=delivery.channel, event="firing")
    with pytest.raises(IntegrityError), transaction.atomic():
        Alert.objects.create(
            rule=overdue["rule"],
            rule_name="x",
            kind="drill_overdue",
            fingerprint=delivery.alert.fingerprint,
            starts_at=timezone.now(),
        )


@pytest.mark.django_db(transaction=True)
def test_two_evaluations_at_once_raise_one_alert(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    pool = PoolFactory(name="Drilled", slug="drilled")
    overdue_drill_policy(pool)
    make_rule("Overdue drills", kind="drill_overdue", channel=make_channel("Mail", kind="email"))
    barrier, errors = threading.Barrier(2), []

    def evaluate():
        try:
            barrier.wait(timeout=10)
            services.evaluate_rules()
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=evaluate) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    assert Alert.objects.count() == 1 and Delivery.objects.count() == 1


@pytest.mark.django_db
def test_a_silence_holds_back_the_firing_and_its_resolved_notification(overdue, mailoutbox):
    silence = make_silence(matchers={"workload": "pretrain"}, comment="Drill booked Friday")
    services.evaluate_and_deliver()
    delivery = Delivery.objects.get()
    assert delivery.status == "silenced" and not mailoutbox
    assert f"silence #{silence.pk}" in delivery.last_error and "Drill booked Friday" in (
        delivery.last_error
    )
    record_passed_drill(overdue["policy"])
    services.evaluate_and_deliver()
    assert _deliveries() == [("firing", "silenced"), ("resolved", "silenced")]
    assert not mailoutbox


@pytest.mark.django_db
def test_a_silence_made_while_a_notification_waits_holds_it_back(overdue, mailoutbox):
    services.evaluate_rules()
    make_silence(rule=overdue["rule"])
    services.deliver_due()
    assert _deliveries() == [("firing", "silenced")] and not mailoutbox


@pytest.mark.django_db
def test_an_expired_or_future_silence_or_another_teams_holds_nothing_back(overdue, mailoutbox):
    now = timezone.now()
    make_silence(
        matchers={"workload": "pretrain"},
        starts_at=now - timedelta(hours=3),
        ends_at=now - timedelta(hours=1),
    )
    make_silence(
        matchers={"workload": "pretrain"},
        starts_at=now + timedelta(hours=1),
        ends_at=now + timedelta(hours=2),
    )
    make_silence(matchers={"workload": "pretrain"}, team=TeamFactory())  # a fleet-wide rule's alert
    make_silence(matchers={"workload": "another"})
    services.evaluate_and_deliver()
    assert _deliveries() == [("firing", "sent")] and len(mailoutbox) == 1


@pytest.mark.django_db
def test_an_alert_told_firing_is_told_resolved_even_when_silenced_since(overdue, mailoutbox):
    services.evaluate_and_deliver()
    make_silence(rule=overdue["rule"])
    record_passed_drill(overdue["policy"])
    services.evaluate_and_deliver()
    assert _deliveries() == [("firing", "sent"), ("resolved", "sent")]


@pytest.mark.django_db
def test_a_channel_turned_off_records_its_notifications_unsent(overdue, mailoutbox):
    overdue["channel"].enabled = False
    overdue["channel"].save()
    services.evaluate_and_deliver()
    delivery = Delivery.objects.get()
    assert delivery.status == "suppressed" and "turned off" in delivery.last_error
    assert not mailoutbox
    overdue["channel"].enabled = True
    overdue["channel"].save()
    services.send_again(delivery)  # turned on again, the notification can go out
    services.deliver_due()
    assert _deliveries() == [("firing", "sent")] and len(mailoutbox) == 1


@pytest.mark.django_db
def test_a_disabled_or_deleted_rule_resolves_its_alerts_and_says_so(overdue, mailoutbox):
    services.evaluate_and_deliver()
    overdue["rule"].enabled = False
    overdue["rule"].save()
    summary, _ = services.evaluate_and_deliver()
    assert (summary.rules, summary.resolved) == (0, 1)
    assert _deliveries() == [("firing", "sent"), ("resolved", "sent")]

    other = make_rule("Overdue again", kind="drill_overdue", channel=overdue["channel"])
    services.evaluate_and_deliver()
    assert services.delete_rule(other) == 1
    services.deliver_due()
    kept = Alert.objects.get(rule_name="Overdue again")
    assert kept.rule is None and kept.status == "resolved"
    assert sorted(kept.deliveries.values_list("event", "status")) == [
        ("firing", "sent"),
        ("resolved", "sent"),
    ]


@pytest.mark.django_db
def test_a_rule_that_fails_keeps_its_alerts_and_records_why(overdue, monkeypatch):
    services.evaluate_rules()

    def broken(rule, now):
        raise ValueError("the figures are not there")

    evaluator = registry.evaluator_for("drill_overdue")
    monkeypatch.setitem(
        registry._EVALUATORS,
        "drill_overdue",
        registry.Evaluator("drill_overdue", broken, evaluator.thresholds, evaluator.severity),
    )
    summary = services.evaluate_rules()
    assert summary.failed_rules == ["overdue-drills"]
    overdue["rule"].refresh_from_db()
    assert "ValueError: the figures are not there" in overdue["rule"].last_error
    assert Alert.objects.get().status == "firing"


@pytest.mark.django_db
def test_renaming_a_rule_keeps_its_alerts():
    pool = PoolFactory()
    overdue_drill_policy(pool)
    rule = make_rule("Old name", kind="drill_overdue", channel=make_channel(kind="email"))
    services.evaluate_rules()
    rule.name = "New name"
    rule.save()
    summary = services.evaluate_rules()
    assert (summary.fired, summary.resolved) == (0, 0)


@pytest.mark.parametrize(
    "attempts, seconds", [(1, 30), (2, 60), (3, 120), (7, 1920), (8, 3600), (20, 3600)]
)
def test_retries_back_off_from_30_s_doubling_to_an_hour(settings, attempts, seconds):
    settings.ALERT_RETRY_BASE_SECONDS, settings.ALERT_RETRY_MAX_SECONDS = 30, 3600
    assert services.retry_delay(attempts) == timedelta(seconds=min(3600, 30 * 2 ** (attempts - 1)))
    assert services.retry_delay(attempts).total_seconds() == seconds


@pytest.mark.django_db
def test_a_delivery_is_given_up_after_a_day(overdue, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 9  # nothing listens (discard)
    services.evaluate_and_deliver()
    delivery = Delivery.objects.get()
    assert delivery.status == "retrying" and "could not send through the mail server" in (
        delivery.last_error
    )
    a_day_on = delivery.created_at + timedelta(hours=24, minutes=1)
    services.deliver_due(now=a_day_on)
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == 2
    assert delivery.last_error.startswith("Gave up after 2 attempts over 24.0 h")


@pytest.mark.django_db
def test_thresholds_the_kind_does_not_use_are_cleared():
    rule = make_rule(kind="idle_cost", threshold_usd=100, window_hours=24, stale_minutes=5)
    assert rule.stale_minutes is None and rule.window_hours == 24
    rule.kind = "drill_overdue"
    services.save_rule(rule)
    rule.refresh_from_db()
    assert (rule.threshold_usd, rule.window_hours) == (None, None)


@pytest.mark.django_db
def test_rule_errors_name_the_field_and_what_is_expected():
    team_a, team_b = TeamFactory(name="Team A"), TeamFactory(name="Team B")
    pool_a = PoolFactory(team=team_a)
    base = {"thresholds": {}, "channel": None, "team": None, "pool": None, "workload": None}
    assert set(rule_errors(kind="budget", **base)) == {"threshold_pct"}
    errors = rule_errors(kind="idle_cost", **base)
    assert set(errors) == {"threshold_usd", "window_hours"}
    assert "needs an amount in USD" in errors["threshold_usd"]
    channel_a = make_channel(team=team_a)
    assert "channel" in rule_errors(
        kind="drill_overdue", **{**base, "channel": channel_a, "team": team_b}
    )
    assert "pool" in rule_errors(kind="drill_overdue", **{**base, "pool": pool_a, "team": team_b})
    assert rule_errors(kind="drill_overdue", **{**base, "pool": pool_a, "team": team_a}) == {}
    workload = WorkloadFactory(pool=pool_a)
    other_pool = PoolFactory()
    assert (
        "runs on the pool"
        in rule_errors(kind="drill_overdue", **{**base, "pool": other_pool, "workload": workload})[
            "workload"
        ]
    )


@pytest.mark.django_db
def test_a_silence_matches_its_rule_its_labels_and_its_team():
    team = TeamFactory()
    pool = PoolFactory()
    rule = make_rule(team=team)
    alert = make_alert(rule, pool)
    assert make_silence(rule=rule).matches(alert, team.pk)
    assert make_silence(matchers={"pool": pool.slug}, team=team).matches(alert, team.pk)
    assert make_silence(matchers={"pool": pool.slug}).matches(alert, team.pk)  # fleet-wide
    assert not make_silence(matchers={"pool": "other"}).matches(alert, team.pk)
    assert not make_silence(matchers={"pool": pool.slug}, team=TeamFactory()).matches(
        alert, team.pk
    )
