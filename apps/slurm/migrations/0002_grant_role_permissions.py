from django.db import migrations

from apps.core.roles import grant_role_permissions


class Migration(migrations.Migration):
    dependencies = [("slurm", "0001_initial"), ("core", "0002_role_groups")]

    operations = [
        migrations.RunPython(grant_role_permissions, migrations.RunPython.noop, elidable=True)
    ]
