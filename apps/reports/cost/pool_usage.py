"""Per pool: the sums over a span's measured hours, each at the prices in force in it
(``pool_usage_totals``): the measured capacity, busy and reporting GPU-hours, the energy
and the measured cost.

Sums over a range read the daily rows for the whole UTC days inside it and the hourly
rows for the partial days at its edges. The measured cost follows
``apps.reports.cost.costmodel``, applied to the pool's stored price split
(``fixed_price_per_gpu_hour_usd``, ``price_per_gpu_kwh_usd``), so a test can recompute any
figure by hand."""

from collections import defaultdict
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime, time
from decimal import Decimal

from django.db.models import Case, DateTimeField, F, FloatField, Q, Sum, Value, When
from django.db.models.functions import Coalesce

from apps.core.money import as_decimal, times
from apps.currencies.codes import USD
from apps.reports.cost.prices import (
    day_on_or_after,
    hour_on_or_after,
    in_force_at,
    price_periods_of,
    price_split,
)
from apps.reports.cost.rates import (
    AUTO,
    conversion_for,
    currencies_of,
    month_of,
    month_starts_inside,
)
from apps.reports.cost.service import (
    day_read_hour_by_hour,
    service_edge_hours,
    service_periods_of,
    service_share_of,
)
from apps.reports.span import Span
from apps.telemetry.models import PoolDailyUsage, PoolHourlyUsage
from apps.telemetry.rollups.days import in_service_q

_ZERO = Value(0.0, output_field=FloatField())


@dataclass
class UsageTotals:
    # Hours with telemetry; an hour the pool's service period starts or ends in counts
    # for the fraction of it in service (``service_edge_hours``).
    measured_hours: float = 0.0
    measured_capacity_gpu_hours: float = 0.0
    busy_gpu_hours: float = 0.0
    reporting_gpu_hours: float = 0.0
    measured_cost_usd: Decimal = Decimal(0)
    # The power terms of the measured cost, so an explanation can show them (explain.py).
    energy_kwh: float = 0.0
    busy_gpu_hours_without_energy: float = 0.0
    # Σ over measured hours of the full price in force (USD per GPU): what those hours
    # would cost unmeasured, subtracted from the paid hours' to price the unmeasured ones.
    measured_hours_full_price_usd: Decimal = Decimal(0)
    # The same two amounts in the reporting currency (apps/reports/cost/rates.py).
    measured_cost: Decimal = Decimal(0)
    measured_hours_full_price: Decimal = Decimal(0)
    # (currency, month) of the rates missing to convert them: those amounts are left out.
    missing_rates: frozenset = frozenset()

    def __add__(self, other: "UsageTotals") -> "UsageTotals":
        merged = UsageTotals()
        for item in fields(UsageTotals):
            mine, theirs = getattr(self, item.name), getattr(other, item.name)
            setattr(
                merged, item.name, mine | theirs if item.name == "missing_rates" else mine + theirs
            )
        return merged

    def in_reporting(self) -> "UsageTotals":
        """These totals with their amounts in the reporting currency (in the ``_usd``
        fields, so the cost formulas apply unchanged)."""
        return replace(
            self,
            measured_cost_usd=self.measured_cost,
            measured_hours_full_price_usd=self.measured_hours_full_price,
        )

    def add(self, row: dict):
        self.measured_hours += row["measured_hours"] or 0
        self.measured_capacity_gpu_hours += row["measured_capacity"] or 0.0
        self.busy_gpu_hours += row["busy"] or 0.0
        self.reporting_gpu_hours += row["reporting"] or 0.0
        self.measured_cost_usd += row["cost"]
        self.energy_kwh += row["energy"] or 0.0
        self.busy_gpu_hours_without_energy += row["busy_without_energy"] or 0.0
        self.measured_hours_full_price_usd += row["full_price"]
        self.measured_cost += row.get("reporting_cost", row["cost"])
        self.measured_hours_full_price += row.get("reporting_full_price", row["full_price"])
        if row.get("missing_rates"):
            self.missing_rates = self.missing_rates | row["missing_rates"]


# The pool's current prices, for hours no price period covers, and its GPUs' TDP: read
# with the sums (constant in each pool's group), not by another query.
PRICE_COLUMNS = (
    "pool__fixed_price_per_gpu_hour_usd",
    "pool__price_per_gpu_kwh_usd",
    "pool__gpu_model__tdp_watts",
    "pool__currency",
)


def pool_usage_totals(
    span: Span,
    pool_ids=None,
    periods=None,
    service_periods=None,
    *,
    cuts=None,
    by_segment=False,
    conversion=AUTO,
) -> dict:
    """Per pool: sums over the span's measured hours, each at the prices in force in it.
    Four queries (one fewer given ``periods``, from ``price_periods_of``, and one fewer
    given ``service_periods``: pool id → (in service from, until)).

    An hour the pool's service period starts or ends inside of counts for the fraction
    of it in service (``service_edge_hours``), its day read hour by hour.

    ``cuts`` (pool id → whole hours) cut the pools' sums further; ``by_segment`` keys the
    sums by (pool id, start of the segment: a cut, a price change or the span's start).

    The rows are summed in SQL by pool and price segment (a CASE on the price changes
    inside the span, no lookup per row), and each segment's sums are priced here. A whole
    day is read from its daily row, unless a price period of its pool starts after its
    midnight: then from its hourly rows."""
    periods = price_periods_of(pool_ids) if periods is None else periods
    if service_periods is None:
        service_periods = service_periods_of(pool_ids)
    edges = service_edge_hours(span, service_periods)
    if conversion is AUTO:
        conversion = conversion_for(span, currencies_of(periods))
    if conversion is not None:
        cuts = _with_month_starts(span, cuts, pool_ids if pool_ids is not None else periods)
    changes = _segment_starts(span, periods, cuts)
    totals: dict[int, UsageTotals] = defaultdict(UsageTotals)
    for row in _sums_by_segment(span, pool_ids, changes, edges):
        pool_id, start = row["pool_id"], row["segment"] or span.start
        _price_segment(row, in_force_at(periods.get(pool_id, []), start))
        _convert_segment(row, conversion, start)
        totals[(pool_id, start) if by_segment else pool_id].add(row)
    return totals


def _with_month_starts(span: Span, cuts, pool_ids) -> dict:
    """``cuts`` with every month's start inside the span added for each pool."""
    months = month_starts_inside(span)
    merged = {pool_id: list(pool_cuts) for pool_id, pool_cuts in (cuts or {}).items()}
    if months:
        for pool_id in pool_ids:
            merged.setdefault(pool_id, []).extend(months)
    return merged


def _convert_segment(row: dict, conversion, start: datetime) -> None:
    """The segment's amounts, priced in its currency, in USD (``cost``, ``full_price``)
    and in the reporting currency (``reporting_cost``, ``reporting_full_price``); a
    missing rate leaves them out and names itself in ``missing_rates``."""
    if conversion is None:
        return
    currency, month, missing = row["currency"], month_of(start), set()
    cost, full_price = row["cost"], row["full_price"]
    for target, names in (
        (conversion.reporting, ("reporting_cost", "reporting_full_price")),
        (USD, ("cost", "full_price")),
    ):
        converted_cost = conversion.convert(cost, currency, month, target, missing)
        converted_price = conversion.convert(full_price, currency, month, target, missing)
        row[names[0]] = Decimal(0) if converted_cost is None else converted_cost
        row[names[1]] = Decimal(0) if converted_price is None else converted_price
    row["missing_rates"] = frozenset(missing)


def _segment_starts(span: Span, periods: dict, cuts) -> list[tuple[int, datetime]]:
    """(pool id, moment) of the price changes and the cuts inside the span, latest
    first: a CASE takes the first match."""
    return sorted(
        {
            *(
                (pool_id, period.effective_from.astimezone(UTC))
                for pool_id, pool_periods in periods.items()
                for period in pool_periods
                if span.start < period.effective_from < span.end
            ),
            *(
                (pool_id, cut.astimezone(UTC))
                for pool_id, pool_cuts in (cuts or {}).items()
                for cut in pool_cuts
                if span.start < cut < span.end
            ),
        },
        key=lambda change: change[1],
        reverse=True,
    )


def _segment_case(changes: list, on_or_after) -> Case:
    """The start of the segment a row lies in: the latest change it comes on or after
    (None: none in the span). ``on_or_after(pool_id, start)``: the Q of such rows."""
    return Case(
        *[When(on_or_after(pool_id, start), then=Value(start)) for pool_id, start in changes],
        default=Value(None),
        output_field=DateTimeField(),
    )


def _days_read_hour_by_hour(span: Span, changes: list, edges: dict) -> tuple[Q, Q]:
    """(daily rows, hourly rows) of the span's whole days that a change after midnight
    or a service period's edge falls inside of: such a day is summed from its hours."""
    first, last = span.whole_days()
    first_at = datetime.combine(first, time.min, tzinfo=UTC)
    last_at = datetime.combine(last, time.min, tzinfo=UTC)
    days, hours_of_days = Q(pk__in=[]), Q(pk__in=[])
    for pool_id, moment in [*((pool, start) for pool, start in changes if start.hour), *edges]:
        if first_at <= moment < last_at:
            day, hours = day_read_hour_by_hour(pool_id, moment)
            days |= day
            hours_of_days |= hours
    return days, hours_of_days


def _sums_by_segment(span: Span, pool_ids, changes: list, edges: dict) -> list[dict]:
    """The span's sums by pool and segment, with the columns that price them
    (``PRICE_COLUMNS``): the daily rows of its whole days, then the hourly rows of its
    edges and of the days read hour by hour, each hour for its share in service."""
    first, last = span.whole_days()
    mid_day, hours_of_mid_day = _days_read_hour_by_hour(span, changes, edges)
    service_share = service_share_of(edges)
    daily = PoolDailyUsage.objects.filter(day__gte=first, day__lt=last).exclude(mid_day)
    hourly = PoolHourlyUsage.objects.filter(span.edge_filter() | hours_of_mid_day)
    if pool_ids is not None:
        daily = daily.filter(pool_id__in=pool_ids)
        hourly = hourly.filter(pool_id__in=pool_ids)
    daily_rows = (
        daily.annotate(segment=_segment_case(changes, day_on_or_after))
        .values("pool_id", "segment", *PRICE_COLUMNS)
        .annotate(
            measured_hours=Sum("measured_hours"),
            measured_capacity=Sum("measured_capacity_gpu_hours"),
            busy=Sum("busy_gpu_hours"),
            reporting=Sum("reporting_gpu_hours"),
            energy=Sum("energy_kwh"),
            busy_without_energy=Sum("busy_gpu_hours_without_energy"),
        )
    )
    measured = Q(reporting_gpus__gt=0)
    hourly_rows = (
        hourly.filter(in_service_q())
        .annotate(segment=_segment_case(changes, hour_on_or_after))
        .values("pool_id", "segment", *PRICE_COLUMNS)
        .annotate(
            measured_hours=Coalesce(Sum(service_share, filter=measured), _ZERO),
            measured_capacity=Coalesce(
                Sum(F("capacity_gpu_hours") * service_share, filter=measured), _ZERO
            ),
            busy=Coalesce(Sum(F("busy_gpu_hours") * service_share), _ZERO),
            reporting=Coalesce(Sum(F("reporting_gpus") * service_share), _ZERO),
            energy=Coalesce(Sum(F("energy_kwh") * service_share, filter=measured), _ZERO),
            busy_without_energy=Coalesce(
                Sum(
                    F("busy_gpu_hours") * service_share,
                    filter=measured & Q(energy_kwh__isnull=True),
                ),
                _ZERO,
            ),
        )
    )
    return [*daily_rows, *hourly_rows]


def _price_segment(row: dict, period) -> None:
    """A segment's measured cost (``row["cost"]``) and the full price of its measured
    hours (``row["full_price"]``), at ``period``'s prices (None: the pool's current ones,
    read with the sums)."""
    fixed, per_kwh = (
        price_split(period) if period else (row[PRICE_COLUMNS[0]], row[PRICE_COLUMNS[1]])
    )
    # The currency the prices are in: the period's, or the pool's own.
    row["currency"] = period.currency if period else row[PRICE_COLUMNS[3]]
    tdp_kw = Decimal(row[PRICE_COLUMNS[2]]) / 1000
    # The cost model's formula (apps/reports/cost/costmodel.py), on the segment's sums:
    # the hours are floats, the prices Decimal; each product is taken exactly.
    energy_kwh = as_decimal(row["energy"] or 0.0) + tdp_kw * as_decimal(
        row["busy_without_energy"] or 0.0
    )
    row["cost"] = times(row["measured_capacity"] or 0.0, fixed) + per_kwh * energy_kwh
    row["full_price"] = times(row["measured_hours"] or 0, fixed + per_kwh * tdp_kw)
