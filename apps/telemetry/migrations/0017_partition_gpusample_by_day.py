"""telemetry_gpusample becomes a table partitioned by RANGE ("timestamp"),
one partition per UTC day plus a DEFAULT partition (apps/telemetry/partitions.py says
why). The existing rows move with it, in this migration's one transaction: the new table
is made beside the old, with the same key, index and foreign key names, the partitions
covering every day present, the retention window and the days ahead, the rows copied
across, and the names swapped. Reversed, the rows go back into one plain table.

The old table is locked ACCESS EXCLUSIVE meanwhile: imports and rollups wait for the
copy (bench/README.md gives its rate).

Self-contained on purpose: it must convert the table as it is at this migration, whatever
apps/telemetry/partitions.py becomes.
"""

from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import migrations

TABLE = "telemetry_gpusample"
PKEY = "telemetry_gpusample_pkey"
TIMESTAMP_INDEX = "gpu_sample_timestamp"


def _day_start(day: date) -> str:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).isoformat()


def _foreign_key_name(cursor, table: str) -> str:
    cursor.execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(%s) AND contype = 'f'",
        [table],
    )
    (name,) = cursor.fetchone()
    return name


def _days_present(cursor, table: str) -> list[date]:
    """The UTC days with samples, by a loose scan of the timestamp index (one probe per
    day), not a pass over every row."""
    cursor.execute(
        f"""
        WITH RECURSIVE found (day) AS (
            SELECT date_trunc('day', min("timestamp") AT TIME ZONE 'UTC') FROM {table}
            UNION ALL
            SELECT (SELECT date_trunc('day', min("timestamp") AT TIME ZONE 'UTC') FROM {table}
                    WHERE "timestamp" >= (found.day + interval '1 day') AT TIME ZONE 'UTC')
            FROM found WHERE found.day IS NOT NULL
        )
        SELECT day::date FROM found WHERE day IS NOT NULL
        """  # noqa: S608 - table names are constants
    )
    return [row[0] for row in cursor.fetchall()]


def partition_by_day(apps, schema_editor):
    today = datetime.now(UTC).date()
    retention_days = getattr(settings, "TELEMETRY_RAW_RETENTION_DAYS", 14)
    ahead_days = getattr(settings, "TELEMETRY_PARTITION_DAYS_AHEAD", 7)
    old = f"{TABLE}_unpartitioned"
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
        foreign_key = _foreign_key_name(cursor, TABLE)
        days = set(_days_present(cursor, TABLE))
        # The retention horizon's day (an hour TELEMETRY_RAW_RETENTION_DAYS before now)
        # and every day after it, up to the days ahead.
        first = today - timedelta(days=retention_days)
        days.update(first + timedelta(days=offset) for offset in range(retention_days + 1 + ahead_days))
        cursor.execute(f"ALTER TABLE {TABLE} RENAME TO {old}")
        cursor.execute(f"ALTER TABLE {old} RENAME CONSTRAINT {PKEY} TO {old}_pkey")
        cursor.execute(f"ALTER INDEX {TIMESTAMP_INDEX} RENAME TO {old}_timestamp")
        cursor.execute(
            f"CREATE TABLE {TABLE} (LIKE {old} INCLUDING DEFAULTS INCLUDING STORAGE "
            'INCLUDING COMMENTS) PARTITION BY RANGE ("timestamp")'
        )
        cursor.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT {PKEY} PRIMARY KEY (device_id, "timestamp")')
        cursor.execute(f'CREATE INDEX {TIMESTAMP_INDEX} ON {TABLE} ("timestamp")')
        cursor.execute(
            f"ALTER TABLE {TABLE} ADD CONSTRAINT {foreign_key} FOREIGN KEY (device_id) "
            "REFERENCES telemetry_gpudevice (id) DEFERRABLE INITIALLY DEFERRED"
        )
        for day in sorted(days):
            cursor.execute(
                f"CREATE TABLE {TABLE}_p{day:%Y%m%d} PARTITION OF {TABLE} "
                f"FOR VALUES FROM ('{_day_start(day)}') TO ('{_day_start(day + timedelta(days=1))}')"
            )
        cursor.execute(f"CREATE TABLE {TABLE}_default PARTITION OF {TABLE} DEFAULT")
        cursor.execute(f"INSERT INTO {TABLE} SELECT * FROM {old}")  # noqa: S608
        cursor.execute(f"DROP TABLE {old}")
        # Fresh statistics for the planner, and for the partitions' row estimates.
        cursor.execute(f"ANALYZE {TABLE}")


def unpartition(apps, schema_editor):
    old = f"{TABLE}_partitioned"
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
        foreign_key = _foreign_key_name(cursor, TABLE)
        cursor.execute(f"ALTER TABLE {TABLE} RENAME TO {old}")
        cursor.execute(f"ALTER TABLE {old} RENAME CONSTRAINT {PKEY} TO {old}_pkey")
        cursor.execute(f"ALTER INDEX {TIMESTAMP_INDEX} RENAME TO {old}_timestamp")
        cursor.execute(
            f"CREATE TABLE {TABLE} (LIKE {old} INCLUDING DEFAULTS INCLUDING STORAGE "
            "INCLUDING COMMENTS)"
        )
        cursor.execute(f"INSERT INTO {TABLE} SELECT * FROM {old}")  # noqa: S608
        # Keys and index after the rows: one sort each rather than one insertion per row.
        cursor.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT {PKEY} PRIMARY KEY (device_id, "timestamp")')
        cursor.execute(f'CREATE INDEX {TIMESTAMP_INDEX} ON {TABLE} ("timestamp")')
        cursor.execute(
            f"ALTER TABLE {TABLE} ADD CONSTRAINT {foreign_key} FOREIGN KEY (device_id) "
            "REFERENCES telemetry_gpudevice (id) DEFERRABLE INITIALLY DEFERRED"
        )
        cursor.execute(f"DROP TABLE {old}")  # and its partitions


class Migration(migrations.Migration):
    dependencies = [("telemetry", "0016_importrun_warning_parts")]

    operations = [migrations.RunPython(partition_by_day, unpartition, elidable=True)]
