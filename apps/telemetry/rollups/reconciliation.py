"""Reconciliation: the pool-hours whose telemetry disagrees with what the pool declares, per
pool and UTC day, with each day's coverage (physical GPUs reporting ÷ GPUs declared).

Reads only: the flags are written by the rollup and the imports (``PoolHourFlag``).
Coverage of a pool-day = Σ over its in-service hours of reporting GPUs ÷ (declared GPUs ×
in-service hours): an hour without any telemetry counts as 0 GPUs reporting, so a day
with half its hours silent reads 50 % even when every reporting hour had all GPUs.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Count, Sum
from django.db.models.functions import TruncDate

from apps.accounts.scope import EVERYTHING
from apps.pools.hours import floor_hour
from apps.pools.models import Pool
from apps.pools.querysets import pool_scope_filter
from apps.telemetry.models import PoolHourFlag, PoolHourlyUsage

_ONE_HOUR = timedelta(hours=1)


@dataclass
class PoolDay:
    pool: Pool
    day: date
    flags: list[PoolHourFlag] = field(default_factory=list)
    reporting_gpu_hours: float = 0.0
    in_service_hours: int = 0

    @property
    def flagged_hours(self) -> int:
        return len({flag.hour for flag in self.flags})

    @property
    def kinds(self) -> dict[str, int]:
        """Hours flagged per kind (its value, as the API names it)."""
        counts: dict[str, int] = defaultdict(int)
        for flag in self.flags:
            counts[flag.kind] += 1
        return dict(counts)

    @property
    def kind_labels(self) -> list[tuple[str, int]]:
        return [(PoolHourFlag.Kind(kind).label, hours) for kind, hours in self.kinds.items()]

    @property
    def declared_gpu_hours(self) -> int:
        return self.pool.gpu_count * self.in_service_hours

    @property
    def coverage_pct(self) -> float | None:
        """100 × reporting GPU-hours ÷ declared GPU-hours; above 100 only with an
        ``over_reported`` flag on the day."""
        if not self.declared_gpu_hours:
            return None
        return 100 * self.reporting_gpu_hours / self.declared_gpu_hours


def in_service_hours_of_day(pool: Pool, day: date) -> int:
    """Whole UTC hours of ``day`` inside the pool's service period (an overlapped hour
    counts, as reports charge it), never beyond the current hour."""
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return _in_service_hours(pool, start, start + timedelta(days=1))


def _in_service_hours(pool: Pool, start: datetime, end: datetime) -> int:
    first_hour, end_hour = pool.service_hours()
    end = min(end, floor_hour(datetime.now(UTC)) + _ONE_HOUR)
    if end_hour is not None:
        end = min(end, end_hour)
    return max(0, int((end - max(start, first_hour)) / _ONE_HOUR))


def flagged_pool_days(
    *, pool: Pool | None = None, kind: str = "", start=None, end=None, scope=EVERYTHING
):
    """(pool id, day) pairs with at least one flag of the pools in ``scope``, newest
    first, as a values queryset (paginated by the caller)."""
    flags = PoolHourFlag.objects.filter(pool_scope_filter(scope, "pool__"))
    if pool is not None:
        flags = flags.filter(pool=pool)
    if kind:
        flags = flags.filter(kind=kind)
    if start is not None:
        flags = flags.filter(hour__gte=start)
    if end is not None:
        flags = flags.filter(hour__lt=end)
    return (
        flags.annotate(day=TruncDate("hour", tzinfo=UTC))
        .values("pool_id", "day")
        .annotate(flag_count=Count("id"))
        .order_by("-day", "pool_id")
    )


def pool_days(keys: list[dict], *, kind: str = "") -> list[PoolDay]:
    """The PoolDay of each (pool id, day) key, flags and coverage read in two queries."""
    if not keys:
        return []
    pool_ids = {key["pool_id"] for key in keys}
    pools = {pool.id: pool for pool in Pool.objects.filter(id__in=pool_ids)}
    days = {
        (key["pool_id"], key["day"]): PoolDay(pools[key["pool_id"]], key["day"]) for key in keys
    }
    first = datetime.combine(min(key["day"] for key in keys), time.min, tzinfo=UTC)
    last = datetime.combine(max(key["day"] for key in keys), time.min, tzinfo=UTC)
    window = {"pool_id__in": pool_ids, "hour__gte": first, "hour__lt": last + timedelta(days=1)}
    flags = PoolHourFlag.objects.filter(**window).order_by("hour", "kind")
    if kind:
        flags = flags.filter(kind=kind)
    for flag in flags:
        pool_day = days.get((flag.pool_id, flag.hour.astimezone(UTC).date()))
        if pool_day is not None:
            pool_day.flags.append(flag)
    reporting = (
        PoolHourlyUsage.objects.filter(**window)
        .annotate(day=TruncDate("hour", tzinfo=UTC))
        .values("pool_id", "day")
        .annotate(reporting=Sum("reporting_gpus"))
    )
    for row in reporting:
        pool_day = days.get((row["pool_id"], row["day"]))
        if pool_day is not None:
            pool_day.reporting_gpu_hours = float(row["reporting"] or 0)
    for pool_day in days.values():
        pool_day.in_service_hours = in_service_hours_of_day(pool_day.pool, pool_day.day)
    return [days[key["pool_id"], key["day"]] for key in keys]


def pool_coverage(pool: Pool, hourly_rows, hours: int = 24) -> tuple[float | None, int, int]:
    """(coverage %, flagged hours, in-service hours) over the pool's last ``hours`` whole
    UTC hours, the current one included, from its hourly rows (dicts with ``hour`` and
    ``reporting_gpus``: the ones its page has read for the utilisation chart)."""
    end = floor_hour(datetime.now(UTC)) + _ONE_HOUR
    start = end - hours * _ONE_HOUR
    in_service = _in_service_hours(pool, start, end)
    reporting = sum(row["reporting_gpus"] for row in hourly_rows if start <= row["hour"] < end)
    flagged = (
        PoolHourFlag.objects.filter(pool=pool, hour__gte=start, hour__lt=end)
        .values("hour")
        .distinct()
        .count()
    )
    declared = pool.gpu_count * in_service
    coverage = 100 * reporting / declared if declared else None
    return coverage, flagged, in_service
