"""Which hours can be rebuilt, and the purge that ends the raw samples' retention.

The raw retention keeps TELEMETRY_RAW_RETENTION_DAYS of samples, and the device-hours a
TSDB aggregated (GpuDeviceHour) are kept forever; an hour with neither is final, its
rollup the only record (apps/telemetry/rollups/hourly.py never rewrites it). The purge removes
whole hours only, so an hour holds all its samples or none: it drops the daily
partitions whose every hour is before the horizon (apps/telemetry/rollups/partitions.py) and
deletes the rest, the hours of the horizon's own day before it and any such rows in the
DEFAULT partition.
"""

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from apps.core import runs
from apps.core.outbox import enqueue
from apps.core.sentences import gettext_noop
from apps.pools.hours import floor_hour
from apps.telemetry.models import GpuDeviceHour, GpuSample, PurgeRun
from apps.telemetry.rollups import partitions

_ONE_HOUR = timedelta(hours=1)
# An import that left rows in DEFAULT asks for their partitions at most this often; beat
# asks every hour anyway.
_PARTITION_REQUEST_EVERY_SECONDS = 60
_PARTITION_REQUEST_KEY = "telemetry:sample-partitions-requested"


def raw_retention_horizon(now: datetime | None = None) -> datetime:
    """The start of the oldest hour whose raw samples are all kept: the purge deletes the
    hours before it (TELEMETRY_RAW_RETENTION_DAYS); their rollups are final."""
    return floor_hour(
        (now or timezone.now()) - timedelta(days=settings.TELEMETRY_RAW_RETENTION_DAYS)
    )


def samples_held_q(
    pool_field: str = "pool_id", released_device_ids=(), hour_field: str = "hour"
) -> Q:
    """Rows of pool-hours whose device-hours are still held: raw samples or stored
    device-hours (GpuDeviceHour, never purged) of the pool's devices (or of
    ``released_device_ids``, devices that just left it) in that hour. Only these can be
    rebuilt; the others are the only record of their hour."""
    in_hour = {
        "timestamp__gte": OuterRef(hour_field),
        "timestamp__lt": OuterRef(hour_field) + _ONE_HOUR,
    }
    held = Exists(
        GpuSample.objects.filter(device__pool_id=OuterRef(pool_field), **in_hour)
    ) | Exists(
        GpuDeviceHour.objects.filter(
            device__pool_id=OuterRef(pool_field), hour=OuterRef(hour_field)
        )
    )
    if released_device_ids:
        released = list(released_device_ids)
        held |= Exists(GpuSample.objects.filter(device_id__in=released, **in_hour)) | Exists(
            GpuDeviceHour.objects.filter(device_id__in=released, hour=OuterRef(hour_field))
        )
    return Q(held)


def partition_window(now: datetime | None = None):
    """(first day, last day) that keep a partition of their own: the horizon's day, which
    still holds the hours after the horizon, to TELEMETRY_PARTITION_DAYS_AHEAD days ahead."""
    now = now or timezone.now()
    first = raw_retention_horizon(now).astimezone(UTC).date()
    last = now.astimezone(UTC).date() + timedelta(days=settings.TELEMETRY_PARTITION_DAYS_AHEAD)
    return first, last


def ensure_sample_partitions(now: datetime | None = None) -> partitions.PartitionChanges:
    """Partitions for every day of the retention window and the days ahead, and for the
    days whose rows wait in DEFAULT (beat, hourly and at worker start; after an import
    that left rows there)."""
    return partitions.ensure_partitions(*partition_window(now))


def request_partitions_if_needed(now: datetime | None = None) -> bool:
    """After a write: when DEFAULT holds rows of a day that should have its own partition
    (a backfill, a clock ahead), ask for ``telemetry.ensure_sample_partitions`` after the
    commit, at most once a minute. The rows are stored and counted meanwhile."""
    first, last = partition_window(now)
    if not partitions.default_holds_rows(first, last + partitions.FURTHEST_DAY_AHEAD):
        return False
    if not cache.add(_PARTITION_REQUEST_KEY, True, _PARTITION_REQUEST_EVERY_SECONDS):
        return False
    enqueue("telemetry.ensure_sample_partitions")
    return True


def purge_raw_samples(run: PurgeRun, now: datetime | None = None) -> PurgeRun:
    """Remove the raw samples before the retention horizon, recorded on ``run``: drop the
    daily partitions whose day ends by the horizon, then delete what is left before it.

    Both remove whole hours (the horizon is an hour, partitions are whole days), so every
    hour keeps all its samples or none and ``samples_held_q`` stays true: the pool-hours
    of the removed hours are final and no recompute rewrites them. A rerun removes only
    what is still there, so nothing is counted twice."""
    horizon = raw_retention_horizon(now)
    run.horizon = horizon
    with run.running():
        dropped = partitions.drop_day_partitions_before(horizon)
        removed = dropped.dropped + dropped.emptied  # their rows are gone
        run.partitions_dropped = [
            {
                "name": partition.name,
                "day": partition.day.isoformat(),
                "rows_estimate": partition.rows_estimate,
                "size_bytes": partition.size_bytes,
            }
            for partition in sorted(removed, key=lambda partition: partition.day)
        ]
        run.partitions_postponed = [
            partition.name for partition in dropped.emptied + dropped.postponed
        ]
        run.rows_dropped_estimate = sum(partition.rows_estimate for partition in removed)
        # The horizon's own day before it, DEFAULT, or a postponed day.
        run.rows_deleted, _ = GpuSample.objects.filter(timestamp__lt=horizon).delete()
    run.succeed(
        run.describe(),
        also_save=[
            "horizon",
            "partitions_dropped",
            "partitions_postponed",
            "rows_dropped_estimate",
            "rows_deleted",
        ],
    )
    return run


def reap_stalled_purges() -> int:
    """Mark purges whose worker stopped interrupted (apps/core/runs.py); not retried, as
    the next daily purge removes whatever this one left."""
    return runs.reap(
        PurgeRun.objects.all(),
        describe=lambda run: (gettext_noop("The worker"), gettext_noop("purging raw samples")),
        retry=None,
        advice=lambda run: gettext_noop("the next daily purge removes what it left."),
    )
