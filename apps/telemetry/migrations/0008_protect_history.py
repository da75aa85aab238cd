# Hourly rollups and request samples are history: deleting their pool or workload is
# refused (the pool or workload is archived instead).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("pools", "0008_archived_at_protect_history"),
        ("telemetry", "0007_flag_hours_over_capacity"),
    ]

    operations = [
        migrations.AlterField(
            model_name="poolhourlyusage",
            name="pool",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="hourly_usage",
                to="pools.pool",
            ),
        ),
        migrations.AlterField(
            model_name="requestsample",
            name="workload",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="request_samples",
                to="pools.workload",
            ),
        ),
        migrations.AlterField(
            model_name="workloadhourlyrequests",
            name="workload",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="hourly_requests",
                to="pools.workload",
            ),
        ),
    ]
