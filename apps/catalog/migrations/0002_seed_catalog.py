"""Seed the GPU and model-architecture catalogs from apps/catalog/data/*.csv.

The loading code lives in apps/catalog/seed.py so seed_demo can reuse it; it upserts by
slug, so re-running (or editing a CSV and loading again) is safe. Sources:
apps/catalog/data/SOURCES.md.
"""

from django.db import migrations

from apps.catalog.seed import load_gpu_models, load_model_architectures


def seed_catalog(apps, schema_editor):
    load_gpu_models(apps.get_model("catalog", "GpuModel"))
    load_model_architectures(apps.get_model("catalog", "ModelArchitecture"))


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0001_initial"),
    ]

    operations = [
        # Reverse keeps the rows: 0001's reverse drops the tables anyway, and deleting by
        # slug could remove rows a technical lead has since edited.
        migrations.RunPython(seed_catalog, migrations.RunPython.noop, elidable=True),
    ]
