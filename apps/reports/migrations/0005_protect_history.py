# Daily sums and workload attribution are history: deleting their pool or workload is
# refused (the pool or workload is archived instead).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("pools", "0008_archived_at_protect_history"),
        ("reports", "0004_rollup_ordering_by_key"),
    ]

    operations = [
        migrations.AlterField(
            model_name="pooldailyusage",
            name="pool",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="daily_usage",
                to="pools.pool",
            ),
        ),
        migrations.AlterField(
            model_name="workloaddailyrequests",
            name="workload",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="daily_requests",
                to="pools.workload",
            ),
        ),
        migrations.AlterField(
            model_name="workloadhourlyusage",
            name="workload",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="attributed_usage",
                to="pools.workload",
            ),
        ),
    ]
