import django.db.models.deletion
from django.db import migrations, models


def put_pools_in_the_default_cluster(apps, schema_editor):
    cluster = apps.get_model("clusters", "Cluster").objects.get(slug="default")
    apps.get_model("pools", "Pool").objects.filter(cluster__isnull=True).update(cluster=cluster)


class Migration(migrations.Migration):
    dependencies = [
        ("clusters", "0002_default_cluster"),
        ("pools", "0013_currency"),
    ]

    operations = [
        migrations.AddField(
            model_name="historicalpool",
            name="cluster",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="clusters.cluster",
                verbose_name="cluster",
            ),
        ),
        migrations.AddField(
            model_name="pool",
            name="cluster",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="pools",
                to="clusters.cluster",
                verbose_name="cluster",
            ),
        ),
        migrations.RunPython(put_pools_in_the_default_cluster, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="pool",
            name="cluster",
            field=models.ForeignKey(
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="pools",
                to="clusters.cluster",
                verbose_name="cluster",
            ),
        ),
    ]
