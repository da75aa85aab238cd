from django.db import migrations

from apps.core.roles import grant_role_permissions


class Migration(migrations.Migration):
    dependencies = [("slurm", "0004_mapping_rules_and_interruptions"), ("core", "0002_role_groups")]

    operations = [
        migrations.RunPython(grant_role_permissions, migrations.RunPython.noop, elidable=True)
    ]
