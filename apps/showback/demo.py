"""The demo's teams and budgets: Research trains, Serving answers requests, Stores runs
the edge; the mixed on-premises pool stays shared, its workloads split between the teams
by their labelled GPU-hours.

Budgets are sized from the demo's own spend when first seeded: each is its owner's run
rate per month (the mean daily spend of the last 7 complete days, as the Budgets page's
forecast takes it, × the days of an average month) divided by the share of it the budget
should forecast, so the forecasts read like a real month: the teams between 60 and 95 %
of their budgets, the shared pool's budget over. Then they are left as the user edits
them: a second run changes nothing.

Only the demo's objects are touched: the caller (``seed_demo``) passes the demo's teams,
pools, workloads, users and earlier budgets by their demo keys, and a team or pool that
already has a budget of the user's keeps it alone.
"""

from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from apps.currencies.codes import USD
from apps.showback import burndown
from apps.showback.models import Budget
from apps.showback.selectors import showback

TEAMS = (
    # key (slug), name, description, pools, workloads of the shared pool
    (
        "research",
        "Research",
        "Pre-training, fine-tuning and evaluation.",
        ("train-h100-sh", "train-burst-h100-us", "train-a100-eu"),
        ("mistral-7b-lora-support",),
    ),
    (
        "serving",
        "Serving",
        "The online APIs: chat, embeddings and search.",
        ("infer-l40s-hk", "infer-h100-bj", "infer-a10-eu"),
        ("search-rerank-online",),
    ),
    (
        "stores",
        "Stores",
        "The in-store assistants on the edge and the nightly batch jobs.",
        ("edge-t4",),
        ("nightly-batch-summaries",),
    ),
)
SHARED_POOL = "mixed-a100-onprem"
# Budget (its demo key: "team:<key>" or "pool:<key>") → the share of it an average
# month's spend comes to: teams between 60 and 95 %, the shared pool's over, with room
# for a month's length (February's forecasts read 8 % lower, a 31-day month's 2 % higher).
BUDGET_FORECAST_SHARES = {
    "team:research": Decimal("0.85"),
    "team:serving": Decimal("0.76"),
    "team:stores": Decimal("0.70"),
    f"pool:{SHARED_POOL}": Decimal("1.15"),
}
BUDGET_NOTE = "Demo budget"
DAYS_PER_MONTH = Decimal("365.25") / 12
# Demo users in every team read the whole fleet as before teams; lead-serving only
# Serving's and the shared objects.
EVERY_TEAM_USERS = ("lead", "ops", "procurement")
TEAM_USERS = {"lead-serving": ("serving",)}


def seed_showback_demo(*, teams, pools, workloads, users, budgets, now) -> dict[str, Budget]:
    """Give the demo's ``pools`` and shared-pool ``workloads`` to the demo's ``teams``,
    the demo ``users`` their teams, and size the budgets the demo has not made yet
    (``budgets``: the demo's earlier ones). Every argument maps demo keys to the demo's
    objects. Returns the budgets made, by demo key."""
    for key, _name, _description, pool_keys, workload_keys in TEAMS:
        team = teams[key]
        _give(pools, pool_keys, team)
        _give(workloads, workload_keys, team)
    if SHARED_POOL in pools:
        _give(pools, (SHARED_POOL,), None)
    for username in EVERY_TEAM_USERS:
        if username in users:
            users[username].teams.add(*teams.values())
    for username, keys in TEAM_USERS.items():
        if username in users:
            users[username].teams.set([teams[key] for key in keys])
    return _seed_budgets(teams, pools, budgets, now)


def _give(objects, keys, team) -> None:
    """Set the team of the demo's ``objects`` under ``keys`` (None: shared)."""
    chosen = [objects[key] for key in keys if key in objects]
    if not chosen:
        return
    team_id = team.pk if team is not None else None
    # update(): no change-history entry for the demo's own bookkeeping.
    type(chosen[0]).objects.filter(pk__in=[item.pk for item in chosen]).exclude(
        team_id=team_id
    ).update(team_id=team_id)
    for item in chosen:
        item.team_id = team_id


def _seed_budgets(teams, pools, budgets, now) -> dict[str, Budget]:
    missing = {}
    for key in BUDGET_FORECAST_SHARES:
        kind, owner_key = key.split(":", 1)
        owner = (teams if kind == "team" else pools).get(owner_key)
        if owner is None or key in budgets:
            continue
        values = {kind: owner}
        # A budget of the user's on a demo team or pool stays the only one.
        if Budget.objects.filter(**values).exists():
            continue
        # Sized from the showback's dollars (``expected_month_usd``): stated in USD, so
        # an installation reporting in another currency converts them.
        missing[key] = Budget(
            amount_per_month=Decimal("1"), currency=USD, note=BUDGET_NOTE, **values
        )
    size_budgets(missing, now)
    return missing


def size_budgets(budgets: dict[str, Budget], now) -> None:
    """Set and save the amount of each of the demo's ``budgets`` (demo key → budget) from
    its owner's run rate and the share of it the budget should forecast."""
    if not budgets:
        return
    expected = expected_month_usd(list(budgets.values()), now)
    for key, budget in budgets.items():
        amount = expected[id(budget)] / BUDGET_FORECAST_SHARES[key]
        budget.amount_per_month = max(Decimal("1.00"), _round_figure(amount))
        budget.save()


def _round_figure(amount: Decimal) -> Decimal:
    """Three significant figures, as people set budgets ($412,000, not $411,873.52)."""
    if amount <= 0:
        return Decimal("0")
    exponent = amount.adjusted() - 2
    return amount.quantize(Decimal(1).scaleb(exponent), ROUND_HALF_UP).quantize(Decimal("0.01"))


def expected_month_usd(budgets, now) -> dict[int, Decimal]:
    """id(budget) → its owner's run rate per month: the mean daily spend of the 7 complete
    UTC days before ``now`` (the Budgets page's forecast window, here a full week even in
    the month's first days) × the days of an average month. Its figures are the page's
    (``showback``); the demo's usage is steady, so a month's forecast comes to this run
    rate within the month's length (28 to 31 days against 30.44)."""
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    week = showback(today - timedelta(days=burndown.FORECAST_DAYS), today)
    return {
        id(budget): _spent(week, budget) / burndown.FORECAST_DAYS * DAYS_PER_MONTH
        for budget in budgets
    }


def _spent(figures, budget) -> Decimal:
    if budget.team_id is not None:
        spend = figures.teams.get(budget.team_id)
        return spend.cost_usd if spend is not None else Decimal(0)
    return figures.pool_cost_usd.get(budget.pool_id, Decimal(0))
