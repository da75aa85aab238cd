"""Technical leads and Ops import and delete pilot benchmarks (apps/core/roles.py)."""

from django.db import migrations

from apps.core.roles import grant_role_permissions


class Migration(migrations.Migration):
    dependencies = [("pilots", "0001_initial"), ("core", "0002_role_groups")]

    operations = [migrations.RunPython(grant_role_permissions, migrations.RunPython.noop, elidable=True)]
