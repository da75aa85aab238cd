"""Which hours can be rebuilt from raw samples: the raw retention keeps
TELEMETRY_RAW_RETENTION_DAYS of samples; an hour without raw samples held is final, its
rollup the only record (apps/telemetry/rollups.py never rewrites it)."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from apps.pools.hours import floor_hour
from apps.telemetry.models import GpuSample

_ONE_HOUR = timedelta(hours=1)


def raw_retention_horizon(now: datetime | None = None) -> datetime:
    """The start of the oldest hour whose raw samples are all kept: the purge deletes the
    hours before it (TELEMETRY_RAW_RETENTION_DAYS); their rollups are final."""
    return floor_hour(
        (now or timezone.now()) - timedelta(days=settings.TELEMETRY_RAW_RETENTION_DAYS)
    )


def samples_held_q(
    pool_field: str = "pool_id", released_device_ids=(), hour_field: str = "hour"
) -> Q:
    """Rows of pool-hours whose raw samples are still held: samples of the pool's devices
    (or of ``released_device_ids``, devices that just left it) in that hour. Only these
    can be rebuilt; the others are the only record of their hour."""
    in_hour = {
        "timestamp__gte": OuterRef(hour_field),
        "timestamp__lt": OuterRef(hour_field) + _ONE_HOUR,
    }
    held = Exists(GpuSample.objects.filter(device__pool_id=OuterRef(pool_field), **in_hour))
    if released_device_ids:
        held |= Exists(GpuSample.objects.filter(device_id__in=list(released_device_ids), **in_hour))
    return Q(held)
