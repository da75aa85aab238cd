"""Which hours can be rebuilt: the raw retention keeps TELEMETRY_RAW_RETENTION_DAYS of
samples, and the device-hours a TSDB aggregated (GpuDeviceHour) are kept forever; an hour
with neither is final, its rollup the only record (apps/telemetry/rollups.py never
rewrites it)."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from apps.pools.hours import floor_hour
from apps.telemetry.models import GpuDeviceHour, GpuSample

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
