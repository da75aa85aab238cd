import django.db.models.deletion
from django.db import migrations, models


def put_sources_in_the_default_cluster(apps, schema_editor):
    cluster = apps.get_model("clusters", "Cluster").objects.get(slug="default")
    sources = apps.get_model("telemetry", "PullSource").objects.filter(cluster__isnull=True)
    sources.update(cluster=cluster)


class Migration(migrations.Migration):
    dependencies = [
        ("clusters", "0002_default_cluster"),
        ("telemetry", "0001_squashed_0024_pull_source_credentials"),
    ]

    operations = [
        migrations.AddField(
            model_name="pullsource",
            name="cluster",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="pull_sources",
                to="clusters.cluster",
                verbose_name="cluster",
            ),
        ),
        migrations.RunPython(put_sources_in_the_default_cluster, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="pullsource",
            name="cluster",
            field=models.ForeignKey(
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="pull_sources",
                to="clusters.cluster",
                verbose_name="cluster",
            ),
        ),
    ]
