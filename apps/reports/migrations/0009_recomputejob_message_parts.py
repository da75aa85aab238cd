from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0008_job_lifecycle"),
    ]

    operations = [
        migrations.AddField(
            model_name="recomputejob",
            name="message_parts",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
