"""Dollars-at-risk rules against a real HTTP receiver: a training workload with nothing
proven restorable fires once; a passing drill of its newest checkpoint brings the figure
under the rule's amount and the alert resolves once.

Hand computation (tests/backups/test_at_risk.py's workload): 8 GPUs × 2.50 USD × 10 h
since the first event = 200 USD, above the rule's 150; step 1500 proven 3 h ago:
8 × 2.50 × 3 = 60 USD, below it.
"""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from apps.alerts import evaluators
from apps.alerts.models import Alert
from apps.currencies.models import ExchangeRate
from apps.currencies.rates import month_of
from tests.alerts.factories import make_channel, make_rule
from tests.backups.test_at_risk import checkpoint, now, training  # noqa: F401 - fixtures
from tests.factories import TeamFactory


@pytest.mark.django_db
def test_dollars_at_risk_fire_once_and_resolve_once(training, receiver):  # noqa: F811
    channel = make_channel("Training hook", kind="webhook", url=receiver.url("/webhook"))
    make_rule("At risk above 150", kind="dollars_at_risk", channel=channel, threshold_usd=150)
    for _ in range(3):
        call_command("evaluate_alerts")
    firing = receiver.received("/webhook")
    assert len(firing) == 1 and firing[0]["status"] == "firing"
    alert = firing[0]["alerts"][0]
    assert alert["labels"]["workload"] == "risky-run" and alert["labels"]["pool"] == "risk-pool"
    assert "$200" in alert["annotations"]["summary"]
    assert Alert.objects.get().status == "firing"

    checkpoint(training, 1500, timezone.now() - timedelta(hours=3))
    call_command("evaluate_alerts")
    call_command("evaluate_alerts")
    received = receiver.received("/webhook")
    assert [body["status"] for body in received] == ["firing", "resolved"]
    assert Alert.objects.get().status == "resolved"


@pytest.mark.django_db
def test_a_rule_of_another_team_does_not_see_the_workload(training):  # noqa: F811
    owner, other = TeamFactory(name="Owners"), TeamFactory(name="Others")
    training.pool.team = owner
    training.pool.save(update_fields=["team"])
    mine = make_rule("Mine", kind="dollars_at_risk", team=owner, threshold_usd=150)
    theirs = make_rule("Theirs", kind="dollars_at_risk", team=other, threshold_usd=150)
    assert [s.labels["workload"] for s in evaluators.dollars_at_risk(mine, timezone.now())] == [
        "risky-run"
    ]
    assert evaluators.dollars_at_risk(theirs, timezone.now()) == []


@pytest.mark.django_db
@override_settings(REPORTING_CURRENCY="EUR")
def test_in_euros_the_amounts_are_the_dollars_at_the_months_rate(training, now):  # noqa: F811
    # 200 USD × 0.92 = 184.00 EUR at risk, 2.50 USD × 0.92 = 2.30 EUR per GPU-hour, above
    # the rule's 150 USD × 0.92 = 138.00 EUR.
    ExchangeRate.objects.create(month=month_of(now), currency="EUR", units_per_usd="0.92")
    rule = make_rule("At risk in euros", kind="dollars_at_risk", threshold_usd=150)
    (subject,) = evaluators.dollars_at_risk(rule, now)
    assert "€184.00" in str(subject.summary)
    assert "€2.30 per GPU-hour" in str(subject.description)
    assert "€138.00" in str(subject.description)
