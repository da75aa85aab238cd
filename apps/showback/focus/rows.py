"""The FOCUS export's rows: one per pool, charge period and allocation, from the cost engine.

Each open UTC day of the range is one charge period. Its rows are the cost report's
(apps/reports/cost/report.py) of that day, taken apart by pool as closing a month takes
them apart (apps/reports/cost/periods.py, ``freeze_cost_rows``):

- the report grouped by pool gives each pool's figures;
- the report grouped by workload gives each workload's share of its pool, by the split
  rule of apps/reports/cost/split.py;
- the pool less its workloads' shares is its **unallocated** capacity, or the whole pool
  when it has no workload (**unattributed**);
- the workloads of teams outside the reader's scope on a pool in it are summed into one
  **other teams** row per pool and day that names none of them.

A closed month the range covers whole is one charge period (the month): its rows are the
figures frozen when it closed (``FrozenCostRow``), never recomputed. The adjustments the
range books (what a closed month's figures moved by since it closed) are rows of their own,
per pool, whose charge period is the month they correct.

The engine's figures are US dollars; the dataset speaks the installation's reporting
currency (``REPORTING_CURRENCY``): each row's cost and unit price are converted at the rate
of the month its charge period is in, the rate a closed month froze for its figures
(``in_reporting_currency``). A month without that rate stops the export with its name
(``MissingReportingRate``): FOCUS has no way to leave a row's cost out.

So the rows add up to the cost report of the same range and scope: ``allocate_cents``
rounds each row's cost to the cent so that the rounded rows add up to the rounded total.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from django.utils.translation import gettext

from apps.accounts.models import Team
from apps.accounts.scope import EVERYTHING, Scope
from apps.core.money import CENT, as_decimal, to_cents
from apps.currencies.codes import USD, reporting_currency
from apps.pools.models import Pool, Workload
from apps.reports.cost import periods, report
from apps.reports.cost.prices import in_force_at, pool_full_price, price_periods_of
from apps.reports.cost.rates import conversion_for, month_of
from apps.reports.cost.rows import UNATTRIBUTED, cluster_slug_of
from apps.reports.cost.split import UNALLOCATED
from apps.reports.span import ONE_DAY, Span

# What a row allocates (x_AllocationKind).
WORKLOAD = "workload"
OTHER_TEAMS = "other_teams"
ADJUSTMENT = "adjustment"
ALLOCATION_KINDS = (WORKLOAD, UNALLOCATED, UNATTRIBUTED, OTHER_TEAMS, ADJUSTMENT)


@dataclass
class FocusRow:
    """One pool's cost over one charge period, for one allocation."""

    pool: Pool
    kind: str  # one of ALLOCATION_KINDS
    charge_start: datetime
    charge_end: datetime
    gpu_hours: float
    cost_usd: Decimal  # at full precision, as the cost engine computes it
    # The price in force at the charge period's start: USD per GPU-hour, fixed + per kWh × TDP,
    # converted from the price's currency at the month's rate; None while that rate is missing.
    unit_price_usd: Decimal | None
    workload: Workload | None = None
    label: str = ""
    team: Team | None = None
    split_rule: str = ""
    split_rule_text: str = ""
    closed_month: str = ""  # "2026-10": figures frozen when that month closed
    adjusted_month: str = ""  # "2026-10": the closed month an adjustment corrects
    billing_start: datetime | None = None
    billing_end: datetime | None = None
    # cost_usd and unit_price_usd in the reporting currency (in_reporting_currency)
    cost: Decimal = Decimal(0)
    unit_price: Decimal | None = None
    # cost to the cent, the rounded rows adding up to the rounded total
    billed: Decimal = Decimal(0)

    def __post_init__(self):
        if self.billing_start is None:
            self.billing_start = periods.month_start(self.charge_start.date())
        if self.billing_end is None:
            self.billing_end = periods.next_month_start(self.billing_start)


def _negligible(cost, hours) -> bool:
    return abs(cost) < periods.NOISE and abs(hours) < periods.NOISE


class _Fleet:
    """What every charge period's rows read: the pools in scope, the workloads, the teams
    and the price periods, each read once."""

    def __init__(self, scope: Scope, cluster: str | None = None):
        self.scope = scope
        # A cluster's slug: the live reports read that cluster's pools only.
        self.cluster = cluster
        everything = Pool.objects.select_related("gpu_model", "team", "cluster")
        self.pools = {pool.id: pool for pool in everything}
        self.pools_by_slug = {pool.slug: pool for pool in self.pools.values()}
        self.in_scope = set(Pool.objects.filter(scope.team_filter()).values_list("id", flat=True))
        self.workloads = {
            workload.slug: workload for workload in Workload.objects.select_related("team", "pool")
        }
        self.teams = {team.id: team for team in Team.objects.all()}
        self.price_periods = price_periods_of()
        # (currency, month) → units per USD, as the cost engine converts that month.
        self.units_per_usd = {}

    def unit_price(self, pool: Pool, moment: datetime) -> Decimal | None:
        """USD per GPU-hour in force at ``moment``; None when the price is in a currency
        whose rate for the month is missing (the cost engine leaves that cost out too)."""
        if pool.id not in self.pools:
            return Decimal(0)  # a pool deleted since its month closed: no price to read
        period = in_force_at(self.price_periods.get(pool.id, []), moment)
        price = pool_full_price(period or pool, pool.gpu_model.tdp_watts)
        currency = getattr(period or pool, "currency", USD)
        if currency == USD:
            return price
        month = month_of(moment)
        key = (currency, month)
        if key not in self.units_per_usd:
            first = datetime(month.year, month.month, 1, tzinfo=UTC)
            span = Span(first, first + ONE_DAY)
            conversion = conversion_for(span, {currency})
            self.units_per_usd[key] = conversion.units_per_usd(currency, month)
        units = self.units_per_usd[key]
        return None if units is None else price / units

    def pool_of_frozen(self, stored) -> Pool:
        """The pool a frozen row is of; one deleted since stands in by its slug."""
        pool = self.pools.get(stored.pool_id)
        if pool is None:
            pool = Pool(id=stored.pool_id, slug=stored.pool_slug, name=stored.pool_slug)
        return pool


def _other_teams_row(rows_of_pool: dict, pool: Pool, start, end, fleet) -> "FocusRow":
    key = (pool.id, OTHER_TEAMS)
    if key not in rows_of_pool:
        rows_of_pool[key] = FocusRow(
            pool=pool,
            kind=OTHER_TEAMS,
            charge_start=start,
            charge_end=end,
            gpu_hours=0.0,
            cost_usd=Decimal(0),
            unit_price_usd=fleet.unit_price(pool, start),
            label=gettext("Other teams' workloads"),
        )
    return rows_of_pool[key]


def live_rows(start: datetime, end: datetime, fleet: _Fleet) -> list[FocusRow]:
    """The rows of [start, end) from the live cost report: two reports (by pool, by
    workload), taken apart by pool."""
    scope = fleet.scope
    pool_rows = report.cost_report(start, end, "pool", scope=scope, cluster_slug=fleet.cluster)
    # Every workload's share, other teams' too: a pool in scope is split whole.
    shares = defaultdict(list)
    rest_texts = {}
    for row in report.cost_report(
        start, end, "workload", scope=EVERYTHING, cluster_slug=fleet.cluster
    ):
        workload = fleet.workloads.get(row.key)
        if row.key in (UNALLOCATED, UNATTRIBUTED):
            rest_texts[row.key] = (row.split_rule, row.split_rule_text)
        elif workload is not None and workload.pool_id in fleet.in_scope:
            shares[workload.pool_id].append((workload, row))
    rows = []
    for pool_row in pool_rows:
        pool = fleet.pools_by_slug[pool_row.key]
        price = fleet.unit_price(pool, start)
        own = shares.get(pool.id, [])
        others = {}
        for workload, row in own:
            if _negligible(row.cost_usd, row.capacity_gpu_hours):
                continue
            if not scope.covers_team(workload.effective_team_id):
                other = _other_teams_row(others, pool, start, end, fleet)
                other.cost_usd += row.cost_usd
                other.gpu_hours += row.capacity_gpu_hours
                continue
            rows.append(
                FocusRow(
                    pool=pool,
                    kind=WORKLOAD,
                    charge_start=start,
                    charge_end=end,
                    gpu_hours=row.capacity_gpu_hours,
                    cost_usd=row.cost_usd,
                    unit_price_usd=price,
                    workload=workload,
                    label=workload.name,
                    team=fleet.teams.get(workload.effective_team_id),
                    split_rule=row.split_rule,
                    split_rule_text=row.split_rule_text,
                )
            )
        rows.extend(others.values())
        rest_cost = pool_row.cost_usd - sum((row.cost_usd for _w, row in own), Decimal(0))
        rest_hours = pool_row.capacity_gpu_hours - sum(row.capacity_gpu_hours for _w, row in own)
        if _negligible(rest_cost, rest_hours):
            continue
        kind = UNALLOCATED if own else UNATTRIBUTED
        rule, text = rest_texts.get(kind, (kind, ""))
        rows.append(
            FocusRow(
                pool=pool,
                kind=kind,
                charge_start=start,
                charge_end=end,
                gpu_hours=rest_hours,
                cost_usd=rest_cost,
                unit_price_usd=price,
                label=_rest_label(kind),
                team=pool.team,
                split_rule=rule,
                split_rule_text=text,
            )
        )
    return rows


def _rest_label(kind: str) -> str:
    if kind == UNALLOCATED:
        return gettext("Unallocated capacity")
    return gettext("Unattributed (pools without workloads)")


def frozen_rows(month, fleet: _Fleet) -> list[FocusRow]:
    """A closed month's rows as they were frozen: one charge period, the month."""
    from apps.reports.models import FrozenCostRow

    start, end = periods.month_bounds(month.month)
    label = periods.month_label(month)
    scope = fleet.scope
    rows = []
    others = {}
    stored_rows = FrozenCostRow.objects.filter(closed_month=month, group_by="workload")
    for stored in stored_rows:
        if not scope.covers_team(stored.pool_team_id):
            continue
        pool = fleet.pool_of_frozen(stored)
        cost = as_decimal(stored.figures.get("cost_usd", "0"))
        hours = float(stored.figures.get("capacity_gpu_hours", "0"))
        if _negligible(cost, hours):
            continue
        price = fleet.unit_price(pool, start)
        if stored.is_workload and not scope.covers_team(stored.workload_team_id):
            other = _other_teams_row(others, pool, start, end, fleet)
            other.cost_usd += cost
            other.gpu_hours += hours
            other.closed_month = label
            continue
        workload = fleet.workloads.get(stored.key) if stored.is_workload else None
        kind = WORKLOAD if stored.is_workload else stored.key
        team_id = stored.workload_team_id if stored.is_workload else stored.pool_team_id
        rows.append(
            FocusRow(
                pool=pool,
                kind=kind,
                charge_start=start,
                charge_end=end,
                gpu_hours=hours,
                cost_usd=cost,
                unit_price_usd=price,
                workload=workload,
                label=stored.label,
                team=fleet.teams.get(team_id),
                split_rule="" if stored.is_workload else kind,
                closed_month=label,
            )
        )
    return rows + list(others.values())


def adjustment_rows(month, fleet: _Fleet, closed) -> list[FocusRow]:
    """What a closed month's figures moved by since it closed, per pool: booked in the
    first open month after it, charged to the month it corrects."""
    start, end = periods.month_bounds(month.month)
    label = periods.month_label(month)
    booked = periods.first_open_month_after(month, closed)
    prefix = f"{periods.ADJUSTMENT_PREFIX}{label}-"
    rows = []
    for row in periods.adjustment_rows(month, "pool", scope=fleet.scope):
        pool = fleet.pools_by_slug.get(row.key.removeprefix(prefix))
        if pool is None:
            continue
        rows.append(
            FocusRow(
                pool=pool,
                kind=ADJUSTMENT,
                charge_start=start,
                charge_end=end,
                gpu_hours=row.capacity_gpu_hours,
                cost_usd=row.cost_usd,
                unit_price_usd=fleet.unit_price(pool, start),
                label=row.label,
                team=pool.team,
                adjusted_month=label,
                billing_start=booked,
                billing_end=periods.next_month_start(booked),
            )
        )
    return rows


def focus_rows(
    start: datetime, end: datetime, *, scope: Scope = EVERYTHING, cluster: str | None = None
) -> list[FocusRow]:
    """The rows of [start, end) for ``scope``: each open day's, each closed month's, and
    the adjustments the range books, in the reporting currency; their ``billed`` add up to
    the cost report's total of the same range and scope, to the cent. ``cluster`` (a slug)
    keeps the rows of that cluster's pools, before the cents are allocated: they then add
    up to the cost report filtered by that cluster."""
    fleet = _Fleet(scope, cluster)
    closed = periods.closed_months()
    # No figures past the current hour: the days after it cost nothing yet.
    last = Span.of(start, end).end
    rows = []
    for piece_start, piece_end, month in periods.split_span(start, end, closed):
        if month is not None:
            rows.extend(frozen_rows(month, fleet))
            continue
        day = piece_start
        while day < min(piece_end, last):
            day_end = min(periods_day_end(day), piece_end)
            rows.extend(live_rows(day, day_end, fleet))
            day = day_end
    for month in periods.adjusted_months(start, end, closed):
        rows.extend(adjustment_rows(month, fleet, closed))
    if cluster:
        # The closed months' and the adjustments' rows, read for every pool.
        rows = [row for row in rows if cluster_slug_of(row.pool) == cluster]
    rows.sort(key=lambda row: (row.charge_start, row.pool.name, row.kind != WORKLOAD, row.label))
    in_reporting_currency(rows)
    allocate_cents(rows)
    return rows


class MissingReportingRate(Exception):
    """The reporting currency has no exchange rate for months the rows are in."""

    def __init__(self, currency: str, months: list):
        self.currency = currency
        self.months = months
        named = ", ".join(f"{month:%Y-%m}" for month in months)
        super().__init__(
            gettext(
                "No %(currency)s exchange rate for %(months)s: add it on the exchange rates "
                "page, then export again."
            )
            % {"currency": currency, "months": named}
        )


def in_reporting_currency(rows: list[FocusRow]) -> None:
    """Set each row's ``cost`` and ``unit_price``: its dollars at the reporting currency's
    rate of the month its charge period is in (an adjustment's, the month it corrects),
    as the cost engine converts that month (a closed month at the rates it froze)."""
    currency = reporting_currency()
    if currency == USD or not rows:
        for row in rows:
            row.cost, row.unit_price = row.cost_usd, row.unit_price_usd
        return
    span = Span(
        min(row.charge_start for row in rows),
        max(row.charge_end for row in rows),
    )
    conversion = conversion_for(span, {USD})
    missing = set()
    for row in rows:
        month = month_of(row.charge_start)
        units = conversion.units_per_usd(currency, month)
        if units is None:
            missing.add(month)
            continue
        row.cost = row.cost_usd * units
        row.unit_price = None if row.unit_price_usd is None else row.unit_price_usd * units
    if missing:
        raise MissingReportingRate(currency, sorted(missing))


def periods_day_end(moment: datetime) -> datetime:
    """The next UTC midnight after ``moment``."""
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight + ONE_DAY


def allocate_cents(rows: list[FocusRow]) -> Decimal:
    """Set each row's ``billed``: its cost to the cent, the cents the rounding loses or
    gains given to the rows whose cost it rounded most (largest remainder), so that the
    rows add up to their total to the cent. Returns that total."""
    total = to_cents(sum((row.cost for row in rows), Decimal(0))) or Decimal(0)
    for row in rows:
        row.billed = to_cents(row.cost) or Decimal(0)
    missing = total - sum((row.billed for row in rows), Decimal(0))
    steps = int((abs(missing) / CENT).to_integral_value())
    if steps:
        step = CENT if missing > 0 else -CENT
        # The rows the rounding moved furthest from their cost, in the direction missing.
        order = sorted(
            rows,
            key=lambda row: (row.cost - row.billed) * (1 if missing > 0 else -1),
            reverse=True,
        )
        for row in order[:steps]:
            row.billed += step
    return total
