"""Pull sources gain a slug (the API addresses them by it), label filters and the
hourly-aggregates kind. Existing sources get a slug from their name, as the forms make
one (pinyin for Chinese), made unique with a number where two names spell the same."""

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models

from apps.core.slugs import slug_from_name


def slugs_from_names(apps, schema_editor):
    PullSource = apps.get_model("telemetry", "PullSource")
    taken = set()
    for source in PullSource.objects.order_by("pk"):
        base = slug_from_name(source.name, max_length=90) or "source"
        slug, number = base, 2
        while slug in taken:
            slug, number = f"{base}-{number}", number + 1
        taken.add(slug)
        source.slug = slug
        source.save(update_fields=["slug"])


class Migration(migrations.Migration):
    dependencies = [
        ("pools", "0009_translatable_labels"),
        ("telemetry", "0018_purge_runs"),
    ]

    operations = [
        migrations.AddField(
            model_name="pullsource",
            name="label_filters",
            field=models.CharField(
                blank=True,
                help_text='PromQL label matchers, e.g. cluster="a",namespace=~"ml-.*"',
                max_length=1000,
                verbose_name="label filters",
            ),
        ),
        migrations.AddField(
            model_name="pullsource",
            name="slug",
            field=models.SlugField(db_index=False, max_length=100, null=True, verbose_name="slug"),
        ),
        migrations.RunPython(slugs_from_names, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="pullsource",
            name="slug",
            field=models.SlugField(
                help_text="Stable id used by the API.",
                max_length=100,
                unique=True,
                verbose_name="slug",
            ),
        ),
        migrations.AlterField(
            model_name="pullsource",
            name="enabled",
            field=models.BooleanField(default=True, verbose_name="enabled"),
        ),
        migrations.AlterField(
            model_name="pullsource",
            name="interval_seconds",
            field=models.PositiveIntegerField(
                default=60,
                help_text="At least 15 s, the pull schedule's tick.",
                validators=[django.core.validators.MinValueValidator(15)],
                verbose_name="interval (s)",
            ),
        ),
        migrations.AlterField(
            model_name="pullsource",
            name="kind",
            field=models.CharField(
                choices=[
                    ("dcgm_exporter", "dcgm-exporter endpoint"),
                    ("prometheus", "Prometheus server"),
                    ("prometheus_hourly", "Prometheus-compatible TSDB, hourly aggregates"),
                ],
                max_length=20,
                verbose_name="kind",
            ),
        ),
        migrations.AlterField(
            model_name="pullsource",
            name="name",
            field=models.CharField(max_length=100, unique=True, verbose_name="name"),
        ),
        migrations.AlterField(
            model_name="pullsource",
            name="pool",
            field=models.ForeignKey(
                blank=True,
                help_text="Devices first seen through this source join this pool.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                to="pools.pool",
                verbose_name="pool",
            ),
        ),
        migrations.AlterField(
            model_name="pullsource",
            name="url",
            field=models.URLField(
                help_text=(
                    "dcgm-exporter: http://node:9400/metrics. Prometheus or VictoriaMetrics: "
                    "http://prom:9090"
                ),
                max_length=500,
                verbose_name="URL",
            ),
        ),
    ]
