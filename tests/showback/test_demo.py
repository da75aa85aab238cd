"""The demo's teams: three teams own the pools, one pool stays shared, finance reads
every team, lead-serving Serving's; the budgets are sized from the demo's own spend, so
their forecasts read like a real month."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from apps.accounts.models import Team
from apps.pools.models import Pool
from apps.showback.models import Budget
from apps.showback.selectors import budget_burndowns

# The forecast (the Budgets page's: spent so far + mean daily spend of the last 7
# complete days × days left) as a share of each demo budget: the teams between 60 and
# 95 %, the shared pool's over its budget, by as much as a busy month would.
FORECAST_BANDS_PCT = {
    "team:research": (60, 95),
    "team:serving": (60, 95),
    "team:stores": (60, 95),
    "pool:mixed-a100-onprem": (100, 130),
}


def _key(budget) -> str:
    return f"team:{budget.team.slug}" if budget.team_id else f"pool:{budget.pool.slug}"


@pytest.mark.django_db
def test_the_demo_has_teams_and_a_shared_pool(client, role_groups):
    call_command("seed_demo", verbosity=0)
    assert set(Team.objects.values_list("slug", flat=True)) == {"research", "serving", "stores"}
    assert Pool.objects.get(slug="mixed-a100-onprem").team is None
    assert not Pool.objects.filter(team__isnull=True).exclude(slug="mixed-a100-onprem").exists()

    users = get_user_model().objects
    client.force_login(users.get(username="lead-serving"))
    pools = {row["slug"] for row in client.get(reverse("pool-list")).json()["results"]}
    assert "infer-h100-bj" in pools and "mixed-a100-onprem" in pools
    assert "train-h100-sh" not in pools
    rows = client.get(reverse("api-showback")).json()["rows"]
    assert [row["team"] for row in rows] == ["serving"]

    client.force_login(users.get(username="finance"))
    rows = client.get(reverse("api-showback")).json()["rows"]
    assert [row["team"] for row in rows] == ["research", "serving", "stores", None]

    # A second run changes no budget.
    amounts = list(Budget.objects.order_by("pk").values_list("amount_per_month", flat=True))
    call_command("seed_demo", verbosity=0)
    assert list(Budget.objects.order_by("pk").values_list("amount_per_month", flat=True)) == amounts


@pytest.mark.django_db
@pytest.mark.parametrize(
    "now",
    [
        # Early in February, the shortest month: three complete days to project from.
        datetime(2026, 2, 3, 9, 30, tzinfo=UTC),
        # Late in a 31-day month.
        datetime(2026, 3, 24, 17, 5, tzinfo=UTC),
    ],
    ids=["early-february", "late-march"],
)
def test_the_demo_budgets_forecast_a_believable_month(client, role_groups, now):
    call_command("seed_demo", verbosity=0, now=now)
    burndowns = budget_burndowns(Budget.objects.select_related("team", "pool"), now)
    forecasts = {_key(item.budget): item.figures.forecast_pct for item in burndowns}
    assert forecasts.keys() == FORECAST_BANDS_PCT.keys()
    for key, (low, high) in FORECAST_BANDS_PCT.items():
        assert low <= forecasts[key] <= high, (key, forecasts)
    # Whole dollars, three significant figures: budgets as people set them.
    for item in burndowns:
        amount = item.budget.amount_per_month
        assert amount == amount.quantize(1) and len(str(int(amount)).rstrip("0")) <= 3


@pytest.mark.django_db
def test_a_forecast_over_budget_is_marked_before_the_budget_is_spent(rf, make_user):
    """Spent 80 of 100 with a forecast of 114: the state is still "75 % used", the
    forecast says it goes over at this pace; once spent, the state itself says so."""
    from django.template.loader import render_to_string

    from apps.showback.burndown import Burndown
    from apps.showback.selectors import BudgetBurndown
    from tests.factories import PoolFactory

    def rendered(spent_usd, window_spent_usd):
        budget = Budget(pk=7, pool=PoolFactory.build(slug="p"), amount_per_month=100)
        figures = Burndown(
            amount=100.0,
            spent=spent_usd,
            window_spent=window_spent_usd,
            window_days=7,
            days_left=10.0,
        )
        request = rf.get("/")
        request.user = make_user("reader")
        return render_to_string(
            "showback/_burndown.html",
            {"burndowns": [BudgetBurndown(budget, figures)], "user": request.user},
            request=request,
        )

    on_course = rendered(80.0, 7 * 3.4)  # 80 + 3.4 × 10 = 114
    assert 'data-forecast-over="7"' in on_course and 'data-state="75"' in on_course
    assert "over budget at this pace" in on_course
    within = rendered(80.0, 7 * 1.0)  # 80 + 10 = 90
    assert "data-forecast-over" not in within
    spent = rendered(104.0, 7 * 2.0)
    assert 'data-state="over"' in spent and "data-forecast-over" not in spent
