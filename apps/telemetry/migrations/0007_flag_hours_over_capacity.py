"""Hours rolled up before MIG slices counted as parts of one GPU can hold more busy or
reporting GPUs than the pool declares. Their samples may be purged, so they are not
recomputed here: they are flagged, and ``rollup_usage`` recomputes the ones whose samples
are still kept."""

from django.db import migrations
from django.db.models import F, Q


def flag_hours_over_capacity(apps, schema_editor):
    hourly_model = apps.get_model("telemetry", "PoolHourlyUsage")
    flag_model = apps.get_model("telemetry", "PoolHourFlag")
    over = hourly_model.objects.filter(
        Q(busy_gpu_hours__gt=F("capacity_gpu_hours"))
        | Q(reporting_gpus__gt=F("capacity_gpu_hours"))
    )
    flag_model.objects.bulk_create(
        [
            flag_model(
                pool_id=row.pool_id,
                hour=row.hour,
                kind="over_reported",
                gpus=row.reporting_gpus,
                detail=(
                    f"{row.reporting_gpus} GPUs and {row.busy_gpu_hours:.2f} busy GPU-h in a pool "
                    f"of {row.capacity_gpu_hours:.0f}, rolled up before MIG slices counted as "
                    "parts of one GPU. Run manage.py rollup_usage for the hours whose samples "
                    "are still kept."
                ),
            )
            for row in over.iterator()
        ],
        batch_size=2000,
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("telemetry", "0006_mig_flags_upload_digest"),
    ]

    operations = [
        migrations.RunPython(flag_hours_over_capacity, migrations.RunPython.noop, elidable=True),
    ]
