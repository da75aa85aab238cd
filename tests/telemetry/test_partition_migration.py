"""The migration that partitions the samples table converts it with its rows, both ways,
run by Django's migration executor on the test database."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection

from tests.old_graph import old_graph_executor, old_leaf_nodes, scratch_database

BEFORE = ("telemetry", "0016_importrun_warning_parts")
REPO_ROOT = Path(__file__).resolve().parents[2]


def _sql(statement: str, params=None):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else cursor.rowcount


def _migrate(targets) -> None:
    old_graph_executor(connection).migrate(targets)


def _latest() -> list[tuple[str, str]]:
    return old_leaf_nodes(old_graph_executor(connection), "telemetry")


def _rows() -> set[tuple]:
    return set(
        _sql(
            'SELECT device_id, "timestamp", utilization_pct, memory_used_mib, pod, namespace '
            "FROM telemetry_gpusample"
        )
    )


def _is_partitioned() -> bool:
    return bool(
        _sql(
            "SELECT 1 FROM pg_partitioned_table "
            "WHERE partrelid = to_regclass('telemetry_gpusample')"
        )
    )


@pytest.fixture
def scratch(django_db_blocker):
    """The old graph moves a copy of the migrated database, never the test database."""
    with scratch_database(django_db_blocker) as database:
        yield database


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_every_row_into_its_days_partition_and_back(scratch):
    latest = _latest()
    moments = []
    try:
        _migrate([BEFORE])
        assert not _is_partitioned()
        _sql(
            "INSERT INTO telemetry_gpudevice (key, uuid, mig_profile, mig_mode_enabled, hostname, "
            "model_name, driver_version, assignment, first_seen_at, last_seen_at) VALUES "
            "('GPU-mig-a', 'GPU-mig-a', '', false, 'n1', '', '', 'unassigned', now(), now()), "
            "('GPU-mig-b', 'GPU-mig-b', '', false, 'n1', '', '', 'unassigned', now(), now())"
        )
        device_ids = [row[0] for row in _sql("SELECT id FROM telemetry_gpudevice ORDER BY id")]
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        # Several days: long past (before any window), inside the window, today, ahead, and
        # a clock a month ahead; the last instant of a day and the first of the next.
        moments += [
            today - timedelta(days=40) + timedelta(hours=3),
            today - timedelta(days=3) + timedelta(hours=23, minutes=59, seconds=59),
            today - timedelta(days=2),
            today + timedelta(hours=1, minutes=30),
            today + timedelta(days=2, hours=6),
            today + timedelta(days=31, hours=12),
        ]
        for index, moment in enumerate(moments):
            for device_id in device_ids:
                _sql(
                    'INSERT INTO telemetry_gpusample (device_id, "timestamp", utilization_pct, '
                    "memory_used_mib, pod, namespace, container) "
                    "VALUES (%s, %s, %s, %s, %s, 'ml', '')",
                    [device_id, moment, 10.0 * index, 1000.0 + device_id, f"pod-{index}"],
                )
        before = _rows()
        assert len(before) == 12

        _migrate(latest)

        assert _is_partitioned()
        assert _rows() == before
        where = dict(_sql('SELECT "timestamp", tableoid::regclass::text FROM telemetry_gpusample'))
        for moment in moments:
            assert where[moment] == f"telemetry_gpusample_p{moment:%Y%m%d}"
        # The key still refuses a second row for one device and instant.
        with pytest.raises(Exception, match="telemetry_gpusample_p"):
            _sql(
                'INSERT INTO telemetry_gpusample (device_id, "timestamp", pod, namespace, '
                "container) VALUES (%s, %s, '', '', '')",
                [device_ids[0], moments[0]],
            )

        _migrate([BEFORE])

        assert not _is_partitioned()
        assert _rows() == before
        [(kind,)] = _sql("SELECT relkind FROM pg_class WHERE relname = 'telemetry_gpusample'")
        assert kind == "r"
        names = {
            name
            for (name,) in _sql(
                "SELECT conname FROM pg_constraint WHERE conrelid = 'telemetry_gpusample'::regclass"
            )
        }
        assert "telemetry_gpusample_pkey" in names and any("_fk_" in name for name in names)
        assert _sql("SELECT 1 FROM pg_class WHERE relname = 'gpu_sample_timestamp'")
        assert not _sql("SELECT 1 FROM pg_class WHERE relname LIKE 'telemetry_gpusample_p2%%'")
    finally:
        _migrate(latest)
        # The days made for this test's rows only; the other tests expect the window's.
        for moment in moments[:1] + moments[-1:]:
            _sql(f"DROP TABLE IF EXISTS telemetry_gpusample_p{moment:%Y%m%d}")
    assert _is_partitioned()
