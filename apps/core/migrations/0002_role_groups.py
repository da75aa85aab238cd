from django.db import migrations

from apps.core.roles import grant_role_permissions


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant_role_permissions, migrations.RunPython.noop, elidable=True)]
