from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("procurement", "0006_translatable_labels_and_export_language"),
    ]

    operations = [
        migrations.AddField(
            model_name="comparisonexport",
            name="message_parts",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
