"""The last stages of the rollup pipeline (apps/telemetry/rollups/hourly.py): the workload
attribution of shared pools' hours, from the samples' Kubernetes labels, and the daily sums
of the hourly rollups, recomputed from the hourly rows of the days that changed, so a
retried or repeated call gives the same rows (keyed upserts, as the hourly rollups).
``rebuild_days`` backs the reports page's "recompute" job and ``manage.py rollup_usage
--all``. Once the days are committed ``usage_changed`` tells the readers (the reports
invalidate and warm their figures).
"""

from datetime import UTC, date, datetime, time, timedelta

from django.db import connection, transaction
from django.db.models import Count, F, FloatField, Q, Sum, Value
from django.db.models.functions import Coalesce, Trunc, TruncDate

from apps.pools.models import Workload
from apps.telemetry.mig import DEFAULT_MIG_COMPUTE_SLICES
from apps.telemetry.models import (
    PoolDailyUsage,
    PoolHourlyUsage,
    WorkloadDailyRequests,
    WorkloadHourlyRequests,
    WorkloadHourlyUsage,
)
from apps.telemetry.rollups.retention import samples_held_q
from apps.telemetry.signals import usage_changed

_ZERO = Value(0.0, output_field=FloatField())


def in_service_q(prefix: str = "pool__") -> Q:
    """Hourly rows inside their pool's service period (see Pool.service_hours): hours
    rolled up before the period was narrowed, whose samples are purged, stay stored but
    are not summed."""
    until = f"{prefix}in_service_until"
    return Q(hour__gte=Trunc(f"{prefix}in_service_from", "hour", tzinfo=UTC)) & (
        Q(**{f"{until}__isnull": True}) | Q(hour__lt=F(until))
    )


def days_between(start: datetime, end: datetime) -> list[date]:
    """UTC days that [start, end) touches."""
    first = start.astimezone(UTC).date()
    last = (end - timedelta(microseconds=1)).astimezone(UTC).date()
    return [first + timedelta(days=offset) for offset in range((last - first).days + 1)]


def _day_bounds(days: list[date]) -> tuple[datetime, datetime]:
    return (
        datetime.combine(min(days), time.min, tzinfo=UTC),
        datetime.combine(max(days) + timedelta(days=1), time.min, tzinfo=UTC),
    )


@transaction.atomic
def rollup_pool_days(pool_ids, start: datetime, end: datetime) -> int:
    """Recompute the daily rows of ``pool_ids`` (None: every pool) for the UTC days that
    [start, end) touches. Returns the number of daily rows written."""
    days = days_between(start, end)
    if not days:
        return 0
    day_start, day_end = _day_bounds(days)
    hourly = PoolHourlyUsage.objects.filter(hour__gte=day_start, hour__lt=day_end)
    stale = PoolDailyUsage.objects.filter(day__gte=days[0], day__lte=days[-1])
    if pool_ids is not None:
        hourly = hourly.filter(pool_id__in=list(pool_ids))
        stale = stale.filter(pool_id__in=list(pool_ids))
    rows = (
        hourly.filter(in_service_q())
        .annotate(day=TruncDate("hour", tzinfo=UTC))
        .values("pool_id", "day")
        .annotate(
            measured_hours=Count("id", filter=Q(reporting_gpus__gt=0)),
            measured_capacity_gpu_hours=Coalesce(
                Sum("capacity_gpu_hours", filter=Q(reporting_gpus__gt=0)), _ZERO
            ),
            busy=Coalesce(Sum("busy_gpu_hours"), _ZERO),
            reporting=Coalesce(Sum(F("reporting_gpus") * 1.0), _ZERO),
            energy=Coalesce(Sum("energy_kwh"), _ZERO),
            busy_without_energy=Coalesce(
                Sum("busy_gpu_hours", filter=Q(energy_kwh__isnull=True)), _ZERO
            ),
        )
    )
    daily = [
        PoolDailyUsage(
            pool_id=row["pool_id"],
            day=row["day"],
            measured_hours=row["measured_hours"],
            measured_capacity_gpu_hours=row["measured_capacity_gpu_hours"],
            busy_gpu_hours=row["busy"],
            reporting_gpu_hours=row["reporting"],
            energy_kwh=row["energy"],
            busy_gpu_hours_without_energy=row["busy_without_energy"],
        )
        for row in rows
    ]
    # Days whose hours are all gone (purged rollups, a pool's devices moved) go too.
    stale.delete()
    PoolDailyUsage.objects.bulk_create(daily, batch_size=2000)
    transaction.on_commit(
        lambda: usage_changed.send(sender=PoolDailyUsage, pool_ids=pool_ids, start=start, end=end)
    )
    return len(daily)


@transaction.atomic
def rollup_workload_days(workload_ids, start: datetime, end: datetime) -> int:
    days = days_between(start, end)
    if not days:
        return 0
    day_start, day_end = _day_bounds(days)
    hourly = WorkloadHourlyRequests.objects.filter(hour__gte=day_start, hour__lt=day_end)
    stale = WorkloadDailyRequests.objects.filter(day__gte=days[0], day__lte=days[-1])
    if workload_ids is not None:
        hourly = hourly.filter(workload_id__in=list(workload_ids))
        stale = stale.filter(workload_id__in=list(workload_ids))
    rows = (
        hourly.annotate(day=TruncDate("hour", tzinfo=UTC))
        .values("workload_id", "day")
        .annotate(
            total_requests=Sum("requests"),
            total_input=Sum("input_tokens"),
            total_output=Sum("output_tokens"),
            total_errors=Sum("errors"),
        )
    )
    daily = [
        WorkloadDailyRequests(
            workload_id=row["workload_id"],
            day=row["day"],
            requests=row["total_requests"],
            input_tokens=row["total_input"],
            output_tokens=row["total_output"],
            errors=row["total_errors"],
        )
        for row in rows
    ]
    stale.delete()
    WorkloadDailyRequests.objects.bulk_create(daily, batch_size=2000)
    transaction.on_commit(
        lambda: usage_changed.send(
            sender=WorkloadDailyRequests, workload_ids=workload_ids, start=start, end=end
        )
    )
    return len(daily)


def rebuild_days(start: datetime, end: datetime) -> tuple[int, int]:
    """Every pool's and workload's daily rows for [start, end), from the hourly rows."""
    return rollup_pool_days(None, start, end), rollup_workload_days(None, start, end)


def rebuild_all_days() -> tuple[int, int]:
    """Every daily row from the whole hourly history (``rollup_usage --all``)."""
    PoolDailyUsage.objects.all().delete()
    WorkloadDailyRequests.objects.all().delete()
    bounds = [
        model.objects.order_by(field).values_list("hour", flat=True)
        for model, field in ((PoolHourlyUsage, "hour"), (WorkloadHourlyRequests, "hour"))
    ]
    starts = [qs.first() for qs in bounds]
    ends = [qs.last() for qs in bounds]
    known = [(s, e) for s, e in zip(starts, ends, strict=True) if s is not None]
    if not known:
        return 0, 0
    start = min(s for s, _ in known)
    end = max(e for _, e in known) + timedelta(hours=1)
    return rebuild_days(start, end)


# Per pool and hour range: the utilisation readings of each device-hour by pod labels (raw
# samples, else the device-hours a TSDB aggregated: GpuDeviceHour, which a device-hour
# held in raw samples leaves out, as the pool's rollup does), each pod matched to at most
# one labelled workload of its device's pool, then every device-hour split among
# workloads by sample counts. A device weighs its share of the physical GPU: 1 for a
# whole GPU, held ÷ the model's compute slices for a MIG slice (apps/telemetry/mig.py); a
# whole-GPU line whose slices report in the same hour weighs nothing, as in the pool's
# rollup. Only hours inside the pool's service period are attributed.
ATTRIBUTION_SQL = """
WITH labelled AS (
    SELECT sample.device_id, date_trunc('hour', sample.timestamp) AS hour,
           sample.namespace, sample.pod, COUNT(*) AS samples,
           SUM(sample.utilization_pct) AS utilization_sum
    FROM telemetry_gpusample AS sample
    JOIN telemetry_gpudevice AS device ON device.id = sample.device_id
    WHERE device.pool_id = ANY(%(pools)s) AND sample.timestamp >= %(start)s
      AND sample.timestamp < %(end)s AND sample.utilization_pct IS NOT NULL
    GROUP BY sample.device_id, date_trunc('hour', sample.timestamp), sample.namespace,
             sample.pod
    UNION ALL
    SELECT device_hour.device_id, device_hour.hour, device_hour.namespace, device_hour.pod,
           device_hour.samples, device_hour.utilization_pct * device_hour.samples
    FROM telemetry_gpudevice AS device
    -- Device by device through the (device, hour, …) key, as the pool's rollup reads
    -- them (apps/telemetry/rollups/hourly.py, STORED_DEVICE_HOURS_SQL).
    CROSS JOIN LATERAL (
        SELECT * FROM telemetry_gpudevicehour AS device_hour
        WHERE device_hour.device_id = device.id AND device_hour.hour >= %(start)s
          AND device_hour.hour < %(end)s
        OFFSET 0
    ) AS device_hour
    WHERE device.pool_id = ANY(%(pools)s) AND device_hour.utilization_pct IS NOT NULL
      AND device_hour.samples > 0
      AND NOT EXISTS (
          SELECT 1 FROM telemetry_gpusample AS held
          WHERE held.device_id = device_hour.device_id
            AND held.timestamp >= device_hour.hour
            AND held.timestamp < device_hour.hour + interval '1 hour'
            -- The window's own bounds too, as constants: the planner keeps only the
            -- window's daily partitions, where the hour's bounds alone make every
            -- partition be probed for every device-hour.
            AND held.timestamp >= %(start)s AND held.timestamp < %(end)s + interval '1 hour'
      )
), device_hours AS (
    SELECT device_id, hour, SUM(samples) AS samples
    FROM labelled
    GROUP BY device_id, hour
), sliced AS (
    -- The GPUs (UUIDs) whose MIG slices report in the hour: one hashed lookup per
    -- device-hour, not a scan of every device-hour for each.
    SELECT DISTINCT slice.uuid, device_hours.hour
    FROM device_hours
    JOIN telemetry_gpudevice AS slice ON slice.id = device_hours.device_id
    WHERE slice.gpu_instance_id IS NOT NULL
), weighted AS MATERIALIZED (
    -- Materialized: every device-hour's weight in one pass of hash joins. Inlined, the
    -- planner joins the pools last, on a misestimate of the matched rows, and filters
    -- pools × device-hours pairs one by one.
    SELECT device_hours.device_id, device_hours.hour, device_hours.samples,
           CASE WHEN device.gpu_instance_id IS NOT NULL
                THEN COALESCE(device.mig_compute_slices, 1)::float
                     / COALESCE(model.mig_compute_slices, %(default_slices)s)
                WHEN sliced.uuid IS NOT NULL THEN 0.0
                ELSE 1.0 END AS weight
    FROM device_hours
    JOIN telemetry_gpudevice AS device ON device.id = device_hours.device_id
    LEFT JOIN sliced ON sliced.uuid = device.uuid AND sliced.hour = device_hours.hour
    JOIN pools_pool AS pool ON pool.id = device.pool_id
    JOIN catalog_gpumodel AS model ON model.id = pool.gpu_model_id
    WHERE device_hours.hour >= date_trunc('hour', pool.in_service_from)
      AND (pool.in_service_until IS NULL OR device_hours.hour < pool.in_service_until)
)
INSERT INTO reports_workloadhourlyusage (workload_id, hour, allocated_gpu_hours, busy_gpu_hours)
SELECT matched.workload_id, matched.hour,
       SUM(weighted.weight * matched.samples / weighted.samples),
       SUM(weighted.weight * matched.utilization_sum / 100.0 / weighted.samples)
FROM (
    SELECT labelled.device_id, labelled.hour, owner.id AS workload_id,
           SUM(labelled.samples) AS samples, SUM(labelled.utilization_sum) AS utilization_sum
    FROM labelled
    JOIN telemetry_gpudevice AS device ON device.id = labelled.device_id
    JOIN LATERAL (
        SELECT workload.id FROM pools_workload AS workload
        WHERE workload.pool_id = device.pool_id
          AND (workload.k8s_namespace <> '' OR workload.pod_name_prefix <> '')
          AND (workload.k8s_namespace = '' OR workload.k8s_namespace = labelled.namespace)
          AND (workload.pod_name_prefix = ''
               OR left(labelled.pod, length(workload.pod_name_prefix))
                  = workload.pod_name_prefix)
        ORDER BY length(workload.pod_name_prefix) DESC, length(workload.k8s_namespace) DESC,
                 workload.id
        LIMIT 1
    ) AS owner ON true
    GROUP BY labelled.device_id, labelled.hour, owner.id
) AS matched
JOIN weighted ON weighted.device_id = matched.device_id AND weighted.hour = matched.hour
WHERE weighted.weight > 0
GROUP BY matched.workload_id, matched.hour
"""


def attribute_pool_hours(
    pool_ids, start: datetime, end: datetime, *, released_device_ids=()
) -> int:
    """Recompute the workload attribution of ``pool_ids`` (None: every pool) in
    [start, end), for pools with a labelled workload. Only hours whose raw samples are
    held are rewritten (apps/telemetry/rollups/hourly.py, ``samples_held_q``):
    the attribution of purged hours is kept."""
    labelled = Workload.objects.exclude(k8s_namespace="", pod_name_prefix="")
    if pool_ids is not None:
        labelled = labelled.filter(pool_id__in=list(pool_ids))
    pools = sorted(set(labelled.values_list("pool_id", flat=True)))
    stale = WorkloadHourlyUsage.objects.filter(hour__gte=start, hour__lt=end)
    if pool_ids is not None:
        stale = stale.filter(workload__pool_id__in=list(pool_ids))
    stale.filter(samples_held_q("workload__pool_id", released_device_ids)).delete()
    if not pools:
        return 0
    # Every pool in one statement: each device's rows are found through its own key and
    # its workloads through its own pool, so the pools do not mix.
    with connection.cursor() as cursor:
        cursor.execute(
            ATTRIBUTION_SQL,
            {
                "pools": pools,
                "start": start,
                "end": end,
                "default_slices": DEFAULT_MIG_COMPUTE_SLICES,
            },
        )
        return cursor.rowcount
