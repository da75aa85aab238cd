"""Device-hours aggregated by a Prometheus-compatible TSDB, stored instead of raw samples
and read by the pool-hour rollup beside the device-hours of the raw samples."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("telemetry", "0019_pull_source_slug_and_label_filters"),
    ]

    operations = [
        migrations.AlterField(
            model_name="importrun",
            name="source",
            field=models.CharField(
                choices=[
                    ("upload", "Web upload"),
                    ("api", "API"),
                    ("command", "Command line"),
                    ("scrape", "dcgm-exporter scrape"),
                    ("prometheus", "Prometheus query"),
                    ("tsdb_hourly", "TSDB hourly aggregates"),
                ],
                max_length=12,
            ),
        ),
        migrations.CreateModel(
            name="GpuDeviceHour",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("hour", models.DateTimeField()),
                ("namespace", models.CharField(blank=True, max_length=255)),
                ("pod", models.CharField(blank=True, max_length=255)),
                ("container", models.CharField(blank=True, max_length=255)),
                ("samples", models.PositiveIntegerField()),
                ("utilization_pct", models.FloatField(null=True)),
                ("max_memory_used_mib", models.FloatField(null=True)),
                ("energy_kwh", models.FloatField(null=True)),
                ("power_w", models.FloatField(help_text="Mean power in the hour, W.", null=True)),
                ("pulled_at", models.DateTimeField()),
                (
                    "device",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="hours",
                        to="telemetry.gpudevice",
                    ),
                ),
                (
                    "source",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="telemetry.pullsource",
                    ),
                ),
            ],
            options={
                "ordering": ["device_id", "hour"],
                "indexes": [
                    models.Index(fields=["source", "hour"], name="gpu_device_hour_source"),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("device", "hour", "namespace", "pod", "container"),
                        name="gpu_device_hour_unique",
                    )
                ],
            },
        ),
    ]
