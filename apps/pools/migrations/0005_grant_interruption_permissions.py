from django.db import migrations

from apps.core.roles import grant_role_permissions


class Migration(migrations.Migration):
    dependencies = [("pools", "0004_reports_inputs_interruptions")]

    operations = [migrations.RunPython(grant_role_permissions, migrations.RunPython.noop, elidable=True)]
