"""A worker killed with SIGKILL in the middle of the rollup drain loses nothing and
counts nothing twice: the task is acknowledged late, goes back to the queue, the queued
hours stay queued, and the hours a second worker writes are exactly those of a clean
run."""

import os
import signal
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from django.db import connection

from apps.telemetry.ingest import storage
from apps.telemetry.ingest.parsers.rows import DeviceKey, GpuSampleRow, ParseResult
from apps.telemetry.models import PendingRollup, PoolHourlyUsage
from apps.telemetry.rollups import hourly
from apps.telemetry.tasks import rollup_pending_task
from config.celery_app import app as celery_app
from tests.conftest import CeleryWorker
from tests.waiting import wait_until

START = datetime(2026, 11, 1, tzinfo=UTC)
HOURS = 12
# Redelivery after the worker dies waits for this (the Redis transport's visibility
# timeout); short here so the test takes seconds, not the production two hours.
VISIBILITY_TIMEOUT_SECONDS = 3


def _rows():
    rows = []
    for gpu in range(16):
        for minute in range(0, HOURS * 60, 5):
            rows.append(
                GpuSampleRow(
                    line_number=len(rows) + 1,
                    device=DeviceKey(f"GPU-kill-{gpu:02d}"),
                    timestamp=START + timedelta(minutes=minute),
                    utilization_pct=float((gpu * 7 + minute) % 101),
                    memory_used_mib=float(1000 + gpu),
                    power_w=float(100 + minute % 300),
                )
            )
    return rows


def _snapshot(pool):
    return list(
        PoolHourlyUsage.objects.filter(pool=pool)
        .order_by("hour")
        .values_list(
            "hour",
            "reporting_gpus",
            "capacity_gpu_hours",
            "busy_gpu_hours",
            "avg_utilization_pct",
            "max_utilization_pct",
            "max_memory_used_mib",
            "energy_kwh",
        )
    )


def _wait_for(predicate, timeout_seconds, what):
    return wait_until(predicate, timeout_seconds=timeout_seconds, what=what)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_rollup_survives_a_sigkilled_worker(pool):
    storage.import_gpu_samples(ParseResult(rows=_rows(), errors=[]), pool=pool)
    end = START + timedelta(hours=HOURS)
    assert PendingRollup.objects.filter(pool=pool).count() == HOURS

    # The clean run, computed in this process, is what the killed run must reproduce.
    hourly.rollup_pool_hours(pool.pk, START, end)
    clean = _snapshot(pool)
    assert len(clean) == HOURS and all(row[1] == 16 for row in clean)
    PoolHourlyUsage.objects.filter(pool=pool).delete()

    queue = f"gpufleet-kill-{uuid.uuid4().hex[:8]}"
    environment = {
        "CELERY_VISIBILITY_TIMEOUT_SECONDS": str(VISIBILITY_TIMEOUT_SECONDS),
        # Look for the dead worker's task every second, not every 100 s.
        "CELERY_UNACKED_RESTORE_INTERVAL_SECONDS": "1",
        "CELERY_UNACKED_RESTORE_THROTTLE": "1",
    }
    settings = connection.settings_dict
    # A lock held from a separate connection freezes the worker inside its rollup
    # transaction, so the kill lands mid-task every time, not by luck of timing.
    locker = psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        user=settings["USER"],
        dbname=settings["NAME"],
        autocommit=False,
    )
    first = second = None
    try:
        locker.execute("LOCK TABLE telemetry_poolhourlyusage IN ACCESS EXCLUSIVE MODE")
        first = CeleryWorker(queue, "celery-worker-killed.log", environment)
        first.wait_until_ready()
        result = rollup_pending_task.apply_async(queue=queue)

        def worker_is_blocked_in_the_rollup():
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query ILIKE 'DELETE FROM %%poolhourlyusage%%'"
                )
                return cursor.fetchone()[0] > 0

        _wait_for(worker_is_blocked_in_the_rollup, 60, "the worker to enter the rollup")
        os.kill(first.pid, signal.SIGKILL)
        first.process.wait(timeout=20)
        locker.rollback()  # let the dead worker's transaction go (it is rolled back)
        assert PendingRollup.objects.filter(pool=pool).count() == HOURS

        second = CeleryWorker(queue, "celery-worker-second.log", environment)
        second.wait_until_ready()
        # The unacknowledged task comes back after the visibility timeout.
        unqueued = result.get(timeout=300)
        assert unqueued == HOURS
    finally:
        locker.close()
        for worker in (first, second):
            if worker is not None:
                worker.stop()
        celery_app.control.purge()

    assert _snapshot(pool) == clean
    assert not PendingRollup.objects.exists()
