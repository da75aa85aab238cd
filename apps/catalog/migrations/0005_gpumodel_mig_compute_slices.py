from django.db import migrations, models

from apps.catalog.seed import fill_mig_compute_slices


def fill_slices(apps, schema_editor):
    fill_mig_compute_slices(apps.get_model("catalog", "GpuModel"))


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0004_historicalgpumodel_historicalmodelarchitecture"),
    ]

    operations = [
        migrations.AddField(
            model_name="gpumodel",
            name="mig_compute_slices",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="Compute slices of a MIG-partitioned GPU: 7 on A100/H100/H200, 4 on A30.",
                null=True,
                verbose_name="MIG compute slices",
            ),
        ),
        migrations.AddField(
            model_name="historicalgpumodel",
            name="mig_compute_slices",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="Compute slices of a MIG-partitioned GPU: 7 on A100/H100/H200, 4 on A30.",
                null=True,
                verbose_name="MIG compute slices",
            ),
        ),
        migrations.RunPython(fill_slices, migrations.RunPython.noop, elidable=True),
    ]
