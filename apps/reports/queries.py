"""The report figures, aggregated in SQL: a handful of queries per report,
whatever the number of pools, workloads or hours.

Sums over a range read the daily rows for the whole UTC days inside it and the hourly
rows for the partial days at its edges. Costs follow ``apps.reports.costmodel``; the SQL
sums apply its formulas with the pool's stored price split (``fixed_price_per_gpu_hour_usd``,
``price_per_gpu_kwh_usd``), so a test can recompute any figure by hand.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from functools import lru_cache
from zoneinfo import ZoneInfo

from django.db.models import (
    Aggregate,
    Case,
    DateTimeField,
    DecimalField,
    Exists,
    F,
    FloatField,
    IntegerField,
    OuterRef,
    Q,
    Sum,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone
from django.utils.translation import gettext

from apps.accounts.scope import EVERYTHING, Scope
from apps.core.money import as_decimal, times
from apps.pools.hours import ceil_hour, floor_hour, parse_hour_ranges
from apps.pools.models import (
    TRAINING_KINDS,
    Interruption,
    Pool,
    PoolPricePeriod,
    Purpose,
    Workload,
)
from apps.reports import costmodel, explain
from apps.telemetry.models import (
    PoolDailyUsage,
    PoolHourlyUsage,
    WorkloadDailyRequests,
    WorkloadHourlyRequests,
)
from apps.telemetry.rollups.days import in_service_q
from apps.training import goodput
from apps.training import services as training_services

ONE_HOUR = timedelta(hours=1)
ONE_DAY = timedelta(days=1)
EARLIEST = datetime(2020, 1, 1, tzinfo=UTC)
GROUP_BY_CHOICES = ("pool", "purpose", "workload")
UNATTRIBUTED = "unattributed"
# The row that sums, without naming them, the workloads of teams outside the viewer's
# scope that run on a pool in it (a shared pool): the pool's total stays whole.
OTHER_TEAMS = "other-teams"
_ZERO = Value(0.0, output_field=FloatField())


class PercentileCont(Aggregate):
    """PostgreSQL's ``percentile_cont(f) WITHIN GROUP (ORDER BY x)``: linear interpolation
    between closest ranks (NumPy's default; Hyndman & Fan 1996, definition 7)."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, fraction: float, **extra):
        super().__init__(expression, fraction=float(fraction), **extra)


@dataclass(frozen=True)
class Span:
    """[start, end) on whole UTC hours, never past the current hour's end."""

    start: datetime
    end: datetime

    @classmethod
    def of(cls, start: datetime, end: datetime) -> "Span":
        now_end = floor_hour(timezone.now()) + ONE_HOUR
        # Nothing gpufleet records predates its first release; the floor bounds the
        # hour-by-hour arithmetic of a query for year 1.
        start = max(start, EARLIEST)
        start, end = floor_hour(start), min(ceil_hour(end), now_end)
        return cls(start, max(start, end))

    @classmethod
    def last_hours(cls, now: datetime, hours: int) -> "Span":
        """The last ``hours`` h at ``now``: the ``hours`` whole UTC hour-slots ending
        with the current one, [floor(now) − (hours − 1) h, floor(now) + 1 h).

        Every trailing window (the Overview's last 24 h and 7 days, the alert rules'
        windows, ``/metrics``) is this span, so it pays exactly ``hours`` hours of each
        pool in service throughout (GPUs × price × ``hours``), and the current hour's
        telemetry counts as soon as it is rolled up. Its capacity, cost and busy
        GPU-hours are sums over these same slots; its utilisation divides the busy by
        the measured capacity of the hours with telemetry among them."""
        end = floor_hour(now) + ONE_HOUR
        start = max(end - hours * ONE_HOUR, EARLIEST)
        return cls(start, max(start, end))

    @property
    def hours(self) -> int:
        return int((self.end - self.start) / ONE_HOUR)

    def whole_days(self) -> tuple[date, date]:
        """[first, last) UTC days lying wholly inside the span (first == last: none)."""
        first = self.start.date() if self.start.hour == 0 else self.start.date() + timedelta(1)
        last = self.end.date()
        return first, max(first, last)

    def edge_filter(self) -> Q:
        """Hours of the span outside its whole days."""
        first, last = self.whole_days()
        if first == last:
            return Q(hour__gte=self.start, hour__lt=self.end)
        first_at = datetime.combine(first, time.min, tzinfo=UTC)
        last_at = datetime.combine(last, time.min, tzinfo=UTC)
        return Q(hour__gte=self.start, hour__lt=first_at) | Q(hour__gte=last_at, hour__lt=self.end)


# --- per-pool sums -------------------------------------------------------------------------


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

    def add(self, row: dict):
        self.measured_hours += row["measured_hours"] or 0
        self.measured_capacity_gpu_hours += row["measured_capacity"] or 0.0
        self.busy_gpu_hours += row["busy"] or 0.0
        self.reporting_gpu_hours += row["reporting"] or 0.0
        self.measured_cost_usd += row["cost"]
        self.energy_kwh += row["energy"] or 0.0
        self.busy_gpu_hours_without_energy += row["busy_without_energy"] or 0.0
        self.measured_hours_full_price_usd += row["full_price"]


def _days_and_edges(span: Span, daily_model, hourly_model, key: str, ids=None):
    """The daily rows of the span's whole UTC days and the hourly rows of its partial days
    at the edges, of ``ids`` only (None: all): summed together, they cover the span."""
    first, last = span.whole_days()
    daily = daily_model.objects.filter(day__gte=first, day__lt=last)
    hourly = hourly_model.objects.filter(span.edge_filter())
    if ids is not None:
        daily = daily.filter(**{f"{key}__in": ids})
        hourly = hourly.filter(**{f"{key}__in": ids})
    return daily, hourly


def price_periods_of(pool_ids=None) -> dict[int, list]:
    """Each pool's price periods, oldest first (None: every pool's). One query."""
    periods = defaultdict(list)
    queryset = PoolPricePeriod.objects.order_by("effective_from")
    if pool_ids is not None:
        queryset = queryset.filter(pool_id__in=pool_ids)
    for period in queryset:
        periods[period.pool_id].append(period)
    return periods


def _in_force_at(periods: list, moment: datetime):
    found = None
    for period in periods:
        if period.effective_from <= moment:
            found = period
    return found


def _day_read_hour_by_hour(pool_id, moment: datetime) -> tuple[Q, Q]:
    """(the pool's daily row of the UTC day of ``moment``, its hourly rows): a day a
    price change or a service edge falls inside of is summed from its hours."""
    midnight = floor_hour(moment).replace(hour=0)
    return (
        Q(pool_id=pool_id, day=midnight.date()),
        Q(pool_id=pool_id, hour__gte=midnight, hour__lt=midnight + ONE_DAY),
    )


def _service_share(edges: dict) -> Case:
    """Each hourly row's share of its hour in service: 1, but at the service period's
    edges (``service_edge_hours``) the fraction of the hour in service."""
    return Case(
        *[
            When(pool_id=pool_id, hour=hour, then=Value(fraction))
            for (pool_id, hour), fraction in edges.items()
        ],
        default=Value(1.0),
        output_field=FloatField(),
    )


def _mid_day_changes(span: Span, periods: dict[int, list]) -> tuple[Q, Q]:
    """(daily rows, hourly rows) of the pools' UTC days in the span on which a price
    period starts after midnight: such a day is priced hour by hour."""
    days, hours = Q(pk__in=[]), Q(pk__in=[])
    for pool_id, pool_periods in periods.items():
        for period in pool_periods:
            start = period.effective_from.astimezone(UTC)
            if start.hour and span.start <= start < span.end:
                day, day_hours = _day_read_hour_by_hour(pool_id, start)
                days |= day
                hours |= day_hours
    return days, hours


def _price_case(field: str, span: Span, periods: dict[int, list], on_or_after):
    """The pool's ``field`` in force for a row, as a CASE over the price periods that
    differ from the pool's current prices in the span (none for a pool whose prices did
    not change: the pool's own column). ``on_or_after(pool_id, start)``: the Q of the
    rows from ``start`` on."""
    whens = []
    for pool_id, pool_periods in periods.items():
        at_start = _in_force_at(pool_periods, span.start)
        inside = [p for p in pool_periods if span.start < p.effective_from < span.end]
        for period in reversed(inside):  # latest first: a CASE takes the first match
            whens.append(
                When(
                    on_or_after(pool_id, period.effective_from), then=Value(getattr(period, field))
                )
            )
        # The period in force now is the pool's own prices (apps/pools/prices.py).
        now = _in_force_at(pool_periods, timezone.now())
        if at_start is not None and (
            inside or now is None or getattr(at_start, field) != getattr(now, field)
        ):
            whens.append(When(pool_id=pool_id, then=Value(getattr(at_start, field))))
    # Hours no period covers, and pools with one price throughout: the current one.
    return Case(*whens, default=F(f"pool__{field}"), output_field=DecimalField())


def _day_on_or_after(pool_id, start):
    """Daily rows of the days from ``start`` on (a change after midnight: from the next
    day, its own being read hour by hour)."""
    start = start.astimezone(UTC)
    day = start.date() if not start.hour else start.date() + ONE_DAY
    return Q(pool_id=pool_id, day__gte=day)


def _hour_on_or_after(pool_id, start):
    return Q(pool_id=pool_id, hour__gte=start)


def service_edge_hours(span: Span, service_periods: dict) -> dict[tuple[int, datetime], float]:
    """(pool id, hour) → the fraction of that hour in the pool's service period, for the
    hours of the span that the period starts or ends inside of (11:30 → the 11:00 hour,
    0.5). Every other hour of the period is in service whole.

    The hourly rollups count such an hour whole (``Pool.service_hours``); what the pool
    pays for it, and the sums measured in it, are that fraction of the hour: the paid
    hours (``pool_paid_hours``) and the measured ones (``pool_usage_totals``) then cover
    the same time. ``service_periods``: pool id → (in service from, until or None)."""
    fractions = {}
    for pool_id, (since, until) in service_periods.items():
        for moment in (since, until):
            if moment is None:
                continue
            hour = floor_hour(moment)
            if hour == moment or not span.start <= hour < span.end:
                continue
            inside_from = max(hour, since)
            inside_until = min(hour + ONE_HOUR, until) if until else hour + ONE_HOUR
            fractions[(pool_id, hour)] = max(0.0, (inside_until - inside_from) / ONE_HOUR)
    return fractions


def _service_periods_of(pool_ids) -> dict:
    queryset = Pool.objects.all() if pool_ids is None else Pool.objects.filter(pk__in=pool_ids)
    return {
        row[0]: (row[1], row[2])
        for row in queryset.values_list("pk", "in_service_from", "in_service_until")
    }


# The pool's current prices, for hours no price period covers, and its GPUs' TDP: read
# with the sums (constant in each pool's group), not by another query.
PRICE_COLUMNS = (
    "pool__fixed_price_per_gpu_hour_usd",
    "pool__price_per_gpu_kwh_usd",
    "pool__gpu_model__tdp_watts",
)


def pool_usage_totals(
    span: Span,
    pool_ids=None,
    periods=None,
    service_periods=None,
    *,
    cuts=None,
    by_segment=False,
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
        service_periods = _service_periods_of(pool_ids)
    edges = service_edge_hours(span, service_periods)
    totals: dict[int, UsageTotals] = defaultdict(UsageTotals)
    first, last = span.whole_days()
    first_at = datetime.combine(first, time.min, tzinfo=UTC)
    last_at = datetime.combine(last, time.min, tzinfo=UTC)
    # The price changes inside the span, latest first: a CASE takes the first match.
    changes = sorted(
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
    mid_day = Q(pk__in=[])
    hours_of_mid_day = Q(pk__in=[])
    for pool_id, moment in [*((pool, start) for pool, start in changes if start.hour), *edges]:
        if first_at <= moment < last_at:
            day, hours = _day_read_hour_by_hour(pool_id, moment)
            mid_day |= day
            hours_of_mid_day |= hours
    service_share = _service_share(edges)

    def segment(condition):
        """The start of the price change a row comes after (None: none in the span)."""
        return Case(
            *[When(condition(pool_id, start), then=Value(start)) for pool_id, start in changes],
            default=Value(None),
            output_field=DateTimeField(),
        )

    def day_on_or_after(pool_id, start):
        # A change after midnight prices the days after its own (read hour by hour).
        day = start.date() if not start.hour else start.date() + ONE_DAY
        return Q(pool_id=pool_id, day__gte=day)

    daily = PoolDailyUsage.objects.filter(day__gte=first, day__lt=last).exclude(mid_day)
    hourly = PoolHourlyUsage.objects.filter(span.edge_filter() | hours_of_mid_day)
    if pool_ids is not None:
        daily = daily.filter(pool_id__in=pool_ids)
        hourly = hourly.filter(pool_id__in=pool_ids)
    daily_rows = (
        daily.annotate(segment=segment(day_on_or_after))
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
        .annotate(segment=segment(lambda pool_id, start: Q(pool_id=pool_id, hour__gte=start)))
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
    for row in [*daily_rows, *hourly_rows]:
        pool_id = row["pool_id"]
        period = _in_force_at(periods.get(pool_id, []), row["segment"] or span.start)
        fixed, per_kwh = (
            _split(period) if period else (row[PRICE_COLUMNS[0]], row[PRICE_COLUMNS[1]])
        )
        tdp_kw = Decimal(row[PRICE_COLUMNS[2]]) / 1000
        # The cost model's formula (apps/reports/costmodel.py), on the segment's sums: the
        # hours are floats, the prices Decimal; each product is taken exactly.
        energy_kwh = as_decimal(row["energy"] or 0.0) + tdp_kw * as_decimal(
            row["busy_without_energy"] or 0.0
        )
        row["cost"] = times(row["measured_capacity"] or 0.0, fixed) + per_kwh * energy_kwh
        row["full_price"] = times(row["measured_hours"] or 0, fixed + per_kwh * tdp_kw)
        totals[(pool_id, row["segment"] or span.start) if by_segment else pool_id].add(row)
    return totals


def _paid_range(pool: Pool, span: Span) -> tuple[datetime, datetime]:
    """[begin, finish) of the span inside the pool's service period, to the second: a
    pool in service from 11:30 pays from 11:30."""
    since, until = pool.in_service_from, pool.in_service_until
    begin, finish = max(span.start, since), min(span.end, until) if until else span.end
    return begin, max(begin, finish)


def pool_paid_hours(pool: Pool, span: Span) -> float:
    """Hours of the span inside the pool's service period, fractions of an hour
    included (from 11:30 to 14:15: 2.75 h)."""
    begin, finish = _paid_range(pool, span)
    return (finish - begin) / ONE_HOUR


def _pool_full_price(pool_or_period, tdp_watts: int) -> Decimal:
    fixed, per_kwh = _split(pool_or_period)
    return fixed + per_kwh * Decimal(tdp_watts) / 1000


@dataclass(frozen=True)
class PaidPrices:
    """Σ over a pool's paid hours of the full price in force in each, USD per GPU, and
    the price split (fixed USD per GPU-hour, USD per GPU kWh) when one was in force
    throughout (None: the prices changed in the span)."""

    total_usd: Decimal
    single_split: tuple[Decimal, Decimal] | None

    def single_usd_per_gpu_hour(self, tdp_watts: int) -> Decimal | None:
        if self.single_split is None:
            return None
        fixed, per_kwh = self.single_split
        return fixed + per_kwh * Decimal(tdp_watts) / 1000


def _split(pool_or_period) -> tuple[Decimal, Decimal]:
    """(fixed USD per GPU-hour, USD per GPU kWh), as stored (Decimal)."""
    return (
        as_decimal(pool_or_period.fixed_price_per_gpu_hour_usd),
        as_decimal(pool_or_period.price_per_gpu_kwh_usd),
    )


def paid_hours_full_price_usd(
    span: Span, pools: list[Pool], periods: dict[int, list]
) -> dict[int, PaidPrices]:
    """Per pool: Σ over the span's paid hours of the full price per GPU-hour in force in
    each (fixed + per kWh × TDP, what an hour without telemetry costs a GPU). One query.

    Hours before a pool's first price period, or of a pool without any, are at its
    current prices, as ``pool_usage_totals`` does. ``periods``: ``price_periods_of``."""
    sums = {}
    for pool in pools:
        begin, finish = _paid_range(pool, span)
        tdp = pool.gpu_model.tdp_watts
        # (start, split) steps: the current prices until the first period, then each one's.
        steps = [(begin, _split(pool))]
        steps += [(period.effective_from, _split(period)) for period in periods.get(pool.id, [])]
        total, splits = Decimal(0), set()
        for index, (start, (fixed, per_kwh)) in enumerate(steps):
            until = steps[index + 1][0] if index + 1 < len(steps) else finish
            hours = (min(until, finish) - max(start, begin)) / ONE_HOUR
            if hours > 0:
                total += times(hours, fixed + per_kwh * Decimal(tdp) / 1000)
                splits.add((fixed, per_kwh))
        sums[pool.id] = PaidPrices(total, splits.pop() if len(splits) == 1 else None)
    return sums


# --- requests and interruptions ----------------------------------------------------------


@dataclass
class RequestTotals:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    errors: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def merge(self, other: "RequestTotals"):
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.errors += other.errors

    def add(self, row: dict):
        self.requests += row["total_requests"] or 0
        self.input_tokens += row["total_input"] or 0
        self.output_tokens += row["total_output"] or 0
        self.errors += row["total_errors"] or 0


def workload_request_totals(span: Span, workload_ids=None) -> dict[int, RequestTotals]:
    totals: dict[int, RequestTotals] = defaultdict(RequestTotals)
    daily, hourly = _days_and_edges(
        span, WorkloadDailyRequests, WorkloadHourlyRequests, "workload_id", workload_ids
    )
    sums = {
        "total_requests": Sum("requests"),
        "total_input": Sum("input_tokens"),
        "total_output": Sum("output_tokens"),
        "total_errors": Sum("errors"),
    }
    for queryset in (daily, hourly):
        for row in queryset.values("workload_id").annotate(**sums):
            totals[row["workload_id"]].add(row)
    return totals


def lost_gpu_hours_by_workload(span: Span, workload_ids=None) -> dict[int, float]:
    """GPU-hours lost to the interruptions recorded in the span (one query; interruptions
    are a handful a week, not telemetry rows)."""
    interruptions = Interruption.objects.filter(
        occurred_at__gte=span.start, occurred_at__lt=span.end
    ).select_related("workload")
    if workload_ids is not None:
        interruptions = interruptions.filter(workload_id__in=workload_ids)
    lost: dict[int, float] = defaultdict(float)
    for interruption in interruptions:
        lost[interruption.workload_id] += interruption.lost_gpu_hours or 0.0
    return lost


@dataclass(frozen=True)
class EffectiveHours:
    """A training workload's effective GPU-hours over a span whose event log covers
    ``covered_hours`` of its hours: measured there, estimated (busy − lost GPU-hours,
    at least 0) over the other ``estimated_hours``, so the span's cost is divided by
    effective hours of the same hours."""

    measured_gpu_hours: float
    covered_hours: float
    estimated_gpu_hours: float = 0.0
    estimated_hours: float = 0.0

    @property
    def gpu_hours(self) -> float:
        return self.measured_gpu_hours + self.estimated_gpu_hours


def measured_effective_gpu_hours_by_workload(span: Span, workloads) -> dict[int, EffectiveHours]:
    """Effective training GPU-hours measured from the event logs of the span: Σ over
    each job of its effective seconds (apps/training/goodput.py, after goodput_measure)
    × the workload's GPUs ÷ 3600, over the hours the log covers (each job's, from the
    hour of its first event in the span to the end of the hour of its last). The rest of
    the workload's hours in the span are estimated: its busy GPU-hours there (its pool's
    when it runs alone on it, else its labelled samples') − the GPU-hours its
    interruptions there lost. Only the training workloads with a reference step time
    and events stamped in the span are measured; the others keep the estimate. Four
    queries at most (events; the busy hours; the attributed ones; interruptions)."""
    all_workloads = list(workloads)
    measurable = {
        workload.pk: workload
        for workload in all_workloads
        if workload.kind in TRAINING_KINDS and workload.reference_step_seconds is not None
    }
    measured: dict[int, float] = defaultdict(float)
    covered: dict[int, set] = defaultdict(set)
    events = training_services.events_by_job(measurable, start=span.start, end=span.end)
    for workload_id, by_job in events.items():
        workload = measurable[workload_id]
        for job_events in by_job.values():
            seconds = goodput.job_goodput(
                job_events, reference_step_seconds=float(workload.reference_step_seconds)
            ).effective_seconds
            measured[workload_id] += seconds * workload.gpu_count / 3600
            first = floor_hour(min(event.timestamp for event in job_events))
            last = ceil_hour(max(event.timestamp for event in job_events))
            hour = max(first, span.start)
            while hour < min(max(last, first + ONE_HOUR), span.end):
                covered[workload_id].add(hour)
                hour += ONE_HOUR
    if not measured:
        return {}
    busy = _busy_by_hour(span, [measurable[pk] for pk in measured], all_workloads)
    lost: dict[int, float] = defaultdict(float)
    for interruption in Interruption.objects.filter(
        workload_id__in=list(measured), occurred_at__gte=span.start, occurred_at__lt=span.end
    ).select_related("workload"):
        if floor_hour(interruption.occurred_at) not in covered[interruption.workload_id]:
            lost[interruption.workload_id] += interruption.lost_gpu_hours or 0.0
    found = {}
    for workload_id, gpu_hours in measured.items():
        pool = measurable[workload_id].pool
        edges = service_edge_hours(span, {pool.id: (pool.in_service_from, pool.in_service_until)})
        hours = busy[workload_id]
        uncovered = [hour for hour in hours if hour not in covered[workload_id]]
        uncovered_busy = sum(hours[hour] * edges.get((pool.id, hour), 1.0) for hour in uncovered)
        begin, finish = _paid_range(pool, span)
        # The covered hours the pool paid for (an hour at its service's edge in part).
        covered_paid = sum(
            max(0.0, (min(hour + ONE_HOUR, finish) - max(hour, begin)) / ONE_HOUR)
            for hour in covered[workload_id]
        )
        found[workload_id] = EffectiveHours(
            measured_gpu_hours=gpu_hours,
            covered_hours=covered_paid,
            estimated_gpu_hours=costmodel.effective_training_gpu_hours(
                uncovered_busy, lost[workload_id]
            )
            if uncovered_busy
            else 0.0,
            estimated_hours=max(0.0, round((finish - begin) / ONE_HOUR - covered_paid, 9)),
        )
    return found


def _busy_by_hour(span: Span, measured_workloads, all_workloads) -> dict[int, dict]:
    """Per workload: hour → its busy GPU-hours in the span, its pool's when it runs alone
    on it, else its labelled samples'. Two queries."""
    from apps.telemetry.models import WorkloadHourlyUsage

    on_pool = defaultdict(int)
    for workload in all_workloads:
        on_pool[workload.pool_id] += 1
    alone = {w.pool_id: w.pk for w in measured_workloads if on_pool[w.pool_id] == 1}
    shared = [w.pk for w in measured_workloads if on_pool[w.pool_id] != 1]
    busy: dict[int, dict] = defaultdict(dict)
    if alone:
        for pool_id, hour, busy_gpu_hours in PoolHourlyUsage.objects.filter(
            in_service_q(), pool_id__in=list(alone), hour__gte=span.start, hour__lt=span.end
        ).values_list("pool_id", "hour", "busy_gpu_hours"):
            busy[alone[pool_id]][hour] = busy_gpu_hours
    if shared:
        for workload_id, hour, busy_gpu_hours in WorkloadHourlyUsage.objects.filter(
            workload_id__in=shared, hour__gte=span.start, hour__lt=span.end
        ).values_list("workload_id", "hour", "busy_gpu_hours"):
            busy[workload_id][hour] = busy_gpu_hours
    return busy


# How a row's effective training GPU-hours are known.
MEASURED = "measured"
ESTIMATE = "estimate"


# --- the cost report ---------------------------------------------------------------------


@dataclass
class CostRow:
    key: str
    label: str
    purpose: str = ""
    pool_count: int = 0
    gpus: int = 0
    capacity_gpu_hours: float = 0.0
    measured_capacity_gpu_hours: float = 0.0
    unmeasured_gpu_hours: float = 0.0
    busy_gpu_hours: float = 0.0
    cost_usd: Decimal = Decimal(0)
    measured_cost_usd: Decimal = Decimal(0)
    unmeasured_cost_usd: Decimal = Decimal(0)
    idle_cost_usd: Decimal = Decimal(0)
    requests: int = 0
    tokens: int = 0
    errors: int = 0
    training_busy_gpu_hours: float = 0.0
    # Every interruption recorded on the row's pools or workloads: the same total in
    # every grouping (by pool, purpose or workload).
    lost_gpu_hours: float = 0.0
    # The part of them lost by the training the row's busy training GPU-hours count: what
    # the estimate of effective training GPU-hours subtracts.
    training_lost_gpu_hours: float = 0.0
    interruption_cost_usd: Decimal = Decimal(0)
    training_cost_usd: Decimal = Decimal(0)
    inference_cost_usd: Decimal = Decimal(0)
    # The row's training workloads (and unattributed rest) whose effective GPU-hours the
    # event logs measure, and those estimated from the interruptions: the row is
    # measured only when nothing in it is estimated.
    measured_effective_gpu_hours: float = 0.0
    measured_parts: int = 0
    estimated_parts: int = 0
    members: list = field(default_factory=list, repr=False)
    # Grouped by workload, the rule that gave the row its share of its pool
    # (apps/reports/split.py), the sentence that names it, and whether the running
    # workloads declared more GPUs than the pool has.
    split_rule: str = ""
    split_rule_text: str = ""
    split_scaled_down: bool = False
    # What the row adds up, in order, for its explanations (apps/reports/explain.py).
    parts: list = field(default_factory=list, repr=False)

    @property
    def utilization_pct(self) -> float | None:
        return costmodel.ratio_or_none(self.busy_gpu_hours, self.measured_capacity_gpu_hours, 100)

    @property
    def cost_per_busy_gpu_hour_usd(self) -> Decimal | None:
        return costmodel.ratio_or_none(self.measured_cost_usd, self.busy_gpu_hours)

    @property
    def cost_per_1k_requests_usd(self) -> Decimal | None:
        cost = self.inference_cost_usd if self.requests else None
        return costmodel.cost_per_thousand_requests_usd(cost, self.requests) if cost else None

    @property
    def cost_per_1m_tokens_usd(self) -> Decimal | None:
        cost = self.inference_cost_usd if self.tokens else None
        return costmodel.cost_per_million_tokens_usd(cost, self.tokens) if cost else None

    @property
    def effective_training_source(self) -> str | None:
        """``measured`` when the event logs measure every training workload of the row,
        ``estimate`` (busy − lost GPU-hours) otherwise; None without training."""
        if self.measured_parts and not self.estimated_parts:
            return MEASURED
        return ESTIMATE if self.training_busy_gpu_hours else None

    @property
    def effective_training_gpu_hours(self) -> float | None:
        if self.effective_training_source == MEASURED:
            return self.measured_effective_gpu_hours
        if not self.training_busy_gpu_hours:
            return None
        return costmodel.effective_training_gpu_hours(
            self.training_busy_gpu_hours, self.training_lost_gpu_hours
        )

    @property
    def effective_training_above_busy(self) -> bool:
        """Measured effective GPU-hours above the busy training GPU-hours the telemetry
        measured: the event log's GPUs or reference step time cannot both be right. Rows
        without training telemetry have nothing to compare with."""
        return (
            self.effective_training_source == MEASURED
            and self.training_busy_gpu_hours > 0
            and self.measured_effective_gpu_hours > self.training_busy_gpu_hours + 1e-9
        )

    def count_effective_training(
        self, workload_id: int, measured: dict[int, "EffectiveHours"], label: str = ""
    ) -> None:
        """Count one training workload of the row as measured (its GPU-hours added: those
        its event log measures and the estimate of the hours it does not cover) or
        estimated."""
        if workload_id in measured:
            effective = measured[workload_id]
            self.measured_parts += 1
            self.measured_effective_gpu_hours += effective.gpu_hours
            self.parts.append(explain.EffectivePart(label, effective))
        else:
            self.estimated_parts += 1

    @property
    def cost_per_effective_training_gpu_hour_usd(self) -> Decimal | None:
        return costmodel.ratio_or_none(self.training_cost_usd, self.effective_training_gpu_hours)

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "label": self.label,
            "capacity_gpu_hours": self.capacity_gpu_hours,
            "measured_capacity_gpu_hours": self.measured_capacity_gpu_hours,
            "unmeasured_gpu_hours": self.unmeasured_gpu_hours,
            "busy_gpu_hours": self.busy_gpu_hours,
            "utilization_pct": self.utilization_pct,
            "cost_usd": self.cost_usd,
            "unmeasured_cost_usd": self.unmeasured_cost_usd,
            "idle_cost_usd": self.idle_cost_usd,
            "cost_per_busy_gpu_hour_usd": self.cost_per_busy_gpu_hour_usd,
            "requests": self.requests,
            "cost_per_1k_requests_usd": self.cost_per_1k_requests_usd,
            "tokens": self.tokens,
            "cost_per_1m_tokens_usd": self.cost_per_1m_tokens_usd,
            "lost_gpu_hours": self.lost_gpu_hours,
            "effective_training_gpu_hours": self.effective_training_gpu_hours,
            "effective_training_source": self.effective_training_source,
            "effective_training_above_busy": self.effective_training_above_busy,
            "cost_per_effective_training_gpu_hour_usd": (
                self.cost_per_effective_training_gpu_hour_usd
            ),
            "interruption_cost_usd": self.interruption_cost_usd,
            "split_rule": self.split_rule,
            "split_rule_text": self.split_rule_text,
            "split_scaled_down": self.split_scaled_down,
        }


@dataclass
class PoolFigures:
    """One pool's figures over a span: the rows of every grouping are sums of these."""

    pool: Pool
    paid_hours: float
    usage: UsageTotals
    requests: RequestTotals
    lost_gpu_hours: float
    # The full prices in force over the paid hours (paid_hours_full_price_usd); None:
    # the pool's current price throughout.
    paid_prices: PaidPrices | None = None

    @property
    def prices_changed(self) -> bool:
        """Whether the span's paid hours were at more than one price."""
        paid = self.paid_prices
        return paid is not None and paid.total_usd > 0 and paid.single_split is None

    @property
    def price_split(self) -> tuple[Decimal, Decimal]:
        """(fixed USD per GPU-hour, USD per GPU kWh) in force over the span: the pool's
        current ones when none other was (with ``prices_changed``: the current ones, which
        an explanation does not multiply out)."""
        paid = self.paid_prices
        if paid is not None and paid.single_split is not None:
            return paid.single_split
        return _split(self.pool)

    @property
    def unmeasured_usd_per_gpu_hour(self) -> Decimal:
        """The full price per GPU-hour of the unmeasured hours: the one in force, or
        their mean when the span crosses a price change."""
        paid = self.paid_prices
        if paid is None or not paid.total_usd:
            return _pool_full_price(self.pool, self.pool.gpu_model.tdp_watts)
        single = paid.single_usd_per_gpu_hour(self.pool.gpu_model.tdp_watts)
        if single is not None:
            return single
        if not self.unmeasured_hours:
            return paid.total_usd / as_decimal(self.paid_hours)
        unmeasured_usd = paid.total_usd - self.usage.measured_hours_full_price_usd
        return max(Decimal(0), unmeasured_usd) / as_decimal(self.unmeasured_hours)

    @property
    def unmeasured_hours(self) -> float:
        # Rounded: fractions of an edge hour are summed in two ways (paid, measured).
        return max(0.0, round(self.paid_hours - self.usage.measured_hours, 9))

    @property
    def unmeasured_cost_usd(self) -> Decimal:
        return times(self.unmeasured_hours, self.unmeasured_usd_per_gpu_hour) * self.pool.gpu_count

    @property
    def cost_usd(self) -> Decimal:
        return self.usage.measured_cost_usd + self.unmeasured_cost_usd

    @property
    def idle_cost_usd(self) -> Decimal:
        return costmodel.idle_cost_usd(
            self.usage.measured_cost_usd,
            self.usage.busy_gpu_hours,
            self.usage.measured_capacity_gpu_hours,
        )

    @property
    def interruption_cost_usd(self) -> Decimal:
        return times(self.lost_gpu_hours, self.unmeasured_usd_per_gpu_hour)


def pool_figures(
    span: Span,
    pools: list[Pool],
    workloads: list[Workload],
    requests: dict[int, RequestTotals],
    lost: dict[int, float],
) -> list[PoolFigures]:
    """Every pool's figures from its workloads' request totals and lost GPU-hours: three
    queries, whatever the number of pools."""
    pool_ids = [pool.id for pool in pools]
    periods = price_periods_of(pool_ids)
    service_periods = {pool.id: (pool.in_service_from, pool.in_service_until) for pool in pools}
    usage = pool_usage_totals(span, pool_ids, periods, service_periods)
    paid_prices = paid_hours_full_price_usd(span, pools, periods)
    workloads_by_pool = defaultdict(list)
    for workload in workloads:
        workloads_by_pool[workload.pool_id].append(workload.id)
    figures = []
    for pool in pools:
        pool_requests = RequestTotals()
        for workload_id in workloads_by_pool[pool.id]:
            pool_requests.merge(requests.get(workload_id, RequestTotals()))
        figures.append(
            PoolFigures(
                pool=pool,
                paid_hours=pool_paid_hours(pool, span),
                usage=usage.get(pool.id, UsageTotals()),
                requests=pool_requests,
                lost_gpu_hours=sum(lost.get(w, 0.0) for w in workloads_by_pool[pool.id]),
                paid_prices=paid_prices[pool.id],
            )
        )
    return figures


def _add_pool(row: CostRow, figures: PoolFigures, share: float = 1.0):
    pool = figures.pool
    money_share = as_decimal(share)
    row.pool_count += 1
    row.gpus += pool.gpu_count
    row.capacity_gpu_hours += pool.gpu_count * figures.paid_hours * share
    row.measured_capacity_gpu_hours += figures.usage.measured_capacity_gpu_hours * share
    row.unmeasured_gpu_hours += figures.unmeasured_hours * pool.gpu_count * share
    row.busy_gpu_hours += figures.usage.busy_gpu_hours * share
    row.cost_usd += figures.cost_usd * money_share
    row.measured_cost_usd += figures.usage.measured_cost_usd * money_share
    row.unmeasured_cost_usd += figures.unmeasured_cost_usd * money_share
    row.idle_cost_usd += figures.idle_cost_usd * money_share
    # Every workload's interruptions count, whatever the pool's purpose, so the total is
    # the one the workloads' rows add up to.
    row.lost_gpu_hours += figures.lost_gpu_hours * share
    row.interruption_cost_usd += figures.interruption_cost_usd * money_share
    if pool.purpose == Purpose.TRAINING:
        row.training_busy_gpu_hours += figures.usage.busy_gpu_hours * share
        row.training_cost_usd += figures.cost_usd * money_share
        row.training_lost_gpu_hours += figures.lost_gpu_hours * share
    elif pool.purpose == Purpose.INFERENCE:
        row.inference_cost_usd += figures.cost_usd * money_share
    row.members.append(pool.slug)
    row.parts.append(explain.PoolPart(figures, counts_as=pool.purpose, share=share))


def _add_requests(row: CostRow, requests: RequestTotals, label: str):
    row.parts.append(explain.RequestsPart(label, requests.requests, requests.tokens))
    row.requests += requests.requests
    row.tokens += requests.tokens
    row.errors += requests.errors


def cost_report(
    start: datetime,
    end: datetime,
    group_by: str = "pool",
    *,
    purpose: str | None = None,
    pool_slug: str | None = None,
    scope: Scope = EVERYTHING,
) -> list[CostRow]:
    """Rows of the cost report, one per pool, purpose or workload.

    Grouped by workload, each pool's hours are split by the rule of apps/reports/split.py:
    pod labels first, then each running workload's declared GPUs ÷ the pool's GPUs; what
    no workload holds is one "unallocated" row, pools without any workload one
    "unattributed" row (requests are always the workload's own).

    Only the pools in ``scope`` count, every workload on them included, so a pool's
    figures are whole. Grouped by workload, the workloads outside ``scope`` (other teams'
    on a shared pool) are summed into one "other teams" row that names none of them, not
    even in its explanations.
    """
    if group_by not in GROUP_BY_CHOICES:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY_CHOICES)}")
    span = Span.of(start, end)
    pools = Pool.objects.select_related("gpu_model").filter(scope.team_filter()).order_by("name")
    if purpose:
        pools = pools.filter(purpose=purpose)
    if pool_slug:
        pools = pools.filter(slug=pool_slug)
    pools = list(pools)
    # The workloads, their requests and their lost GPU-hours, read once for every grouping.
    workloads = list(
        Workload.objects.filter(pool__in=pools).select_related("pool").order_by("name")
    )
    workload_ids = [workload.id for workload in workloads]
    requests = workload_request_totals(span, workload_ids)
    lost = lost_gpu_hours_by_workload(span, workload_ids)
    measured = measured_effective_gpu_hours_by_workload(span, workloads)
    figures = pool_figures(span, pools, workloads, requests, lost)
    training_by_pool = defaultdict(list)
    for workload in workloads:
        if workload.kind in TRAINING_KINDS:
            training_by_pool[workload.pool_id].append(workload)

    def count_pool_training(row: CostRow, pool: Pool) -> None:
        if pool.purpose == Purpose.TRAINING:
            for workload in training_by_pool[pool.id]:
                visible = scope.covers_team(workload.effective_team_id)
                label = workload.name if visible else gettext("Other teams' workloads")
                row.count_effective_training(workload.id, measured, label)

    if group_by == "pool":
        rows = []
        for pool_figures_ in figures:
            row = CostRow(
                key=pool_figures_.pool.slug,
                label=pool_figures_.pool.name,
                purpose=pool_figures_.pool.purpose,
            )
            _add_pool(row, pool_figures_)
            count_pool_training(row, pool_figures_.pool)
            _add_requests(row, pool_figures_.requests, pool_figures_.pool.name)
            rows.append(row)
        return rows

    if group_by == "purpose":
        rows = {
            value: CostRow(key=value, label=str(label), purpose=value)
            for value, label in Purpose.choices
            if not purpose or value == purpose
        }
        for pool_figures_ in figures:
            row = rows[pool_figures_.pool.purpose]
            _add_pool(row, pool_figures_)
            count_pool_training(row, pool_figures_.pool)
            _add_requests(row, pool_figures_.requests, pool_figures_.pool.name)
        return list(rows.values())

    # group_by == "workload": the split by rule (apps/reports/split.py).
    from apps.reports import split

    return split.workload_rows(span, figures, workloads, requests, lost, measured, scope)


def total_row(rows: list[CostRow], *, key: str = "total", label: str | None = None) -> CostRow:
    """The sum of ``rows``: the report's total row, or the rows it stands for (the other
    teams' workloads)."""
    total = CostRow(key=key, label=gettext("Total") if label is None else label)
    for row in rows:
        for name in (
            "pool_count",
            "gpus",
            "capacity_gpu_hours",
            "measured_capacity_gpu_hours",
            "unmeasured_gpu_hours",
            "busy_gpu_hours",
            "cost_usd",
            "measured_cost_usd",
            "unmeasured_cost_usd",
            "idle_cost_usd",
            "requests",
            "tokens",
            "errors",
            "training_busy_gpu_hours",
            "lost_gpu_hours",
            "training_lost_gpu_hours",
            "interruption_cost_usd",
            "training_cost_usd",
            "inference_cost_usd",
            "measured_effective_gpu_hours",
            "measured_parts",
            "estimated_parts",
        ):
            setattr(total, name, getattr(total, name) + getattr(row, name))
        total.parts.extend(row.parts)
    return total


# --- curves ------------------------------------------------------------------------------


@dataclass
class HourOfDay:
    hour_of_day: int
    avg_utilization_pct: float | None
    p95_utilization_pct: float | None
    mean_requests_per_hour: float | None
    is_peak: bool


@lru_cache(maxsize=256)
def offset_periods(span: Span, zone_names: tuple[str, ...]) -> tuple[tuple, dict]:
    """Where the span's UTC offsets change: (boundaries, offsets).

    ``boundaries`` are the first whole UTC hours of the span at which any of the zones
    changes its offset (daylight saving); they cut the span into ``len(boundaries) + 1``
    periods in which every zone keeps one offset. ``offsets[zone][period]`` is that offset
    in minutes. A row's local hour is then arithmetic on its UTC hour and its period,
    which PostgreSQL computes far faster than ``AT TIME ZONE`` per row (bench/README.md);
    an hour is assigned by its start instant, as ``AT TIME ZONE`` does.

    Offsets are sampled every 6 hours and a change is located to the hour: zones change
    at most twice a year, never twice within 6 hours.
    """
    zones = [ZoneInfo(name) for name in zone_names]

    def offsets_at(moment):
        return tuple(
            int(moment.astimezone(zone).utcoffset().total_seconds()) // 60 for zone in zones
        )

    boundaries, periods = [], [offsets_at(span.start)]
    last_hour, sample = span.end - ONE_HOUR, span.start
    while sample < last_hour:
        following = min(sample + timedelta(hours=6), last_hour)
        if offsets_at(following) == periods[-1]:
            sample = following
            continue
        sample += ONE_HOUR
        while offsets_at(sample) == periods[-1]:
            sample += ONE_HOUR
        boundaries.append(sample)
        periods.append(offsets_at(sample))
    offsets = {name: [period[index] for period in periods] for index, name in enumerate(zone_names)}
    return tuple(boundaries), offsets


# The RawSQL below (noqa: S611) interpolates only table names from ``_meta`` and fixed
# SQL; every value is a query parameter.


def _period_sql(column: str, boundaries) -> tuple[str, list]:
    """SQL for a row's period (1-based) among ``offset_periods``' boundaries."""
    if not boundaries:
        return "1", []
    return f"(width_bucket({column}, %s::timestamptz[]) + 1)", [list(boundaries)]


def _local_minutes_sql(column: str, span: Span, zone: ZoneInfo) -> tuple[str, list]:
    """SQL for minutes since UTC midnight of the row's day plus its zone offset: a value
    in (−1440, 2880) whose day part shifts the weekday and whose rest gives the hour."""
    boundaries, offsets = offset_periods(span, (zone.key,))
    period, params = _period_sql(column, boundaries)
    sql = f"(date_part('hour', {column})::int * 60 + (%s::int[])[{period}])"
    return sql, [offsets[zone.key], *params]


def local_hour_expression(table: str, span: Span, zone: ZoneInfo):
    """Each row's hour of the day in ``zone``: ``EXTRACT(HOUR FROM hour AT TIME ZONE
    zone)``, by offset arithmetic (``offset_periods``)."""
    minutes, params = _local_minutes_sql(f'"{table}"."hour"', span, zone)
    return RawSQL(f"((({minutes}) + 1440) %% 1440 / 60)", params, output_field=IntegerField())  # noqa: S611


def local_weekday_expression(table: str, span: Span, zone: ZoneInfo):
    """Each row's ISO weekday (1 = Monday) in ``zone``, as ``local_hour_expression``."""
    column = f'"{table}"."hour"'
    minutes, params = _local_minutes_sql(column, span, zone)
    # (minutes + 1440) / 1440 − 1 is the day shift, −1, 0 or 1 (integer division).
    sql = f"((date_part('isodow', {column})::int - 1 + ({minutes} + 1440) / 1440 - 1 + 7) %% 7 + 1)"
    return RawSQL(sql, params, output_field=IntegerField())  # noqa: S611


def _utc_hour_and_period(table: str, span: Span, zone_names):
    """(UTC hour of day, period) expressions for grouping rows of several zones; Python
    maps each group to its zone's local hour (``offset_periods``)."""
    boundaries, offsets = offset_periods(span, tuple(sorted(set(zone_names))))
    column = f'"{table}"."hour"'
    period, params = _period_sql(column, boundaries)
    utc_hour = RawSQL(f"date_part('hour', {column})::int", [], output_field=IntegerField())  # noqa: S611
    return utc_hour, RawSQL(period, params, output_field=IntegerField()), offsets  # noqa: S611


def _local_hour_of(utc_hour: int, offset_minutes: int) -> int:
    return (utc_hour * 60 + offset_minutes) % 1440 // 60


def _sums_by_local_hour(queryset, key: str, zone_of: dict, span: Span, sums: dict):
    """``queryset``'s rows summed by ``key`` and local hour, each key value on the clock of
    its own zone ``zone_of[value]``. Yields (value, local hour, sums).

    One query grouped by UTC hour and daylight-saving period, placed on local hours here
    (``offset_periods``), rather than one query per zone."""
    utc_hour, period, offsets = _utc_hour_and_period(
        queryset.model._meta.db_table, span, tuple(zone_of.values())
    )
    rows = queryset.annotate(utc_hour=utc_hour, period=period).values(key, "utc_hour", "period")
    for row in rows.annotate(**sums):
        offset = offsets[zone_of[row[key]]][row["period"] - 1]
        yield row[key], _local_hour_of(row["utc_hour"], offset), row


@lru_cache(maxsize=256)
def _local_hour_counts(span: Span, zone: ZoneInfo) -> list[int]:
    """How many hours of the span fall on each local hour of the day: per daylight-saving
    period (``offset_periods``), whole days give every hour once, the rest hour by hour."""
    boundaries, offsets = offset_periods(span, (zone.key,))
    edges = [span.start, *boundaries, span.end]
    counts = [0] * 24
    for period, (begin, end) in enumerate(zip(edges, edges[1:], strict=False)):
        offset = offsets[zone.key][period]
        whole_days, rest = divmod(int((end - begin) / ONE_HOUR), 24)
        for utc_hour in range(24):
            counts[_local_hour_of(utc_hour, offset)] += whole_days
        for step in range(rest):
            counts[_local_hour_of((begin + step * ONE_HOUR).hour, offset)] += 1
    return counts


def usage_profile(
    start: datetime,
    end: datetime,
    zone: ZoneInfo,
    *,
    pool: Pool | None = None,
    purpose: str | None = None,
    scope: Scope = EVERYTHING,
) -> list[HourOfDay]:
    """The hour-of-day curve of a pool (or of every pool of a purpose, or of the fleet),
    over the pools in ``scope``: ``/api/v1/usage/profile/``. Two queries."""
    span = Span.of(start, end)
    hourly = PoolHourlyUsage.objects.filter(
        scope.team_filter("pool__team"),
        hour__gte=span.start,
        hour__lt=span.end,
        reporting_gpus__gt=0,
    )
    # Every request served on a pool in scope, as the pool's cost report counts them.
    requests = WorkloadHourlyRequests.objects.filter(
        scope.team_filter("workload__pool__team"), hour__gte=span.start, hour__lt=span.end
    )
    if pool is not None:
        hourly = hourly.filter(pool=pool)
        requests = requests.filter(workload__pool=pool)
    if purpose:  # with a pool too: that pool if it has this purpose, else nothing
        hourly = hourly.filter(pool__purpose=purpose)
        requests = requests.filter(workload__pool__purpose=purpose)
    by_hour = hourly.annotate(
        local_hour=local_hour_expression(PoolHourlyUsage._meta.db_table, span, zone)
    ).values("local_hour")
    # Sums and percentile in one pass.
    sums = {
        "busy": Sum("busy_gpu_hours"),
        "reporting": Sum("reporting_gpus"),
        "p95": PercentileCont("avg_utilization_pct", 0.95),
    }
    utilization = {row["local_hour"]: row for row in by_hour.annotate(**sums)}
    p95 = {hour: row["p95"] for hour, row in utilization.items()}
    request_sums = dict(
        requests.annotate(
            local_hour=local_hour_expression(WorkloadHourlyRequests._meta.db_table, span, zone)
        )
        .values("local_hour")
        .annotate(total=Sum("requests"))
        .values_list("local_hour", "total")
    )
    occurrences = _local_hour_counts(span, zone)
    mean_requests = [
        (request_sums.get(hour, 0) / occurrences[hour]) if occurrences[hour] else None
        for hour in range(24)
    ]
    avg_utilization = [
        costmodel.ratio_or_none(
            utilization[hour]["busy"] if hour in utilization else None,
            utilization[hour]["reporting"] if hour in utilization else None,
            100,
        )
        for hour in range(24)
    ]
    has_requests = any(request_sums.values())
    if pool is not None and pool.peak_hours:
        peak = parse_hour_ranges(pool.peak_hours)
    else:
        peak = costmodel.peak_hours_above_mean(mean_requests if has_requests else avg_utilization)
    return [
        HourOfDay(
            hour_of_day=hour,
            avg_utilization_pct=avg_utilization[hour],
            p95_utilization_pct=p95.get(hour),
            mean_requests_per_hour=mean_requests[hour] if has_requests else None,
            is_peak=hour in peak,
        )
        for hour in range(24)
    ]


def weekday_hour_heatmap(
    start: datetime, end: datetime, zone: ZoneInfo, *, purpose=None, scope: Scope = EVERYTHING
):
    """Mean utilisation (%) by ISO weekday (1 = Monday) × local hour of the pools in
    ``scope``: 7 × 24 values, None where no hour has telemetry. One query."""
    span = Span.of(start, end)
    hourly = PoolHourlyUsage.objects.filter(
        scope.team_filter("pool__team"),
        hour__gte=span.start,
        hour__lt=span.end,
        reporting_gpus__gt=0,
    )
    if purpose:
        hourly = hourly.filter(pool__purpose=purpose)
    grid: list[list[float | None]] = [[None] * 24 for _ in range(7)]
    rows = (
        hourly.annotate(
            weekday=local_weekday_expression(PoolHourlyUsage._meta.db_table, span, zone),
            local_hour=local_hour_expression(PoolHourlyUsage._meta.db_table, span, zone),
        )
        .values("weekday", "local_hour")
        .annotate(busy=Sum("busy_gpu_hours"), reporting=Sum("reporting_gpus"))
    )
    for row in rows:
        grid[row["weekday"] - 1][row["local_hour"]] = costmodel.ratio_or_none(
            row["busy"], row["reporting"], 100
        )
    return grid


@dataclass
class DailySplit:
    days: list[date]
    busy_gpu_hours: dict[str, list[float]]  # purpose → per day
    measured_cost_usd: dict[str, list[Decimal]]


def daily_split(
    start: datetime, end: datetime, *, pool: Pool | None = None, scope: Scope = EVERYTHING
) -> DailySplit:
    """Busy GPU-hours and the cost of measured hours per UTC day and pool purpose, of the
    pools in ``scope``, at the prices in force. Four queries: the price periods, the
    service periods, the daily rows, and the hourly rows of the days a price changed, or
    a service period started or ended, after midnight (an hour the service period starts
    or ends inside of counts for its fraction in service, as the report counts it)."""
    span = Span.of(start, end)
    first, last = span.start.date(), (span.end - ONE_HOUR).date()
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    index = {day: position for position, day in enumerate(days)}
    busy = {value: [0.0] * len(days) for value in Purpose.values}
    cost = {value: [Decimal(0)] * len(days) for value in Purpose.values}
    periods = price_periods_of()
    mid_day_days, mid_day_hours = _mid_day_changes(span, periods)
    edges = service_edge_hours(span, _service_periods_of(None if pool is None else [pool.pk]))
    for pool_id, hour in edges:
        day, hours = _day_read_hour_by_hour(pool_id, hour)
        mid_day_days |= day
        mid_day_hours |= hours
    service_share = _service_share(edges)
    rows = PoolDailyUsage.objects.filter(
        scope.team_filter("pool__team"), day__gte=first, day__lte=last
    ).exclude(mid_day_days)
    # A pool's day with a price change after midnight is summed from its hourly rows.
    hourly = (
        PoolHourlyUsage.objects.filter(
            mid_day_hours, scope.team_filter("pool__team"), in_service_q(), reporting_gpus__gt=0
        )
        .annotate(day_utc=TruncDate("hour", tzinfo=UTC))
        .values("pool__purpose", day=F("day_utc"))
    )
    if pool is not None:
        rows = rows.filter(pool=pool)
        hourly = hourly.filter(pool=pool)
    tdp_kw = F("pool__gpu_model__tdp_watts") / 1000.0
    daily_cost = _price_case("fixed_price_per_gpu_hour_usd", span, periods, _day_on_or_after) * F(
        "measured_capacity_gpu_hours"
    ) + _price_case("price_per_gpu_kwh_usd", span, periods, _day_on_or_after) * (
        F("energy_kwh") + tdp_kw * F("busy_gpu_hours_without_energy")
    )
    hourly_cost = _price_case("fixed_price_per_gpu_hour_usd", span, periods, _hour_on_or_after) * F(
        "capacity_gpu_hours"
    ) + _price_case("price_per_gpu_kwh_usd", span, periods, _hour_on_or_after) * Coalesce(
        "energy_kwh", tdp_kw * F("busy_gpu_hours")
    )
    for row in [
        *rows.values("day", "pool__purpose").annotate(
            busy=Sum("busy_gpu_hours"), cost=Sum(daily_cost, output_field=FloatField())
        ),
        *hourly.annotate(
            busy=Sum(F("busy_gpu_hours") * service_share),
            cost=Sum(hourly_cost * service_share, output_field=FloatField()),
        ),
    ]:
        position = index[row["day"]]
        busy[row["pool__purpose"]][position] += row["busy"] or 0.0
        # A sum per purpose and day, read as the Decimal of its shortest repr.
        cost[row["pool__purpose"]][position] += as_decimal(row["cost"] or 0.0)
    return DailySplit(days, busy, cost)


def fleet_usage_sums(
    start: datetime, end: datetime, scope: Scope = EVERYTHING
) -> tuple[float, float]:
    """(Σ busy, Σ capacity) GPU-hours of the hours with telemetry inside their pool's
    service period, every pool in ``scope``: the same hours for both. One query."""
    span = Span.of(start, end)
    sums = PoolHourlyUsage.objects.filter(
        scope.team_filter("pool__team"),
        in_service_q(),
        hour__gte=span.start,
        hour__lt=span.end,
        reporting_gpus__gt=0,
    ).aggregate(busy=Sum("busy_gpu_hours"), capacity=Sum("capacity_gpu_hours"))
    return sums["busy"] or 0.0, sums["capacity"] or 0.0


def fleet_utilization_pct(
    start: datetime, end: datetime, scope: Scope = EVERYTHING
) -> float | None:
    """100 × Σ busy ÷ Σ capacity of the hours with telemetry, every pool in ``scope``.
    One query."""
    busy, capacity = fleet_usage_sums(start, end, scope)
    return costmodel.ratio_or_none(busy, capacity, 100)


@dataclass
class PeakSplitRow:
    pool: Pool
    peak_hours: frozenset
    peak_hours_configured: bool
    peak_cost_usd: Decimal = Decimal(0)
    offpeak_cost_usd: Decimal = Decimal(0)
    peak_requests: int = 0
    offpeak_requests: int = 0
    peak_tokens: int = 0
    offpeak_tokens: int = 0

    @property
    def peak_cost_per_1k_requests_usd(self):
        return costmodel.cost_per_thousand_requests_usd(self.peak_cost_usd, self.peak_requests)

    @property
    def offpeak_cost_per_1k_requests_usd(self):
        return costmodel.cost_per_thousand_requests_usd(
            self.offpeak_cost_usd, self.offpeak_requests
        )

    @property
    def peak_cost_per_1m_tokens_usd(self):
        return costmodel.cost_per_million_tokens_usd(self.peak_cost_usd, self.peak_tokens)

    @property
    def offpeak_cost_per_1m_tokens_usd(self):
        return costmodel.cost_per_million_tokens_usd(self.offpeak_cost_usd, self.offpeak_tokens)


def peak_split(
    start: datetime, end: datetime, *, purpose=None, pool=None, scope: Scope = EVERYTHING
) -> list[PeakSplitRow]:
    """Cost of measured hours and requests in each pool's peak and off-peak local hours,
    for the pools in ``scope`` that serve requests. Peak hours are the pool's own, else
    the hours whose mean requests are above the daily mean. Five queries."""
    span = Span.of(start, end)
    # Pools with a workload that logged requests in the span: an index probe per workload
    # on (workload, hour), not a join over every request-hour.
    served = WorkloadHourlyRequests.objects.filter(
        workload=OuterRef("pk"), hour__gte=span.start, hour__lt=span.end
    )
    serving = Workload.objects.filter(pool=OuterRef("pk")).filter(Exists(served))
    pools = Pool.objects.select_related("gpu_model").filter(scope.team_filter(), Exists(serving))
    if pool is not None:
        pools = pools.filter(pk=pool.pk)
    if purpose:
        pools = pools.filter(purpose=purpose)
    pools = list(pools.order_by("name"))
    cost_by_hour: dict[int, dict[int, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    requests_by_hour: dict[int, dict[int, list[int]]] = defaultdict(dict)
    ids = [found.id for found in pools]
    zone_of_pool = {found.id: found.timezone or "UTC" for found in pools}
    pool_of_workload = dict(Workload.objects.filter(pool_id__in=ids).values_list("id", "pool_id"))
    # The cost of measured hours as ``pool_usage_totals`` sums it, each hour at the prices
    # in force in it.
    periods = price_periods_of(ids)
    tdp_kw = F("pool__gpu_model__tdp_watts") / 1000.0
    cost_sums = {
        "cost": Coalesce(
            Sum(
                _price_case("fixed_price_per_gpu_hour_usd", span, periods, _hour_on_or_after)
                * F("capacity_gpu_hours")
                + _price_case("price_per_gpu_kwh_usd", span, periods, _hour_on_or_after)
                * Coalesce("energy_kwh", tdp_kw * F("busy_gpu_hours")),
                output_field=FloatField(),
            ),
            _ZERO,
        )
    }

    request_sums = {"total": Sum("requests"), "tokens": Sum(F("input_tokens") + F("output_tokens"))}
    usage = PoolHourlyUsage.objects.filter(
        pool_id__in=ids, hour__gte=span.start, hour__lt=span.end, reporting_gpus__gt=0
    )
    requests = WorkloadHourlyRequests.objects.filter(
        workload_id__in=list(pool_of_workload), hour__gte=span.start, hour__lt=span.end
    )

    def add_requests(pool_id, local_hour, row):
        totals = requests_by_hour[pool_id].setdefault(local_hour, [0, 0])
        totals[0] += row["total"] or 0
        totals[1] += row["tokens"] or 0

    for pool_id, local_hour, row in _sums_by_local_hour(
        usage, "pool_id", zone_of_pool, span, cost_sums
    ):
        # A sum per pool and local hour, read as the Decimal of its shortest repr.
        cost_by_hour[pool_id][local_hour] += as_decimal(row["cost"])
    zone_of_workload = {workload: zone_of_pool[pool] for workload, pool in pool_of_workload.items()}
    for workload_id, local_hour, row in _sums_by_local_hour(
        requests, "workload_id", zone_of_workload, span, request_sums
    ):
        add_requests(pool_of_workload[workload_id], local_hour, row)
    rows = []
    for found in pools:
        zone = ZoneInfo(found.timezone or "UTC")
        occurrences = _local_hour_counts(span, zone)
        per_hour = requests_by_hour[found.id]
        if found.peak_hours:
            peak, configured = parse_hour_ranges(found.peak_hours), True
        else:
            mean = [
                (per_hour.get(hour, [0, 0])[0] / occurrences[hour]) if occurrences[hour] else None
                for hour in range(24)
            ]
            peak, configured = costmodel.peak_hours_above_mean(mean), False
        row = PeakSplitRow(pool=found, peak_hours=peak, peak_hours_configured=configured)
        for hour in range(24):
            cost = cost_by_hour[found.id].get(hour, Decimal(0))
            requests_, tokens = per_hour.get(hour, [0, 0])
            if hour in peak:
                row.peak_cost_usd += cost
                row.peak_requests += requests_
                row.peak_tokens += tokens
            else:
                row.offpeak_cost_usd += cost
                row.offpeak_requests += requests_
                row.offpeak_tokens += tokens
        rows.append(row)
    return rows


def describe_hours(hours) -> str:
    """{8, 9, 10, 20} → "8–10, 20" (hours of the day, both ends included)."""
    ordered = sorted(hours)
    if not ordered:
        return "none"
    parts, first, previous = [], ordered[0], ordered[0]
    for hour in [*ordered[1:], None]:
        if hour is not None and hour == previous + 1:
            previous = hour
            continue
        parts.append(f"{first}" if first == previous else f"{first}–{previous}")
        if hour is not None:
            first = previous = hour
    return ", ".join(parts)
