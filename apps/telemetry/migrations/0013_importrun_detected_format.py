from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("telemetry", "0012_drain_queue_for_workload_hours"),
    ]

    operations = [
        migrations.AddField(
            model_name="importrun",
            name="detected_format",
            field=models.CharField(blank=True, max_length=20),
        ),
    ]
