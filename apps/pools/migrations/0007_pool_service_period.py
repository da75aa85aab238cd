"""Pools get a service period. Existing pools keep what reports charged them so far: from
their creation or their first telemetry, whichever is earlier."""

import django.utils.timezone
from django.db import migrations, models
from django.db.models import Min


def service_from_history(apps, schema_editor):
    pool_model = apps.get_model("pools", "Pool")
    # No dependency on telemetry's migrations: the squashed pools and telemetry migrations
    # would depend on each other. Telemetry's hours, when their table is there, date a
    # pool's service back to its first hour.
    try:
        hourly_model = apps.get_model("telemetry", "PoolHourlyUsage")
    except LookupError:
        hourly_model = None
    first_hours = (
        dict(
            hourly_model.objects.values("pool_id")
            .annotate(first=Min("hour"))
            .values_list("pool_id", "first")
        )
        if hourly_model is not None
        else {}
    )
    for pool in pool_model.objects.all():
        first = first_hours.get(pool.id)
        pool.in_service_from = min(pool.created_at, first) if first else pool.created_at
        pool.save(update_fields=["in_service_from"])


class Migration(migrations.Migration):
    dependencies = [
        ("pools", "0006_pool_price_split"),
    ]

    operations = [
        migrations.AddField(
            model_name="historicalpool",
            name="in_service_from",
            field=models.DateTimeField(
                default=django.utils.timezone.now,
                help_text="When the pool's GPUs started to be paid for; a past date backfills history.",
                verbose_name="In service from",
            ),
        ),
        migrations.AddField(
            model_name="historicalpool",
            name="in_service_until",
            field=models.DateTimeField(
                blank=True,
                help_text="When they stopped being paid for; blank while the pool is in service.",
                null=True,
                verbose_name="In service until",
            ),
        ),
        migrations.AddField(
            model_name="pool",
            name="in_service_from",
            field=models.DateTimeField(
                default=django.utils.timezone.now,
                help_text="When the pool's GPUs started to be paid for; a past date backfills history.",
                verbose_name="In service from",
            ),
        ),
        migrations.AddField(
            model_name="pool",
            name="in_service_until",
            field=models.DateTimeField(
                blank=True,
                help_text="When they stopped being paid for; blank while the pool is in service.",
                null=True,
                verbose_name="In service until",
            ),
        ),
        migrations.RunPython(service_from_history, migrations.RunPython.noop, elidable=True),
    ]
