"""Technical leads add, change and delete pull sources (apps/core/roles.py)."""

from django.db import migrations

from apps.core.roles import grant_role_permissions


class Migration(migrations.Migration):
    dependencies = [("telemetry", "0020_gpu_device_hours"), ("core", "0002_role_groups")]

    operations = [migrations.RunPython(grant_role_permissions, migrations.RunPython.noop, elidable=True)]
