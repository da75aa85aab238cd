"""Showback: each team's spend over a span, read from the cost report so the figures
equal the Reports page's.

The split follows the cost report grouped by workload (apps/reports/cost/split.py: pod labels
first, then each running workload's declared GPUs ÷ the pool's GPUs, hour by hour):

- a workload's share goes to its team, or else its pool's team (none: unattributed);
- a pool's cost less its workloads' shares (its unallocated capacity, and the whole of a
  pool without workloads) goes to the pool's team, counted apart as that team's
  ``unallocated_usd``; a shared pool's (no team) stays unattributed.

So the teams plus the unattributed rest add up to the fleet's cost, and each team's
spend is its workloads' shares plus the unallocated capacity of its own pools.
Budgets and the audit bundle read these figures.

Every amount is kept twice: in US dollars (the ``_usd`` figures) and in the reporting
currency (``REPORTING_CURRENCY``; the figures without a suffix), each read from the
cost report's ``cost_usd`` and ``cost`` of the same rows, so the showback's totals in
either currency are the cost report's. A closed month stores both; one closed before
the reporting currency figures were stored (or in another reporting currency) has its
dollars converted at the rate the month closed with, the one rate its figures use
(apps/reports/cost/rates.py: within a month, converting is multiplying by a constant).
"""

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from django.db.models import Count

from apps.accounts.models import Team
from apps.core.money import as_decimal
from apps.currencies.codes import USD, reporting_currency
from apps.pools.hours import floor_hour
from apps.pools.models import Pool, Workload
from apps.reports.cache import cached
from apps.reports.cost import periods
from apps.reports.cost.rates import conversion_for, missing_text
from apps.reports.cost.report import cost_report
from apps.reports.cost.rows import CostRow
from apps.reports.span import Span
from apps.showback import burndown
from apps.showback.models import Budget


@dataclass
class TeamSpend:
    team: Team | None  # None: unattributed
    cost_usd: Decimal = Decimal(0)
    # Of cost_usd, the unallocated capacity of the team's own pools (what none of their
    # running workloads holds).
    unallocated_usd: Decimal = Decimal(0)
    # pool id → USD the team's share of that pool came to
    by_pool_usd: dict[int, Decimal] = field(default_factory=dict)

    # closed month ("2026-10") → what its figures moved by since it closed, booked here
    adjustments_usd: dict[str, Decimal] = field(default_factory=dict)
    # The same figures in the reporting currency.
    cost: Decimal = Decimal(0)
    unallocated: Decimal = Decimal(0)
    by_pool: dict[int, Decimal] = field(default_factory=dict)
    adjustments: dict[str, Decimal] = field(default_factory=dict)

    def add(self, pool_id: int, usd: Decimal, amount: Decimal | None = None):
        """Add a share of a pool: ``usd`` in US dollars, ``amount`` in the reporting
        currency (the dollars when not given: a reporting currency of USD)."""
        amount = usd if amount is None else amount
        self.cost_usd += usd
        self.by_pool_usd[pool_id] = self.by_pool_usd.get(pool_id, Decimal(0)) + usd
        self.cost += amount
        self.by_pool[pool_id] = self.by_pool.get(pool_id, Decimal(0)) + amount

    def add_spend(self, other: "TeamSpend"):
        for pool_id, usd in other.by_pool_usd.items():
            self.add(pool_id, usd, other.by_pool.get(pool_id, Decimal(0)))

    @property
    def charged_usd(self):
        """The spend with the adjustments booked in the span: what the span charges."""
        return self.cost_usd + sum(self.adjustments_usd.values(), Decimal(0))

    @property
    def charged(self):
        """``charged_usd`` in the reporting currency."""
        return self.cost + sum(self.adjustments.values(), Decimal(0))


@dataclass
class Showback:
    start: datetime
    end: datetime
    teams: dict[int, TeamSpend]  # every team, spending or not
    unattributed: TeamSpend
    pools: dict[int, Pool]
    pool_cost_usd: dict[int, Decimal]
    # pool id → its cost in the reporting currency
    pool_cost: dict[int, Decimal] = field(default_factory=dict)
    # workload slug → its row of the cost report grouped by workload, which the split used
    workload_rows: dict[str, CostRow] = field(default_factory=dict)
    # (currency, month) of the exchange rates missing to convert some pools' costs: those
    # amounts are left out, so the figures are incomplete (apps/reports/cost/rates.py).
    missing_rates: set = field(default_factory=set)

    @property
    def missing_rates_sorted(self) -> list[tuple]:
        return sorted(self.missing_rates, key=lambda item: (item[1], item[0]))

    @property
    def total_usd(self) -> Decimal:
        return sum((spend.charged_usd for spend in self.teams.values()), Decimal(0)) + (
            self.unattributed.charged_usd
        )

    @property
    def total(self) -> Decimal:
        """The fleet's cost in the reporting currency (``currency``)."""
        return sum((spend.charged for spend in self.teams.values()), Decimal(0)) + (
            self.unattributed.charged
        )

    @property
    def currency(self) -> str:
        return reporting_currency()

    # The names the cost report's total row gives them (currencies/_currency_summary.html).
    cost = total
    cost_usd = total_usd

    def spend_of(self, team_id: int | None) -> TeamSpend:
        """The team's spend; a team deleted since a month froze it (it owned nothing
        left, or it could not have been deleted) counts as unattributed."""
        if team_id is None:
            return self.unattributed
        if team_id not in self.teams:
            team = Team.objects.filter(pk=team_id).first()
            if team is None:
                return self.unattributed
            self.teams[team_id] = TeamSpend(team)
        return self.teams[team_id]

    def add(self, other: "Showback") -> None:
        """Add ``other``'s spend (another span's) to this one's."""
        for team_id, spend in other.teams.items():
            self.spend_of(team_id).add_spend(spend)
        self.unattributed.add_spend(other.unattributed)
        for pool_id, usd in other.pool_cost_usd.items():
            self.pool_cost_usd[pool_id] = self.pool_cost_usd.get(pool_id, Decimal(0)) + usd
        for pool_id, amount in other.pool_cost.items():
            self.pool_cost[pool_id] = self.pool_cost.get(pool_id, Decimal(0)) + amount
        self.missing_rates |= other.missing_rates
        for key, row in other.workload_rows.items():
            if key in self.workload_rows:
                periods.add_figures(self.workload_rows[key], row, over_time=True)
            else:
                self.workload_rows[key] = row


def showback(start: datetime, end: datetime, *, cluster: str | None = None) -> Showback:
    """Every team's spend over [start, end), and the unattributed rest: the closed months
    the span covers whole as they were frozen, the rest live, and the adjustments booked
    in the span (apps/reports/cost/periods.py). ``cluster``: a cluster's slug, the spend
    on its pools only (a closed month's pools counted in the cluster they are in now)."""
    closed = periods.closed_months()
    pieces = periods.split_span(start, end, closed)
    if len(pieces) == 1 and pieces[0][2] is None and not closed:
        return live_showback(start, end, cluster=cluster)
    result = Showback(
        start,
        end,
        {team.id: TeamSpend(team) for team in Team.objects.order_by("name")},
        TeamSpend(None),
        {pool.id: pool for pool in _pools_of(cluster)},
        {},
    )
    for piece_start, piece_end, month in pieces:
        if month is None:
            result.add(live_showback(piece_start, piece_end, cluster=cluster))
        else:
            result.add(frozen_showback(month, result.pools, cluster=cluster))
    for month in periods.adjusted_months(start, end, closed):
        month_begin, month_end = periods.month_bounds(month.month)
        now = live_showback(month_begin, month_end, cluster=cluster)
        then = frozen_showback(month, result.pools, cluster=cluster)
        label = periods.month_label(month)
        for team_id in set(now.teams) | set(then.teams) | {None}:
            now_spend, then_spend = now.spend_of(team_id), then.spend_of(team_id)
            usd = now_spend.cost_usd - then_spend.cost_usd
            amount = now_spend.cost - then_spend.cost
            if abs(usd) >= periods.NOISE or abs(amount) >= periods.NOISE:
                result.spend_of(team_id).adjustments_usd[label] = usd
                result.spend_of(team_id).adjustments[label] = amount
        result.missing_rates |= now.missing_rates
    return result


def _pools_of(cluster: str | None):
    pools = Pool.objects.select_related("team")
    return pools.filter(cluster__slug=cluster) if cluster else pools


def frozen_showback(month, pools: dict, *, cluster: str | None = None) -> Showback:
    """``month``'s showback as it was frozen when it closed (apps/showback/periods.py);
    with ``cluster``, of the pools in ``pools`` only (those of that cluster)."""
    start, end = periods.month_bounds(month.month)

    def kept(pool_id) -> bool:
        return not cluster or int(pool_id) in pools

    stored = month.showback or {}
    result = Showback(start, end, {}, TeamSpend(None), pools, {})
    converted = _frozen_conversion(month, stored)
    if converted.missing is not None:
        result.missing_rates.add(converted.missing)
    result.missing_rates |= stored_missing_rates(stored)

    def spend(data, team):
        spent = TeamSpend(team)
        amounts = data.get("by_pool", {}) if converted.stored else {}
        for pool_id, usd in data.get("by_pool_usd", {}).items():
            if not kept(pool_id):
                continue
            usd = as_decimal(usd)
            amount = as_decimal(amounts[pool_id]) if pool_id in amounts else converted.of(usd)
            spent.add(int(pool_id), usd, amount)
        return spent

    teams = Team.objects.in_bulk([int(team_id) for team_id in stored.get("teams", {})])
    result.unattributed = spend(stored.get("unattributed", {}), None)
    for team_id, data in stored.get("teams", {}).items():
        team = teams.get(int(team_id))
        if team is None:
            result.unattributed.add_spend(spend(data, None))
        else:
            result.teams[team.id] = spend(data, team)
    result.pool_cost_usd = {
        int(pool_id): as_decimal(usd)
        for pool_id, usd in stored.get("pool_cost_usd", {}).items()
        if kept(pool_id)
    }
    stored_costs = stored.get("pool_cost", {}) if converted.stored else {}
    result.pool_cost = {
        int(pool_id): as_decimal(stored_costs[pool_id])
        if pool_id in stored_costs
        else converted.of(as_decimal(usd))
        for pool_id, usd in stored.get("pool_cost_usd", {}).items()
        if kept(pool_id)
    }
    result.workload_rows = {
        row.key: row for row in periods.frozen_cost_report(month, "workload", cluster_slug=cluster)
    }
    return result


@dataclass(frozen=True)
class _FrozenConversion:
    """How a closed month's stored dollars read in today's reporting currency: the
    stored amounts (``stored``: the month closed in this reporting currency), or the
    dollars times the reporting currency's rate the month closed with (``rate``; None
    with ``missing`` when it closed without one: those amounts are left out)."""

    stored: bool
    rate: Decimal | None
    missing: tuple | None = None

    def of(self, usd: Decimal) -> Decimal:
        return Decimal(0) if self.rate is None else usd * self.rate


def _frozen_conversion(month, stored: dict) -> _FrozenConversion:
    currency = reporting_currency()
    if stored.get("currency") == currency:
        return _FrozenConversion(True, None)
    if currency == USD:
        return _FrozenConversion(False, Decimal(1))
    text = (month.exchange_rates or {}).get(currency)
    if text is None:
        return _FrozenConversion(False, None, (currency, month.month))
    return _FrozenConversion(False, Decimal(text))


def stored_missing_rates(stored: dict) -> set:
    """The (currency, month) rates a closed month's stored showback missed."""
    return {
        (item["currency"], date.fromisoformat(f"{item['month']}-01"))
        for item in stored.get("missing_rates", [])
    }


def frozen_total(month) -> tuple[Decimal, set]:
    """A closed month's fleet cost in the reporting currency, from what it stored (no
    query), and the (currency, month) of the rate missing to read it, if any."""
    stored = month.showback or {}
    converted = _frozen_conversion(month, stored)
    if converted.stored:
        parts = [*stored.get("teams", {}).values(), stored.get("unattributed", {})]
        total = sum((as_decimal(part.get("cost", "0")) for part in parts), Decimal(0))
        return total, stored_missing_rates(stored)
    missing = {converted.missing} if converted.missing is not None else set()
    return converted.of(as_decimal(month.cost_usd)), missing


def showback_as_data(figures: Showback) -> dict:
    """What a closed month stores of its showback: decimal strings, in US dollars and in
    the reporting currency it closes in (``currency``), and the rates it missed."""

    def spend(spent: TeamSpend) -> dict:
        return {
            "cost_usd": str(spent.cost_usd),
            "by_pool_usd": {str(pool_id): str(usd) for pool_id, usd in spent.by_pool_usd.items()},
            "cost": str(spent.cost),
            "by_pool": {str(pool_id): str(amount) for pool_id, amount in spent.by_pool.items()},
        }

    return {
        "teams": {str(team_id): spend(spent) for team_id, spent in figures.teams.items()},
        "unattributed": spend(figures.unattributed),
        "pool_cost_usd": {str(pool_id): str(usd) for pool_id, usd in figures.pool_cost_usd.items()},
        "pool_cost": {str(pool_id): str(amount) for pool_id, amount in figures.pool_cost.items()},
        "currency": figures.currency,
        "missing_rates": missing_text(figures.missing_rates),
    }


def live_showback(start: datetime, end: datetime, *, cluster: str | None = None) -> Showback:
    """Every team's spend over [start, end) as the data says today, and the unattributed
    rest (two cost reports); with ``cluster`` (a slug), the spend on its pools only."""
    pool_rows = {row.key: row for row in cost_report(start, end, "pool", cluster_slug=cluster)}
    workload_rows = {
        row.key: row for row in cost_report(start, end, "workload", cluster_slug=cluster)
    }
    pools = {pool.id: pool for pool in _pools_of(cluster)}
    teams = {team.id: TeamSpend(team) for team in Team.objects.order_by("name")}
    unattributed = TeamSpend(None)

    def spend_of(team_id):
        return teams[team_id] if team_id is not None else unattributed

    pool_cost_usd, pool_cost = {}, {}
    rest_usd, rest = {}, {}
    for pool in pools.values():
        row = pool_rows.get(pool.slug)
        pool_cost_usd[pool.id] = row.cost_usd if row else Decimal(0)
        pool_cost[pool.id] = row.cost if row else Decimal(0)
        rest_usd[pool.id] = pool_cost_usd[pool.id]
        rest[pool.id] = pool_cost[pool.id]
    workloads = Workload.objects.filter(pool_id__in=list(pools))
    for workload in workloads.only("slug", "team_id", "pool_id").order_by("pk"):
        row = workload_rows.get(workload.slug)
        if row is None or not (row.cost_usd or row.cost):
            continue
        team_id = workload.team_id or pools[workload.pool_id].team_id
        spend_of(team_id).add(workload.pool_id, row.cost_usd, row.cost)
        rest_usd[workload.pool_id] -= row.cost_usd
        rest[workload.pool_id] -= row.cost
    for pool_id, usd in rest_usd.items():
        if usd or rest[pool_id]:
            spend = spend_of(pools[pool_id].team_id)
            spend.add(pool_id, usd, rest[pool_id])
            spend.unallocated_usd += usd
            spend.unallocated += rest[pool_id]
    missing = set()
    for row in pool_rows.values():
        missing |= row.missing_rates
    return Showback(
        start, end, teams, unattributed, pools, pool_cost_usd, pool_cost, workload_rows, missing
    )


def teams_in_scope(scope):
    """The teams a user reads: every team for the fleet-wide, else their own."""
    teams = Team.objects.all()
    if not scope.everything:
        teams = teams.filter(pk__in=sorted(scope.team_ids))
    return teams


def team_list_rows(scope):
    """Teams in scope with their member, pool and workload counts (one query)."""
    return (
        teams_in_scope(scope)
        .annotate(
            member_count=Count("members", distinct=True),
            pool_count=Count("pools", distinct=True),
            workload_count=Count("workloads", distinct=True),
        )
        .order_by("name")
    )


# --- budgets --------------------------------------------------------------------------


@dataclass
class BudgetBurndown:
    budget: Budget
    figures: burndown.Burndown  # in the reporting currency
    figures_usd: burndown.Burndown | None = None  # the same in US dollars (the API's _usd)


def budget_burndowns(budgets, now: datetime, *, figures=showback) -> list[BudgetBurndown]:
    """Each budget's burn-down for ``now``'s month, in the reporting currency: its team's
    showback spend or its pool's cost, month to date and over the forecast window (two
    showbacks, four cost reports), against its amount converted from its own currency
    at the month's rate (a query for the rates when any currency is not USD), and the
    same in US dollars (``figures_usd``, the API's ``_usd`` fields).
    ``figures(start, end)`` gives a span's showback (``cached_showback`` to read it from
    the cache)."""
    budgets = list(budgets)
    if not budgets:
        return []
    start = burndown.month_start(now.date())
    month = figures(start, now)
    window = burndown.forecast_window(now)
    trailing = figures(window.start, window.end) if window.days else None
    days_left = burndown.days_left(now)
    spend_missing = month.missing_rates | (trailing.missing_rates if trailing else set())
    currency = reporting_currency()
    amounts = budget_amounts(budgets, start, currency)
    amounts_usd = amounts if currency == USD else budget_amounts(budgets, start, USD)
    result = []
    for budget in budgets:
        figures_in = {}
        for target, converted, spent in (
            (currency, amounts, _spent),
            (USD, amounts_usd, _spent_usd),
        ):
            if target in figures_in:
                continue  # the reporting currency is USD
            amount, missing = converted[budget.pk]
            figures_in[target] = burndown.Burndown(
                amount=amount,
                spent=spent(month, budget),
                window_spent=spent(trailing, budget) if trailing else Decimal(0),
                window_days=window.days,
                days_left=days_left,
                currency=target,
                missing_rates=frozenset(missing | spend_missing),
            )
        result.append(BudgetBurndown(budget, figures_in[currency], figures_in[USD]))
    return result


def budget_amounts(budgets, month_start: datetime, target: str | None = None) -> dict:
    """budget id → (its amount in ``target`` (default: the reporting currency) at the
    rates of the month that starts at ``month_start``, or None; the (currency, month) of
    the rates missing)."""
    target = target or reporting_currency()
    conversion = conversion_for(
        Span(month_start, burndown.next_month_start(month_start.date())),
        {budget.currency for budget in budgets} | {target},
    )
    amounts = {}
    for budget in budgets:
        amount, missing = as_decimal(budget.amount_per_month), set()
        if conversion is not None:
            amount = conversion.convert(
                amount, budget.currency, month_start.date(), target, missing
            )
        amounts[budget.pk] = (amount, missing)
    return amounts


def _spent(figures: Showback, budget: Budget) -> Decimal:
    """The budget's spend in the reporting currency."""
    if budget.team_id:
        if budget.team_id in figures.teams:
            return figures.teams[budget.team_id].charged
        return Decimal(0)
    return figures.pool_cost.get(budget.pool_id, Decimal(0))


def _spent_usd(figures: Showback, budget: Budget) -> Decimal:
    """The budget's spend in US dollars."""
    if budget.team_id:
        if budget.team_id in figures.teams:
            return figures.teams[budget.team_id].charged_usd
        return Decimal(0)
    return figures.pool_cost_usd.get(budget.pool_id, Decimal(0))


def budgets_in_scope(scope):
    return Budget.objects.in_scope(scope).select_related("team", "pool__team")


def cached_showback(start: datetime, end: datetime, *, cluster: str | None = None) -> Showback:
    """``showback(start, end)`` from the reports cache (apps/reports/cache.py): kept until
    a rollup, a pool or a workload changes, and for the current hour at most, so a span
    that ends now is computed once an hour, not at every visit. The figures are every
    team's: who may read which is decided by the caller."""
    hour = floor_hour(end)
    # A span to now (inside an hour) never shares a key with one ending on the hour.
    key = {"start": start, "end_hour": hour, "partial_hour": end != hour}
    if cluster:
        key["cluster"] = cluster
    return cached("showback", key, lambda: showback(start, end, cluster=cluster))


def scope_burndowns(scope, now: datetime) -> list[BudgetBurndown]:
    """Every budget in ``scope`` with its burn-down: the budgets as they are now, the
    spend from the cached showbacks, so the Overview's panel costs four cost reports once
    an hour, not at every visit."""
    return budget_burndowns(budgets_in_scope(scope), now, figures=cached_showback)
