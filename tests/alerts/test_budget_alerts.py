"""Budget rules against a real HTTP receiver: a team's budget crossing the rule's
percentage fires once; raised above what is spent, it resolves once. /metrics carries
the team's used ratio."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command

from apps.alerts.models import Alert
from apps.showback.burndown import month_start
from apps.showback.models import Budget
from apps.showback.selectors import showback
from tests.alerts.factories import make_channel, make_rule
from tests.alerts.test_metrics import TOKEN, samples
from tests.factories import PoolFactory, TeamFactory


@pytest.fixture
def spending_team(db, hour_end):
    """A team whose one pool has cost money since the month began (a cloud pool costs its
    price every paid hour, measured or not)."""
    team = TeamFactory(name="Serving", slug="serving")
    PoolFactory(
        name="Serving pool",
        slug="serving-pool",
        team=team,
        gpu_count=4,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
        in_service_from=month_start(hour_end.date()) - timedelta(days=40),
    )
    return team


def _spent_usd(team, hour_end) -> float:
    now = hour_end - timedelta(minutes=30)
    return showback(month_start(now.date()), now).teams[team.pk].cost_usd


@pytest.mark.django_db
def test_a_budget_crossing_the_threshold_fires_once_and_resolves_once(
    spending_team, hour_end, receiver, capsys
):
    spent = _spent_usd(spending_team, hour_end)
    assert spent > 0
    # 95 % used: over the rule's 90 %.
    budget = Budget.objects.create(
        team=spending_team, amount_per_month=Decimal(f"{float(spent) / 0.95:.2f}")
    )
    channel = make_channel("Finance hook", kind="webhook", url=receiver.url("/webhook"))
    make_rule("Budgets at 90", kind="budget", channel=channel, team=spending_team, threshold_pct=90)
    for _ in range(3):
        call_command("evaluate_alerts")
    firing = receiver.received("/webhook")
    assert len(firing) == 1 and firing[0]["status"] == "firing"
    labels = firing[0]["alerts"][0]["labels"]
    assert labels["team"] == "serving" and labels["budget"] == "team/serving"
    assert Alert.objects.get().status == "firing"

    budget.amount_per_month = Decimal(f"{spent * 4:.2f}")
    budget.save()
    call_command("evaluate_alerts")
    call_command("evaluate_alerts")
    received = receiver.received("/webhook")
    assert [body["status"] for body in received] == ["firing", "resolved"]
    assert Alert.objects.get().status == "resolved"


@pytest.mark.django_db
def test_the_team_budget_gauge_says_spent_over_budget(client, settings, spending_team, hour_end):
    settings.METRICS_TOKEN, settings.METRICS_ALLOWED_ADDRESSES = TOKEN, []
    Budget.objects.create(team=spending_team, amount_per_month=Decimal("100.00"))
    Budget.objects.create(  # a pool's budget: not a team's ratio
        pool=PoolFactory(slug="other"), amount_per_month=Decimal("100.00")
    )
    spent = _spent_usd(spending_team, hour_end)
    values = samples(
        client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).content.decode()
    )
    budget_series = {
        key: value for key, value in values.items() if key[0] == "gpufleet_team_budget_used_ratio"
    }
    assert budget_series == {
        ("gpufleet_team_budget_used_ratio", (("team", "serving"),)): pytest.approx(
            float(spent) / 100
        )
    }
