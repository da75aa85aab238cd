"""A worker killed with SIGKILL in the middle of an upload's import is noticed by its
stopped heartbeat within seconds, not after the broker's two-hour visibility timeout: the
reaper marks the run interrupted with a sentence and queues it again, and a second worker
completes it, every sample stored once."""

import os
import signal
import time
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from django.db import connection

from apps.telemetry.ingest.importer import reap_stalled_imports
from apps.telemetry.models import GpuSample, ImportRun
from apps.telemetry.tasks import import_file_task
from config.celery_app import app as celery_app
from tests.conftest import CeleryWorker
from tests.waiting import wait_until

START = datetime(2026, 11, 1, tzinfo=UTC)
GPUS, MINUTES = 8, 120
COLUMNS = {"timestamp": "time", "device": "gpu", "utilization_pct": "util"}
HEARTBEAT_SECONDS = 1
STALLED_AFTER_SECONDS = 3


def _csv() -> str:
    return "time,gpu,util\n" + "".join(
        f"{(START + timedelta(minutes=minute)).isoformat()},GPU-kill-{gpu},{(gpu + minute) % 101}\n"
        for minute in range(MINUTES)
        for gpu in range(GPUS)
    )


def _wait_for(predicate, timeout_seconds, what):
    return wait_until(predicate, timeout_seconds=timeout_seconds, what=what)


def _run(pk) -> ImportRun:
    return ImportRun.objects.get(pk=pk)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_import_whose_worker_is_sigkilled_is_interrupted_then_retried(pool, settings, tmp_path):
    settings.STALLED_RUN_AFTER_SECONDS = STALLED_AFTER_SECONDS
    path = tmp_path / "upload.csv"
    path.write_text(_csv())
    run = ImportRun.objects.create(
        kind="gpu",
        format="csv",
        source=ImportRun.Source.UPLOAD,
        filename=path.name,
        pool=pool,
        status=ImportRun.Status.PENDING,
    )

    queue = f"gpufleet-import-kill-{uuid.uuid4().hex[:8]}"
    environment = {"RUN_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS)}
    database = connection.settings_dict
    # A lock held from a separate connection freezes the worker inside the import's
    # transaction (at the insert into the samples), so the kill lands mid-import every time.
    locker = psycopg.connect(
        host=database["HOST"] or "127.0.0.1",
        port=database["PORT"] or 5432,
        user=database["USER"],
        dbname=database["NAME"],
        autocommit=False,
    )
    previous_queue = celery_app.conf.task_default_queue
    # The reaper's retry goes where the workers listen.
    celery_app.conf.task_default_queue = queue
    first = second = None
    try:
        locker.execute("LOCK TABLE telemetry_gpusample IN ACCESS EXCLUSIVE MODE")
        first = CeleryWorker(queue, "celery-worker-import-killed.log", environment)
        first.wait_until_ready()
        import_file_task.apply_async(args=(run.pk, str(path), COLUMNS, "UTC"), queue=queue)

        def worker_is_blocked_in_the_import():
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query ILIKE '%%telemetry_gpusample%%'"
                )
                return cursor.fetchone()[0] > 0

        _wait_for(worker_is_blocked_in_the_import, 60, "the worker to enter the import")
        # While the import's transaction waits, its heartbeat goes on, so the reaper leaves
        # it alone however long the step takes.
        blocked_at = _run(run.pk).heartbeat_at
        _wait_for(lambda: _run(run.pk).heartbeat_at > blocked_at, 10, "a heartbeat during the step")
        # Longer than the stall threshold must pass: the reaper's patience is what is tested.
        time.sleep(STALLED_AFTER_SECONDS + HEARTBEAT_SECONDS)
        assert reap_stalled_imports() == 0
        assert _run(run.pk).status == ImportRun.Status.RUNNING

        os.kill(first.pid, signal.SIGKILL)
        first.process.wait(timeout=20)
        locker.rollback()  # the dead worker's transaction is rolled back

        _wait_for(reap_stalled_imports, STALLED_AFTER_SECONDS + 10, "the reaper to mark it")
        interrupted = _run(run.pk)
        assert interrupted.status == ImportRun.Status.INTERRUPTED
        last_heard = f"{interrupted.heartbeat_at.astimezone(UTC):%H:%M} UTC"
        assert interrupted.message == (
            f"The worker stopped while importing (last heard {last_heard}); it is being retried."
        )
        assert not GpuSample.objects.exists()

        second = CeleryWorker(queue, "celery-worker-import-second.log", environment)
        second.wait_until_ready()
        _wait_for(
            lambda: _run(run.pk).status == ImportRun.Status.SUCCEEDED, 60, "the retry to finish"
        )
    finally:
        celery_app.conf.task_default_queue = previous_queue
        locker.close()
        for worker in (first, second):
            if worker is not None:
                worker.stop()
        celery_app.control.purge()

    finished = _run(run.pk)
    assert finished.attempts == 2
    assert finished.rows_accepted == GPUS * MINUTES == GpuSample.objects.count()
    assert not path.exists()
