"""The fleet's utilisation: busy over measured capacity GPU-hours of every pool in a
scope, the Overview's KPIs and the alert rules' windows."""

from datetime import datetime

from django.db.models import Sum

from apps.accounts.scope import EVERYTHING, Scope
from apps.reports.cost import costmodel
from apps.reports.span import Span
from apps.telemetry.models import PoolHourlyUsage
from apps.telemetry.rollups.days import in_service_q


def _measured_hours(start: datetime, end: datetime, scope: Scope, cluster: str | None):
    span = Span.of(start, end)
    hourly = PoolHourlyUsage.objects.filter(
        scope.team_filter("pool__team"),
        in_service_q(),
        hour__gte=span.start,
        hour__lt=span.end,
        reporting_gpus__gt=0,
    )
    return hourly.filter(pool__cluster__slug=cluster) if cluster else hourly


def fleet_usage_sums(
    start: datetime, end: datetime, scope: Scope = EVERYTHING, *, cluster: str | None = None
) -> tuple[float, float]:
    """(Σ busy, Σ capacity) GPU-hours of the hours with telemetry inside their pool's
    service period, every pool in ``scope`` (of the cluster of slug ``cluster``): the
    same hours for both. One query."""
    sums = _measured_hours(start, end, scope, cluster).aggregate(
        busy=Sum("busy_gpu_hours"), capacity=Sum("capacity_gpu_hours")
    )
    return sums["busy"] or 0.0, sums["capacity"] or 0.0


def usage_sums_by_cluster(
    start: datetime, end: datetime, scope: Scope = EVERYTHING
) -> dict[str, tuple[float, float]]:
    """Cluster slug → ``fleet_usage_sums`` of its pools: they add up to the fleet's.
    One query."""
    rows = (
        _measured_hours(start, end, scope, None)
        .values("pool__cluster__slug")
        .annotate(busy=Sum("busy_gpu_hours"), capacity=Sum("capacity_gpu_hours"))
    )
    return {
        row["pool__cluster__slug"]: (row["busy"] or 0.0, row["capacity"] or 0.0) for row in rows
    }


def fleet_utilization_pct(
    start: datetime, end: datetime, scope: Scope = EVERYTHING
) -> float | None:
    """100 × Σ busy ÷ Σ capacity of the hours with telemetry, every pool in ``scope``.
    One query."""
    busy, capacity = fleet_usage_sums(start, end, scope)
    return costmodel.ratio_or_none(busy, capacity, 100)
