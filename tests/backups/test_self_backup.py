"""gpufleet backs itself up: a dump restored into a fresh PostgreSQL database gives the
same cost report, and the restore is recorded as a drill of gpufleet's own database with
its measured RTO. The SQLite default is backed up and restored with the same commands."""

import hashlib
import json
import os
import subprocess
import sys
import uuid
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

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
    prune_backups,
    restore_database,
)
from apps.backups.services import record_drill, save_policy, save_version
from apps.pools.models import Workload, WorkloadKind
from apps.reports.queries import cost_report
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
from apps.reports.queries import cost_report
rows = cost_report(datetime.fromisoformat({START.isoformat()!r}),
                   datetime.fromisoformat({END.isoformat()!r}))
print(json.dumps([{{k: v for k, v in asdict(r).items() if k not in ("members", "parts")}}
                  for r in rows], sort_keys=True))
"""


def _report_json() -> str:
    rows = cost_report(START, END)
    return json.dumps(
        [
            {key: value for key, value in asdict(row).items() if key not in ("members", "parts")}
            for row in rows
        ],
        sort_keys=True,
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def scratch_database():
    """A new, empty PostgreSQL database beside the test database, dropped afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("the pg_dump/pg_restore drill needs PostgreSQL")
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
    assert json.loads(expected)[0]["cost_usd"] > 0

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
    if connection.vendor != "postgresql":
        pytest.skip("pg_dump needs PostgreSQL")
    settings.BACKUP_DIR = str(tmp_path)
    for stamp in ("20200101T000000Z", "20200102T000000Z"):
        (tmp_path / f"gpufleet-{stamp}.dump").write_bytes(b"old")
    call_command("backup_database", "--keep", "2")
    kept = backups_in(tmp_path)
    assert [path.name for path in kept][0] == "gpufleet-20200102T000000Z.dump"
    assert len(kept) == 2 and kept[-1].stat().st_size > 3
    assert not list(tmp_path.glob("*.partial"))


def test_sqlite_backup_and_restore(tmp_path):
    import sqlite3

    live = tmp_path / "live.sqlite3"
    with sqlite3.connect(live) as db:
        db.execute("create table t (n integer)")
        db.execute("insert into t values (1)")
    database = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(live)}
    copy = backup_database(directory=tmp_path / "backups", database=database)
    assert copy.suffix == ".sqlite3"
    with sqlite3.connect(live) as db:
        db.execute("insert into t values (2)")
    restore_database(copy, database=database)
    with sqlite3.connect(live) as db:
        assert db.execute("select n from t").fetchall() == [(1,)]


def test_restore_refuses_a_backup_of_the_other_engine(tmp_path):
    dump = tmp_path / "gpufleet-20260101T000000Z.dump"
    dump.write_bytes(b"x")
    database = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "db.sqlite3")}
    with pytest.raises(BackupError, match="not a sqlite backup"):
        restore_database(dump, database=database)


def test_prune_keeps_the_newest(tmp_path):
    names = [f"gpufleet-2026010{day}T000000Z.dump" for day in range(1, 5)]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("not a backup")
    deleted = prune_backups(tmp_path, keep=2)
    assert [path.name for path in deleted] == names[:2]
    assert [path.name for path in backups_in(tmp_path)] == names[2:]
    assert (tmp_path / "notes.txt").exists()
