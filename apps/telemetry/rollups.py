"""Hourly rollups, computed in SQL and upserted by key, so recomputing an hour twice
(a retried task, a worker killed halfway) gives the same row (issue 4's definitions):

Per pool and UTC hour [hour, hour + 1 h):
- a GPU's utilization = the mean of its utilization samples in the hour;
- ``reporting_gpus`` = GPUs with at least one utilization sample in the hour;
- ``capacity_gpu_hours`` = the pool's GPU count (× 1 h);
- ``busy_gpu_hours`` = Σ over reporting GPUs of utilization ÷ 100;
- ``avg_utilization_pct`` = 100 × busy_gpu_hours ÷ reporting_gpus;
- ``max_utilization_pct`` = the highest per-GPU hourly mean;
- ``max_memory_used_mib``; ``energy_kwh`` = Σ per GPU of the energy counter's rise within
  the hour (mJ ÷ 3.6·10⁹) where the counter has two readings, else mean power × 1 h.

Per workload and hour: requests, input and output tokens, errors (status not 2xx/ok/
success/empty) and the p95 latency.

Every rollup also rebuilds the daily sums of the UTC days it touched
(apps/reports/rollups.py), in the same transaction, so reports never see one without
the other.
"""

import uuid
from datetime import datetime, timedelta

from django.db import connection, transaction

from apps.reports.rollups import (
    attribute_pool_hours,
    rollup_pool_days,
    rollup_workload_days,
)
from apps.telemetry.models import PendingRollup, PoolHourlyUsage, WorkloadHourlyRequests

MILLIJOULES_PER_KWH = 3.6e9
_ONE_HOUR = timedelta(hours=1)


def _hour_sql(column: str) -> str:
    if connection.vendor == "postgresql":
        return f"date_trunc('hour', {column})"
    # SQLite keeps datetimes as ISO text: cut the minutes off.
    return f"strftime('%%Y-%%m-%%d %%H:00:00', {column})"


POOL_ROLLUP_SQL = """
INSERT INTO telemetry_poolhourlyusage (
    pool_id, hour, reporting_gpus, capacity_gpu_hours, busy_gpu_hours,
    avg_utilization_pct, max_utilization_pct, max_memory_used_mib, energy_kwh
)
SELECT per_gpu.pool_id, per_gpu.hour,
       COUNT(per_gpu.utilization_pct),
       MAX(pool.gpu_count),
       COALESCE(SUM(per_gpu.utilization_pct) / 100.0, 0),
       100.0 * (SUM(per_gpu.utilization_pct) / 100.0) / NULLIF(COUNT(per_gpu.utilization_pct), 0),
       MAX(per_gpu.utilization_pct),
       MAX(per_gpu.max_memory_used_mib),
       SUM(per_gpu.energy_kwh)
FROM (
    SELECT device.pool_id AS pool_id, {hour} AS hour, sample.device_id,
           AVG(sample.utilization_pct) AS utilization_pct,
           MAX(sample.memory_used_mib) AS max_memory_used_mib,
           CASE WHEN COUNT(sample.energy_mj) >= 2
                THEN (MAX(sample.energy_mj) - MIN(sample.energy_mj)) / {mj_per_kwh}
                ELSE AVG(sample.power_w) / 1000.0 END AS energy_kwh
    FROM telemetry_gpusample AS sample
    JOIN telemetry_gpudevice AS device ON device.id = sample.device_id
    WHERE {pool_filter} AND sample.timestamp >= %s AND sample.timestamp < %s
    GROUP BY device.pool_id, {hour}, sample.device_id
) AS per_gpu
JOIN pools_pool AS pool ON pool.id = per_gpu.pool_id
GROUP BY per_gpu.pool_id, per_gpu.hour
ON CONFLICT (pool_id, hour) DO UPDATE SET
    reporting_gpus = excluded.reporting_gpus,
    capacity_gpu_hours = excluded.capacity_gpu_hours,
    busy_gpu_hours = excluded.busy_gpu_hours,
    avg_utilization_pct = excluded.avg_utilization_pct,
    max_utilization_pct = excluded.max_utilization_pct,
    max_memory_used_mib = excluded.max_memory_used_mib,
    energy_kwh = excluded.energy_kwh
"""


@transaction.atomic
def rollup_pool_hours(pool_id: int, start: datetime, end: datetime) -> int:
    """Recompute every hour of one pool in [start, end): hours whose samples are gone
    (purged, or devices moved to another pool) are deleted, so the result equals a
    rollup from scratch. Returns the number of hourly rows written."""
    PoolHourlyUsage.objects.filter(pool_id=pool_id, hour__gte=start, hour__lt=end).delete()
    written = _insert_pool_hours("device.pool_id = %s", [pool_id, start, end])
    attribute_pool_hours([pool_id], start, end)
    rollup_pool_days([pool_id], start, end)
    return written


@transaction.atomic
def rollup_all_pool_hours(start: datetime, end: datetime) -> int:
    """``rollup_pool_hours`` for every pool at once: one scan of the samples instead of
    one per pool (bench/telemetry.py: 2.0× → 0.9× a hand-written GROUP BY)."""
    PoolHourlyUsage.objects.filter(hour__gte=start, hour__lt=end).delete()
    written = _insert_pool_hours("device.pool_id IS NOT NULL", [start, end])
    attribute_pool_hours(None, start, end)
    rollup_pool_days(None, start, end)
    return written


def _insert_pool_hours(pool_filter: str, params: list) -> int:
    sql = POOL_ROLLUP_SQL.format(
        hour=_hour_sql("sample.timestamp"),
        mj_per_kwh=MILLIJOULES_PER_KWH,
        pool_filter=pool_filter,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def p95(values: list[float]) -> float | None:
    """95th percentile with linear interpolation between closest ranks (NumPy's default,
    PostgreSQL's percentile_cont): rank = 0.95 × (n − 1)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = 0.95 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


OK_STATUSES = ("", "ok", "success", "succeeded", "200", "201", "204")


@transaction.atomic
def rollup_workload_hours(workload_id: int, start: datetime, end: datetime) -> int:
    """Requests per workload and hour; the p95 in SQL on PostgreSQL (percentile_cont)."""
    WorkloadHourlyRequests.objects.filter(
        workload_id=workload_id, hour__gte=start, hour__lt=end
    ).delete()
    hour = _hour_sql("timestamp")
    statuses = ", ".join(["%s"] * len(OK_STATUSES))
    if connection.vendor == "postgresql":
        p95_sql = "percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)"
    else:
        p95_sql = "NULL"
    sql = f"""
        INSERT INTO telemetry_workloadhourlyrequests (
            workload_id, hour, requests, input_tokens, output_tokens, errors, p95_latency_ms
        )
        SELECT workload_id, {hour}, SUM(count), SUM(input_tokens * count),
               SUM(output_tokens * count),
               SUM(CASE WHEN LOWER(status) IN ({statuses}) THEN 0 ELSE count END),
               {p95_sql}
        FROM telemetry_requestsample
        WHERE workload_id = %s AND timestamp >= %s AND timestamp < %s
        GROUP BY workload_id, {hour}
    """  # noqa: S608 - only our own SQL fragments are formatted in
    with connection.cursor() as cursor:
        cursor.execute(sql, [*OK_STATUSES, workload_id, start, end])
        written = cursor.rowcount
    if connection.vendor != "postgresql":
        _fill_p95_in_python(workload_id, start, end)
    rollup_workload_days([workload_id], start, end)
    return written


def _fill_p95_in_python(workload_id, start, end):
    from apps.telemetry.models import RequestSample
    from apps.telemetry.services import hour_of

    latencies: dict = {}
    samples = RequestSample.objects.filter(
        workload_id=workload_id,
        timestamp__gte=start,
        timestamp__lt=end,
        latency_ms__isnull=False,
    ).values_list("timestamp", "latency_ms")
    for timestamp, latency in samples:
        latencies.setdefault(hour_of(timestamp), []).append(latency)
    for row in WorkloadHourlyRequests.objects.filter(
        workload_id=workload_id, hour__gte=start, hour__lt=end
    ):
        row.p95_latency_ms = p95(latencies.get(row.hour, []))
        row.save(update_fields=["p95_latency_ms"])


def hour_ranges(hours) -> list[tuple[datetime, datetime]]:
    """Contiguous runs of hours as [start, end) ranges: 10:00, 11:00, 14:00 → two ranges."""
    ranges: list[list[datetime]] = []
    for hour in sorted(set(hours)):
        if ranges and ranges[-1][1] == hour:
            ranges[-1][1] = hour + _ONE_HOUR
        else:
            ranges.append([hour, hour + _ONE_HOUR])
    return [(start, end) for start, end in ranges]


def queue_pool_hours(pool_hours) -> None:
    """Queue (pool id, hour) pairs for ``rollup_pending``, in the caller's transaction.

    One ``INSERT … ON CONFLICT (pool_id, hour) DO UPDATE SET token = excluded.token``:
    a pool-hour is queued once however often it is touched, and a fresh token tells the
    drain it was touched again. Rows go in (pool, hour) order, so two imports touching
    the same pool-hours lock them in the same order and cannot deadlock.
    """
    PendingRollup.objects.bulk_create(
        [
            PendingRollup(pool_id=pool_id, hour=hour, token=uuid.uuid4())
            for pool_id, hour in sorted(pool_hours)
        ],
        update_conflicts=True,
        unique_fields=["pool", "hour"],
        update_fields=["token"],
    )


def rollup_pending() -> tuple[int, int]:
    """Roll up every queued pool-hour, then unqueue exactly the rows that were read;
    returns (pool-hours unqueued, hourly rows written).

    Samples committed before the queue is read are in the rollup, which reads them
    afterwards. An import committing later either queued a row this drain never saw, or
    replaced the token of a row it did see; neither is deleted, so the next drain rolls
    that hour up again. A drain killed halfway leaves its rows queued: recomputing an
    hour is idempotent. Each pool's contiguous hours are one ``rollup_pool_hours``
    transaction that also unqueues them, row by row in (pool, hour) order, the order
    ``queue_pool_hours`` locks them in.
    """
    pending = list(
        PendingRollup.objects.order_by("pool_id", "hour").values_list("pool_id", "hour", "token")
    )
    tokens: dict[tuple[int, datetime], uuid.UUID] = {
        (pool_id, hour): token for pool_id, hour, token in pending
    }
    by_pool: dict[int, list[datetime]] = {}
    for pool_id, hour, _token in pending:
        by_pool.setdefault(pool_id, []).append(hour)
    written = 0
    for pool_id, hours in by_pool.items():
        for start, end in hour_ranges(hours):
            with transaction.atomic():
                written += rollup_pool_hours(pool_id, start, end)
                hour = start
                while hour < end:
                    PendingRollup.objects.filter(token=tokens[pool_id, hour]).delete()
                    hour += _ONE_HOUR
    return len(pending), written


def rollup_everything() -> tuple[int, int]:
    """From scratch, for every pool and workload with data: (pool rows, workload rows)."""
    from django.db.models import Max, Min

    from apps.telemetry.models import GpuSample, RequestSample
    from apps.telemetry.services import hour_of

    pool_rows = workload_rows = 0
    # The span of all raw samples (two probes of the timestamp index): raw samples are purged
    # by age for every pool alike, so inside it every pool's hours can be recomputed, and
    # the hourly rows before it, whose samples are gone, are kept.
    span = GpuSample.objects.aggregate(first=Min("timestamp"), last=Max("timestamp"))
    if span["first"] is not None:
        end = hour_of(span["last"]) + _ONE_HOUR
        pool_rows += rollup_all_pool_hours(hour_of(span["first"]), end)
    spans = RequestSample.objects.values("workload_id").annotate(
        first=Min("timestamp"), last=Max("timestamp")
    )
    for span in spans:
        end = hour_of(span["last"]) + _ONE_HOUR
        workload_rows += rollup_workload_hours(span["workload_id"], hour_of(span["first"]), end)
    return pool_rows, workload_rows
