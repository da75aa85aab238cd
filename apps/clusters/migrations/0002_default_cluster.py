from django.conf import settings
from django.db import migrations

from apps.core.roles import grant_role_permissions


def create_default_cluster(apps, schema_editor):
    """The cluster every existing pool and pull source joins."""
    cluster_model = apps.get_model("clusters", "Cluster")
    cluster_model.objects.get_or_create(
        slug="default", defaults={"name": "default", "timezone": settings.TIME_ZONE}
    )


class Migration(migrations.Migration):
    dependencies = [("clusters", "0001_initial"), ("core", "0002_role_groups")]

    operations = [
        migrations.RunPython(create_default_cluster, migrations.RunPython.noop),
        migrations.RunPython(grant_role_permissions, migrations.RunPython.noop, elidable=True),
    ]
