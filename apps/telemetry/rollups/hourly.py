"""Hourly rollups, computed in SQL and upserted by key, so recomputing an hour twice
(a retried task, a worker killed halfway) gives the same row.

Per pool and UTC hour [hour, hour + 1 h), inside the pool's service period (an hour counts
from the hour ``in_service_from`` falls in, up to ``in_service_until``):
- a device's utilization = the mean of its utilization samples in the hour;
- a physical GPU is one UUID. When MIG slices of it report, its busy share is Σ over
  slices of utilization ÷ 100 × held ÷ the model's compute slices (apps/telemetry/mig.py)
  and the whole-GPU line is not added again; otherwise the whole-GPU line's
  utilization ÷ 100. A GPU's share never exceeds 1: slices adding up to more are counted
  as 1 and the hour is flagged;
- ``reporting_gpus`` = physical GPUs with a utilization reading in the hour;
- ``capacity_gpu_hours`` = the pool's GPU count (× 1 h);
- ``busy_gpu_hours`` = Σ of the GPUs' shares, at most the capacity (more GPUs reporting
  than declared is counted as the capacity and flagged);
- ``avg_utilization_pct`` = 100 × Σ shares ÷ reporting_gpus; ``max_utilization_pct`` =
  100 × the highest share;
- ``max_memory_used_mib`` per GPU (the whole-GPU line, else the sum of its slices);
  ``energy_kwh`` = Σ per GPU of the energy counter's rise within the hour (mJ ÷ 3.6·10⁹)
  where the counter has two readings, else mean power × 1 h (the whole-GPU line's, else
  one slice's: slices repeat their GPU's counter).

Each recompute also rewrites the hour's ``PoolHourFlag`` rows of the kinds derived from
samples (``PoolHourFlag.ROLLUP_KINDS``): more GPUs than declared, whole-GPU and slice
lines both reporting, slices above 100 %, GPUs in MIG mode that nvidia-smi cannot
measure, samples outside the service period (kept, never charged).

Per workload and hour: requests, input and output tokens, errors (status not 2xx/ok/
success/empty) and the p95 latency.

Every rollup also rebuilds the daily sums of the UTC days it touched
(apps/telemetry/rollups/days.py), in the same transaction, so reports never see one without
the other.

Every channel (upload, API, command line, pull) queues the hours it touched
(``queue_pool_hours``, ``queue_workload_hours``) in its import's transaction, and one
drain (``rollup_pending``) rolls them up: device-hours, pool-hours, workload attribution,
days, in one transaction per owner and contiguous hour range.

Device-hours come from raw samples or, for a TSDB pulled hourly, from the stored
``GpuDeviceHour`` rows (apps/telemetry/pull/tsdb.py), never both for one device-hour.

History is permanent: raw samples are purged after TELEMETRY_RAW_RETENTION_DAYS and the
hourly rows are then the only record, so a recompute deletes or rewrites a pool-hour (its
rollup-kind flags, its workload attribution) only where raw samples or stored device-hours
of that pool's devices are held for that hour (stored device-hours are never purged);
every other hour in the range stays exactly as it is, whatever the range. Samples follow
their device: when devices move to another pool, the pool they left names them
(``released_device_ids``) so its hours that held only their samples are rebuilt too, and
the hours move with the devices. Workload request hours follow the same rule with their
request samples.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Exists, Max, Min, OuterRef

from apps.core.outbox import enqueue
from apps.pools.hours import floor_hour
from apps.telemetry.mig import DEFAULT_MIG_COMPUTE_SLICES
from apps.telemetry.models import (
    GpuDeviceHour,
    GpuSample,
    PendingRollup,
    PendingWorkloadRollup,
    PoolHourFlag,
    PoolHourlyUsage,
    RequestSample,
    WorkloadHourlyRequests,
)
from apps.telemetry.rollups.days import (
    attribute_pool_hours,
    rollup_pool_days,
    rollup_workload_days,
)
from apps.telemetry.rollups.retention import samples_held_q

MILLIJOULES_PER_KWH = 3.6e9
# Rounding slack: seven 1g slices at 100 % add up to 1.0000000000000002.
_SHARE_TOLERANCE = 1e-9
_ONE_HOUR = timedelta(hours=1)


def _hour_sql(column: str) -> str:
    return f"date_trunc('hour', {column})"


# One row per physical GPU (UUID) and hour, with what the usage row and the flags need.
GPU_HOURS_SQL = """
SELECT device.pool_id, per_device.hour, device.uuid,
       CASE WHEN per_device.hour >= {service_start}
                 AND (pool.in_service_until IS NULL OR per_device.hour < pool.in_service_until)
            THEN 1 ELSE 0 END AS in_service,
       MAX(pool.gpu_count) AS declared_gpus,
       SUM(per_device.samples) AS samples,
       MAX(CASE WHEN device.gpu_instance_id IS NULL THEN per_device.utilization_pct END)
           AS whole_utilization_pct,
       COUNT(CASE WHEN device.gpu_instance_id IS NOT NULL THEN per_device.utilization_pct END)
           AS slices_reporting,
       SUM(CASE WHEN device.gpu_instance_id IS NOT NULL
                THEN per_device.utilization_pct / 100.0
                     * COALESCE(device.mig_compute_slices, 1) END)
           / COALESCE(MAX(model.mig_compute_slices), {default_slices}) AS slices_share,
       COALESCE(
           MAX(CASE WHEN device.gpu_instance_id IS NULL THEN per_device.max_memory_used_mib END),
           SUM(CASE WHEN device.gpu_instance_id IS NOT NULL
                    THEN per_device.max_memory_used_mib END)
       ) AS max_memory_used_mib,
       COALESCE(MAX(CASE WHEN device.gpu_instance_id IS NULL THEN per_device.energy_kwh END),
                MAX(CASE WHEN device.gpu_instance_id IS NOT NULL THEN per_device.energy_kwh END))
           AS energy_kwh,
       MAX(CASE WHEN device.gpu_instance_id IS NULL AND device.mig_mode_enabled
                     AND per_device.utilization_pct IS NULL THEN 1 ELSE 0 END)
           AS mig_unmeasurable
FROM (
    SELECT sample.device_id, {hour} AS hour,
           AVG(sample.utilization_pct) AS utilization_pct,
           COUNT(*) AS samples,
           MAX(sample.memory_used_mib) AS max_memory_used_mib,
           CASE WHEN COUNT(sample.energy_mj) >= 2
                THEN (MAX(sample.energy_mj) - MIN(sample.energy_mj)) / {mj_per_kwh}
                ELSE AVG(sample.power_w) / 1000.0 END AS energy_kwh
    FROM telemetry_gpusample AS sample
    JOIN telemetry_gpudevice AS device ON device.id = sample.device_id
    WHERE {pool_filter} AND sample.timestamp >= %s AND sample.timestamp < %s
    GROUP BY sample.device_id, {hour}
    UNION ALL
{stored_device_hours}
) AS per_device
JOIN telemetry_gpudevice AS device ON device.id = per_device.device_id
JOIN pools_pool AS pool ON pool.id = device.pool_id
JOIN catalog_gpumodel AS model ON model.id = pool.gpu_model_id
GROUP BY device.pool_id, per_device.hour, device.uuid, pool.in_service_from,
         pool.in_service_until
"""

# The device-hours a TSDB aggregated (GpuDeviceHour), one row per device and hour as the
# raw samples' above: a device-hour split over several pods is put back together, its mean
# weighted by each pod's samples and its energy the sum of the pods' counter increases
# (else their mean power × 1 h). A device-hour that raw samples hold is taken from them
# alone, so a GPU fed by both channels is never counted twice.
STORED_DEVICE_HOURS_SQL = """
    SELECT device.id AS device_id, stored.*
    FROM (SELECT device.id FROM telemetry_gpudevice AS device WHERE {pool_filter}) AS device
    -- Device by device, through the (device, hour, …) key: whatever the planner's
    -- statistics say about the newest hours, a pool's rollup reads its own devices'
    -- rows, never the whole fleet's hour.
    CROSS JOIN LATERAL (
        SELECT {hour} AS hour,
               SUM(device_hour.utilization_pct * device_hour.samples)
                   / NULLIF(SUM(CASE WHEN device_hour.utilization_pct IS NOT NULL
                                     THEN device_hour.samples END), 0) AS utilization_pct,
               SUM(device_hour.samples) AS samples,
               MAX(device_hour.max_memory_used_mib) AS max_memory_used_mib,
               CASE WHEN COUNT(device_hour.energy_kwh) > 0 THEN SUM(device_hour.energy_kwh)
                    ELSE COALESCE(
                        SUM(device_hour.power_w * device_hour.samples)
                            / NULLIF(SUM(CASE WHEN device_hour.power_w IS NOT NULL
                                              THEN device_hour.samples END), 0),
                        AVG(device_hour.power_w)) / 1000.0 END AS energy_kwh
        FROM telemetry_gpudevicehour AS device_hour
        WHERE device_hour.device_id = device.id
          AND device_hour.hour >= %s AND device_hour.hour < %s
          AND NOT EXISTS (
              SELECT 1 FROM telemetry_gpusample AS held
              WHERE held.device_id = device_hour.device_id
                AND held.timestamp >= device_hour.hour AND held.timestamp < {hour_end}
                -- The window's own bounds too, as constants: the planner keeps only the
                -- window's daily partitions, where the hour's bounds alone make every
                -- partition be probed for every device-hour.
                AND held.timestamp >= %s AND held.timestamp < %s + interval '1 hour'
          )
        GROUP BY {hour}
    ) AS stored
"""


def hour_end_sql(column: str) -> str:
    """``column`` + 1 hour, for a column holding a whole UTC hour."""
    return f"{column} + interval '1 hour'"


# A GPU's busy share: its slices' when any reports, else its whole-GPU line's; at most 1;
# NULL when neither reports (PostgreSQL's LEAST would skip the NULL and say 1).
_GPU_SHARE = """CASE WHEN slices_reporting > 0 THEN
                     CASE WHEN slices_share > 1.0 THEN 1.0 ELSE slices_share END
                     ELSE whole_utilization_pct / 100.0 END"""

POOL_ROLLUP_SQL = """
INSERT INTO telemetry_poolhourlyusage (
    pool_id, hour, reporting_gpus, capacity_gpu_hours, busy_gpu_hours,
    avg_utilization_pct, max_utilization_pct, max_memory_used_mib, energy_kwh
)
SELECT pool_id, hour,
       COUNT({share}),
       MAX(declared_gpus),
       CASE WHEN SUM({share}) > MAX(declared_gpus) THEN MAX(declared_gpus) * 1.0
            ELSE COALESCE(SUM({share}), 0) END,
       100.0 * SUM({share}) / NULLIF(COUNT({share}), 0),
       100.0 * MAX({share}),
       MAX(max_memory_used_mib),
       SUM(energy_kwh)
FROM rollup_gpu_hours
WHERE in_service = 1
GROUP BY pool_id, hour
ON CONFLICT (pool_id, hour) DO UPDATE SET
    reporting_gpus = excluded.reporting_gpus,
    capacity_gpu_hours = excluded.capacity_gpu_hours,
    busy_gpu_hours = excluded.busy_gpu_hours,
    avg_utilization_pct = excluded.avg_utilization_pct,
    max_utilization_pct = excluded.max_utilization_pct,
    max_memory_used_mib = excluded.max_memory_used_mib,
    energy_kwh = excluded.energy_kwh
"""

# Per pool-hour: what each rollup-derived flag needs; only pool-hours with one are kept.
FLAG_SUMS_SQL = """
SELECT * FROM (
    SELECT pool_id, hour, MAX(declared_gpus) AS declared_gpus,
           SUM(in_service * CASE WHEN {share} IS NOT NULL THEN 1 ELSE 0 END) AS reporting_gpus,
           SUM(in_service * COALESCE({share}, 0)) AS busy_gpu_hours,
           SUM(in_service * CASE WHEN slices_reporting > 0
                                      AND whole_utilization_pct IS NOT NULL
                                 THEN 1 ELSE 0 END) AS mig_conflict_gpus,
           SUM(in_service * CASE WHEN slices_share > 1.0 + {tolerance} THEN 1 ELSE 0 END)
               AS over_busy_gpus,
           MAX(in_service * CASE WHEN slices_share > 1.0 + {tolerance} THEN slices_share END)
               AS max_slices_share,
           SUM(in_service * mig_unmeasurable) AS mig_unmeasurable_gpus,
           SUM(1 - in_service) AS outside_gpus,
           SUM((1 - in_service) * samples) AS outside_samples
    FROM rollup_gpu_hours
    GROUP BY pool_id, hour
) AS sums
WHERE reporting_gpus > declared_gpus OR mig_conflict_gpus > 0 OR over_busy_gpus > 0
   OR mig_unmeasurable_gpus > 0 OR outside_gpus > 0
"""

# One statement, no temporary table to create and drop per rollup; the count of usage
# rows written rides on every flag row (or alone, on a row of NULLs).
ONE_STATEMENT_SQL = """
WITH rollup_gpu_hours AS MATERIALIZED ({gpu_hours}),
written AS ({pool_rollup} RETURNING 1),
flags AS ({flag_sums})
SELECT (SELECT COUNT(*) FROM written), flags.*
FROM (SELECT 1) AS one LEFT JOIN flags ON true
"""


def _delete_rebuildable_hours(pool_ids, start, end, released_device_ids=()) -> None:
    """Delete the pool-hours (and their rollup-kind flags) in [start, end) that the
    samples held can rebuild; ``pool_ids`` None: every pool."""
    held = samples_held_q(released_device_ids=released_device_ids)
    for model, extra in (
        (PoolHourlyUsage, {}),
        (PoolHourFlag, {"kind__in": PoolHourFlag.ROLLUP_KINDS}),
    ):
        rows = model.objects.filter(hour__gte=start, hour__lt=end, **extra)
        if pool_ids is not None:
            rows = rows.filter(pool_id__in=list(pool_ids))
        rows.filter(held).delete()


# Keys of the PostgreSQL advisory locks that keep two rollups of one pool from
# interleaving: each deletes the hours it rebuilds, then inserts them, so a second one
# in between would insert rows (hours, flags) the first inserts too, and fail on their
# unique keys. Per-pool rollups share the fleet key; a rollup of every pool takes it alone.
_FLEET_ROLLUP_LOCK = 7_310_000
_POOL_ROLLUP_LOCK = 7_310_001


def _serialize_rollups(pool_id: int | None) -> None:
    """Wait, until this transaction ends, for any other rollup of ``pool_id`` (None: of
    any pool)."""
    with connection.cursor() as cursor:
        if pool_id is None:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_FLEET_ROLLUP_LOCK])
        else:
            cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [_FLEET_ROLLUP_LOCK])
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s::integer, %s::integer)",
                [_POOL_ROLLUP_LOCK, pool_id],
            )


@transaction.atomic
def rollup_pool_hours(
    pool_id: int, start: datetime, end: datetime, *, released_device_ids=()
) -> int:
    """Recompute the hours of one pool in [start, end) that hold raw samples, so a rerun
    gives the same rows; an hour with no samples held (purged) keeps its row and flags.
    ``released_device_ids``: devices that just left the pool, whose samples' hours are
    rebuilt without them. Another rollup of the pool waits for this one's commit.
    Returns the number of hourly rows written."""
    _serialize_rollups(pool_id)
    _delete_rebuildable_hours([pool_id], start, end, released_device_ids)
    written = _insert_pool_hours("device.pool_id = %s", [pool_id, start, end])
    attribute_pool_hours([pool_id], start, end, released_device_ids=released_device_ids)
    rollup_pool_days([pool_id], start, end)
    return written


@transaction.atomic
def rollup_pools_hours(pool_ids, start: datetime, end: datetime) -> int:
    """``rollup_pool_hours`` for several pools at once: one statement for all of them,
    where one per pool would plan and run the same statement again for each (an hourly
    pull of a whole fleet queues every pool's hour). Waits for, and holds off, every other
    rollup until its commit, as ``rollup_all_pool_hours``. Returns hourly rows written."""
    pool_ids = sorted(set(pool_ids))
    _serialize_rollups(None)
    _delete_rebuildable_hours(pool_ids, start, end)
    written = _insert_pool_hours("device.pool_id = ANY(%s)", [pool_ids, start, end])
    attribute_pool_hours(pool_ids, start, end)
    rollup_pool_days(pool_ids, start, end)
    return written


@transaction.atomic
def rollup_all_pool_hours(start: datetime, end: datetime) -> int:
    """``rollup_pool_hours`` for every pool at once: one scan of the samples instead of
    one per pool (bench/telemetry.py: 0.9× a hand-written GROUP BY). Waits for, and holds
    off, every per-pool rollup until its commit."""
    _serialize_rollups(None)
    _delete_rebuildable_hours(None, start, end)
    written = _insert_pool_hours("device.pool_id IS NOT NULL", [start, end])
    attribute_pool_hours(None, start, end)
    rollup_pool_days(None, start, end)
    return written


def _insert_pool_hours(pool_filter: str, params: list) -> int:
    """One scan of the samples into per-GPU-hours, then the usage rows and the flags from
    them, in a single statement."""
    stored_device_hours = STORED_DEVICE_HOURS_SQL.format(
        hour=_hour_sql("device_hour.hour"),
        hour_end=hour_end_sql("device_hour.hour"),
        pool_filter=pool_filter,
    )
    gpu_hours = GPU_HOURS_SQL.format(
        hour=_hour_sql("sample.timestamp"),
        service_start=_hour_sql("pool.in_service_from"),
        default_slices=DEFAULT_MIG_COMPUTE_SLICES,
        mj_per_kwh=MILLIJOULES_PER_KWH,
        pool_filter=pool_filter,
        stored_device_hours=stored_device_hours,
    )
    # The raw samples' filter, then the stored device-hours' same filter, then its window
    # again for the held samples (``params`` ends with the window's start and end).
    params = params + params + params[-2:]
    pool_rollup = POOL_ROLLUP_SQL.format(share=_GPU_SHARE)
    flag_sums = FLAG_SUMS_SQL.format(share=_GPU_SHARE, tolerance=_SHARE_TOLERANCE)
    with connection.cursor() as cursor:
        cursor.execute(
            ONE_STATEMENT_SQL.format(
                gpu_hours=gpu_hours, pool_rollup=pool_rollup, flag_sums=flag_sums
            ),
            params,
        )
        rows = cursor.fetchall()
    written = rows[0][0]
    sums = [row[1:] for row in rows if row[1] is not None]
    flags = [flag for row in sums for flag in _flags_of(_FlagSums(*row))]
    PoolHourFlag.objects.bulk_create(flags, batch_size=2000)
    return written


@dataclass
class _FlagSums:
    pool_id: int
    hour: datetime
    declared_gpus: int
    reporting_gpus: int
    measured_busy_gpu_hours: float
    mig_conflict_gpus: int
    over_busy_gpus: int
    max_slices_share: float | None
    mig_unmeasurable_gpus: int
    outside_gpus: int
    outside_samples: int


def _flags_of(sums: _FlagSums) -> list[PoolHourFlag]:
    """The flags of one pool-hour, each with a sentence that gives its numbers."""
    hour = sums.hour
    Kind = PoolHourFlag.Kind
    flags = []

    def flag(kind, gpus, samples, detail):
        flags.append(
            PoolHourFlag(
                pool_id=sums.pool_id,
                hour=hour,
                kind=kind,
                gpus=gpus,
                samples=samples,
                detail=detail,
            )
        )

    if sums.reporting_gpus > sums.declared_gpus:
        counted = min(sums.measured_busy_gpu_hours, sums.declared_gpus)
        flag(
            Kind.OVER_REPORTED,
            sums.reporting_gpus,
            0,
            PoolHourFlag.detail_for(
                Kind.OVER_REPORTED,
                reporting=sums.reporting_gpus,
                declared=sums.declared_gpus,
                measured=f"{sums.measured_busy_gpu_hours:.2f}",
                counted=f"{counted:.2f}",
            ),
        )
    if sums.mig_conflict_gpus:
        flag(
            Kind.MIG_CONFLICT,
            sums.mig_conflict_gpus,
            0,
            PoolHourFlag.detail_for(Kind.MIG_CONFLICT, gpus=sums.mig_conflict_gpus),
        )
    if sums.over_busy_gpus:
        flag(
            Kind.OVER_BUSY,
            sums.over_busy_gpus,
            0,
            PoolHourFlag.detail_for(
                Kind.OVER_BUSY,
                gpus=sums.over_busy_gpus,
                share=f"{100 * (sums.max_slices_share or 0):.1f}",
            ),
        )
    if sums.mig_unmeasurable_gpus:
        flag(
            Kind.MIG_UNMEASURABLE,
            sums.mig_unmeasurable_gpus,
            0,
            PoolHourFlag.detail_for(Kind.MIG_UNMEASURABLE, gpus=sums.mig_unmeasurable_gpus),
        )
    if sums.outside_gpus:
        flag(
            Kind.OUTSIDE_SERVICE,
            sums.outside_gpus,
            sums.outside_samples,
            PoolHourFlag.detail_for(
                Kind.OUTSIDE_SERVICE, samples=sums.outside_samples, gpus=sums.outside_gpus
            ),
        )
    return flags


OK_STATUSES = ("", "ok", "success", "succeeded", "200", "201", "204")


@transaction.atomic
def rollup_workload_hours(workload_id: int, start: datetime, end: datetime) -> int:
    """Requests per workload and hour, the p95 latency by ``percentile_cont`` (linear
    interpolation between closest ranks, NumPy's default).
    Only hours whose request samples are held are deleted and rewritten."""
    WorkloadHourlyRequests.objects.filter(
        workload_id=workload_id, hour__gte=start, hour__lt=end
    ).filter(
        Exists(
            RequestSample.objects.filter(
                workload_id=OuterRef("workload_id"),
                timestamp__gte=OuterRef("hour"),
                timestamp__lt=OuterRef("hour") + _ONE_HOUR,
            )
        )
    ).delete()
    hour = _hour_sql("timestamp")
    statuses = ", ".join(["%s"] * len(OK_STATUSES))
    sql = f"""
        INSERT INTO telemetry_workloadhourlyrequests (
            workload_id, hour, requests, input_tokens, output_tokens, errors, p95_latency_ms
        )
        SELECT workload_id, {hour}, SUM(count), SUM(input_tokens * count),
               SUM(output_tokens * count),
               SUM(CASE WHEN LOWER(status) IN ({statuses}) THEN 0 ELSE count END),
               percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)
        FROM telemetry_requestsample
        WHERE workload_id = %s AND timestamp >= %s AND timestamp < %s
        GROUP BY workload_id, {hour}
    """  # noqa: S608 - only our own SQL fragments are formatted in
    with connection.cursor() as cursor:
        cursor.execute(sql, [*OK_STATUSES, workload_id, start, end])
        written = cursor.rowcount
    rollup_workload_days([workload_id], start, end)
    return written


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
    """Queue (pool id, hour) pairs for the drain, in the caller's transaction."""
    _queue(PendingRollup, "pool", pool_hours)


def queue_workload_hours(workload_hours) -> None:
    """Queue (workload id, hour) pairs for the drain, in the caller's transaction."""
    _queue(PendingWorkloadRollup, "workload", workload_hours)


def _queue(model, owner: str, owner_hours) -> None:
    """One ``INSERT … ON CONFLICT (owner, hour) DO UPDATE SET token = excluded.token``:
    an hour is queued once however often it is touched, and a fresh token tells the
    drain it was touched again. Rows go in (owner, hour) order, so two imports touching
    the same hours lock them in the same order and cannot deadlock."""
    model.objects.bulk_create(
        [
            model(**{f"{owner}_id": owner_id, "hour": hour, "token": uuid.uuid4()})
            for owner_id, hour in sorted(owner_hours)
        ],
        update_conflicts=True,
        unique_fields=[owner, "hour"],
        update_fields=["token"],
    )


def request_drain() -> None:
    """Ask a worker for ``telemetry.rollup_pending`` once the caller's transaction
    commits (through the outbox, so a broker that is down delays it and loses nothing).
    The channels whose user waits for the result (an upload, the API, the command line)
    ask; the pull channels leave their pool-hours to beat's tick."""
    enqueue("telemetry.rollup_pending")


def rollup_pending() -> tuple[int, int]:
    """Roll up every queued pool-hour and workload-hour, then unqueue exactly the rows
    that were read; returns (hours unqueued, hourly rows written).

    Samples committed before the queue is read are in the rollup, which reads them
    afterwards. An import committing later either queued a row this drain never saw, or
    replaced the token of a row it did see; neither is deleted, so the next drain rolls
    that hour up again. A drain killed halfway leaves its rows queued: recomputing an
    hour is idempotent, and two drains at once compute the same rows (a pool's rollups
    wait for each other: ``_serialize_rollups``). Each owner's contiguous hours are one
    transaction that rolls them up and unqueues them, row by row in (owner, hour)
    order, the order ``_queue`` locks them in; pools queued for the very same hours are
    one transaction and one statement together (``rollup_pools_hours``).
    """
    pools = _drain(PendingRollup, "pool_id", rollup_pool_hours, rollup_pools_hours)
    workloads = _drain(PendingWorkloadRollup, "workload_id", rollup_workload_hours)
    return pools[0] + workloads[0], pools[1] + workloads[1]


def _drain(model, owner: str, rollup, rollup_many=None) -> tuple[int, int]:
    """Roll up and unqueue the queued hours of ``model``. With ``rollup_many``, the owners
    queued for the very same hours (every pool of an hour a fleet's pull wrote) are rolled
    up together, in one transaction, instead of one transaction per owner."""
    pending = list(model.objects.order_by(owner, "hour").values_list(owner, "hour", "token"))
    by_owner: dict[int, dict[datetime, uuid.UUID]] = {}
    for owner_id, hour, token in pending:
        by_owner.setdefault(owner_id, {})[hour] = token
    by_range: dict[tuple[datetime, datetime], list[int]] = {}
    for owner_id, tokens in by_owner.items():
        for start, end in hour_ranges(tokens):
            by_range.setdefault((start, end), []).append(owner_id)
    written = 0
    for (start, end), owner_ids in sorted(by_range.items()):
        if rollup_many is not None and len(owner_ids) > 1:
            together = [owner_ids]
        else:
            together = [[owner_id] for owner_id in owner_ids]
        for owners in together:
            with transaction.atomic():
                if len(owners) > 1:
                    written += rollup_many(owners, start, end)
                else:
                    written += rollup(owners[0], start, end)
                for owner_id in owners:
                    hour = start
                    while hour < end:
                        model.objects.filter(token=by_owner[owner_id][hour]).delete()
                        hour += _ONE_HOUR
    return len(pending), written


@transaction.atomic
def rollup_pool_history(pool_id: int) -> int:
    """After the pool's service period changed: its hours recomputed from the raw samples
    still kept (hours outside the new period lose their row and gain an
    ``outside_service`` flag), then its daily sums over its whole hourly history, which
    leave out hours outside the period whose samples are purged (their rows are kept).
    Returns hourly rows written."""
    written = 0
    span = _held_span(device__pool_id=pool_id)
    if span is not None:
        written = rollup_pool_hours(pool_id, *span)
    hours = PoolHourlyUsage.objects.filter(pool_id=pool_id).aggregate(
        first=Min("hour"), last=Max("hour")
    )
    if hours["first"] is not None:
        rollup_pool_days([pool_id], hours["first"], hours["last"] + _ONE_HOUR)
    return written


def _held_span(**device_filter) -> tuple[datetime, datetime] | None:
    """[start, end) of the whole hours holding raw samples or stored device-hours (of the
    devices ``device_filter`` selects), None when there are none: two probes of each
    table's time index."""
    samples = GpuSample.objects.filter(**device_filter).aggregate(
        first=Min("timestamp"), last=Max("timestamp")
    )
    stored = GpuDeviceHour.objects.filter(**device_filter).aggregate(
        first=Min("hour"), last=Max("hour")
    )
    firsts = [floor_hour(span["first"]) for span in (samples, stored) if span["first"]]
    lasts = [floor_hour(span["last"]) for span in (samples, stored) if span["last"]]
    if not firsts:
        return None
    return min(firsts), max(lasts) + _ONE_HOUR


def rollup_everything() -> tuple[int, int]:
    """From scratch, for every pool and workload with data: (pool rows, workload rows)."""
    pool_rows = workload_rows = 0
    # The span of all raw samples (two probes of the timestamp index); inside it only the
    # pool-hours that hold samples are rebuilt, so one stray old sample widens the span
    # without touching the purged hours between.
    span = _held_span()
    if span is not None:
        pool_rows += rollup_all_pool_hours(*span)
    spans = RequestSample.objects.values("workload_id").annotate(
        first=Min("timestamp"), last=Max("timestamp")
    )
    for span in spans:
        end = floor_hour(span["last"]) + _ONE_HOUR
        workload_rows += rollup_workload_hours(span["workload_id"], floor_hour(span["first"]), end)
    return pool_rows, workload_rows
