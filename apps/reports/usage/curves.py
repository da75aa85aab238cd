"""The fleet's use by local hour: the hour-of-day curve (``usage_profile``) and the
weekday × hour heatmap, over the pools in a scope."""

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from django.db.models import Aggregate, FloatField, Sum

from apps.accounts.scope import EVERYTHING, Scope
from apps.pools.hours import parse_hour_ranges
from apps.pools.models import Pool
from apps.reports.cost import costmodel
from apps.reports.span import Span
from apps.reports.usage.clock import (
    local_hour_counts,
    local_hour_expression,
    local_weekday_expression,
)
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests


class PercentileCont(Aggregate):
    """PostgreSQL's ``percentile_cont(f) WITHIN GROUP (ORDER BY x)``: linear interpolation
    between closest ranks (NumPy's default; Hyndman & Fan 1996, definition 7)."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, fraction: float, **extra):
        super().__init__(expression, fraction=float(fraction), **extra)


@dataclass
class HourOfDay:
    hour_of_day: int
    avg_utilization_pct: float | None
    p95_utilization_pct: float | None
    mean_requests_per_hour: float | None
    is_peak: bool


def usage_profile(
    start: datetime,
    end: datetime,
    zone: ZoneInfo,
    *,
    pool: Pool | None = None,
    purpose: str | None = None,
    cluster: str | None = None,
    scope: Scope = EVERYTHING,
) -> list[HourOfDay]:
    """The hour-of-day curve of a pool (or of every pool of a purpose, or of the fleet),
    over the pools in ``scope`` (and of the cluster of slug ``cluster``):
    ``/api/v1/usage/profile/``. Two queries."""
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
    if cluster:
        hourly = hourly.filter(pool__cluster__slug=cluster)
        requests = requests.filter(workload__pool__cluster__slug=cluster)
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
    occurrences = local_hour_counts(span, zone)
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
    start: datetime,
    end: datetime,
    zone: ZoneInfo,
    *,
    purpose=None,
    cluster: str | None = None,
    scope: Scope = EVERYTHING,
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
    if cluster:
        hourly = hourly.filter(pool__cluster__slug=cluster)
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
