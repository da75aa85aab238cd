from django.db import migrations


class Migration(migrations.Migration):
    """Room on each page of telemetry_gpudevice for a new version of its rows.

    Every hourly pull moves the ``last_seen_at`` of every device it read, an unindexed
    column: with free space on the row's page, PostgreSQL writes the new version beside
    the old one (a heap-only tuple) and leaves the table's eight indexes alone; without
    it, each update adds an entry to every index. Existing pages get the room as their
    rows move; new pages are filled to 70 %."""

    dependencies = [("telemetry", "0025_pullsource_cluster")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE telemetry_gpudevice SET (fillfactor = 70)",
            reverse_sql="ALTER TABLE telemetry_gpudevice RESET (fillfactor)",
        )
    ]
