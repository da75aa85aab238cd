"""Celery tasks: thin, keyed by ids and ISO times, idempotent by design (keyed upserts
and delete-then-recompute of a range in one transaction), so they are acknowledged late
and re-queued when their worker dies."""

import logging
from pathlib import Path
from zoneinfo import ZoneInfo

from celery import shared_task
from celery.signals import worker_ready
from django.utils import timezone

from apps.accounts.scope import EVERYTHING, Scope, scope_of
from apps.core import runs
from apps.telemetry.ingest import importer, kept_uploads
from apps.telemetry.ingest.parsers import TelemetryFormatError
from apps.telemetry.models import ImportRun, PurgeRun
from apps.telemetry.pull.tasks import (  # noqa: F401 - registers the pull tasks with workers
    pull_due_sources_task,
    pull_source_task,
)
from apps.telemetry.rollups import hourly, retention

logger = logging.getLogger(__name__)


def _scope_of_run(run: ImportRun, key: str | None) -> Scope:
    """The scope an upload works in: the one its task carries, else its uploader's (a
    task queued before tasks carried one), else the fleet (the command line)."""
    if key:
        return Scope.from_cache_key(key)
    return scope_of(run.created_by) if run.created_by else EVERYTHING


@shared_task(
    name="telemetry.rollup_pool_history",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=5,
    default_retry_delay=30,
    time_limit=30 * 60,
    soft_time_limit=29 * 60,
)
def rollup_pool_history_task(pool_id: int) -> int:
    return hourly.rollup_pool_history(pool_id)


@shared_task(
    name="telemetry.rollup_pending",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=15 * 60,
    soft_time_limit=14 * 60,
)
def rollup_pending_task() -> int:
    """Roll up the hours every channel queued (PendingRollup, PendingWorkloadRollup).
    Uploads, the API and the command line ask for it after their commit; beat runs it
    every 60 s (settings: "rollup-pending-telemetry"), so pulled data reaches the charts
    within about a minute. Idempotent: a drain killed halfway leaves its rows queued and
    the next one recomputes those hours. Returns the hours unqueued."""
    unqueued, _written = hourly.rollup_pending()
    return unqueued


@shared_task(name="telemetry.purge_raw_samples", time_limit=30 * 60)
def purge_raw_samples_task() -> int:
    """Raw samples older than the retention go, whole hours at a time: whole days by
    dropping their partitions, the rest by DELETE (apps/telemetry/rollups/retention.py);
    hourly rollups are kept forever. Each run is recorded as a PurgeRun saying what it
    removed. Returns the run's id."""
    run = PurgeRun.objects.create(status=PurgeRun.Status.RUNNING, started_at=timezone.now())
    return retention.purge_raw_samples(run).pk


@shared_task(name="telemetry.ensure_sample_partitions", time_limit=10 * 60, soft_time_limit=9 * 60)
def ensure_sample_partitions_task() -> int:
    """A partition for every day of the retention window and the days ahead,
    and for days whose rows wait in the DEFAULT partition (apps/telemetry/rollups/partitions.py).
    Beat runs it hourly, each worker when it starts, an import that left rows in DEFAULT
    after its commit. Idempotent. Returns the partitions created."""
    return len(retention.ensure_sample_partitions().created)


@worker_ready.connect
def _ensure_sample_partitions_at_worker_start(sender=None, **kwargs):
    # A fleet whose beat was down for days gets its partitions as soon as a worker is up.
    try:
        ensure_sample_partitions_task.delay()
    except Exception:  # the broker's errors vary by transport; beat asks again within the hour
        logger.warning(
            "could not queue telemetry.ensure_sample_partitions at worker start", exc_info=True
        )


@shared_task(name="telemetry.purge_kept_uploads", soft_time_limit=9 * 60, time_limit=10 * 60)
def purge_kept_uploads_task() -> int:
    """Uploads kept for a retry (apps/telemetry/ingest/kept_uploads.py) past their time go;
    returns how many. A retry after that asks for the file again, in a sentence."""
    return kept_uploads.purge_expired()


@shared_task(
    name="telemetry.import_file",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=60 * 60,
    soft_time_limit=55 * 60,
)
def import_file_task(
    run_id: int,
    path: str,
    columns: dict | None = None,
    tz: str = "UTC",
    scope: str | None = None,
) -> str:
    """Import an uploaded file recorded as ImportRun ``run_id``; progress is written on
    the run for the page's progress bar. Idempotent: samples are keyed, so a re-run after
    a lost worker stores nothing twice (its summary then counts duplicates). ``scope``
    is the uploader's when they uploaded (``Scope.cache_key``); without it, theirs now."""
    # The arguments are kept on the run, so the reaper can queue the import again when this
    # worker stops; a redelivered task of a run retried or finished meanwhile does nothing.
    claimed = runs.claim(
        ImportRun,
        run_id,
        startable=(ImportRun.Status.PENDING, ImportRun.Status.INTERRUPTED),
        progress_pct=5,
        task_arguments={"path": path, "columns": columns, "tz": tz, "scope": scope},
    )
    run = ImportRun.objects.select_related("pool", "workload", "created_by").get(pk=run_id)
    if not claimed:
        return run.status
    try:
        # Read a chunk at a time; dcgm: dated at the scrape time the form asked for
        # (run.scraped_at).
        importer.run_import(
            run, Path(path), columns=columns, tz=ZoneInfo(tz), scope=_scope_of_run(run, scope)
        )
    except TelemetryFormatError:
        # run_import marked the run rejected (a NUL character or bytes that are not UTF-8
        # included, with their line)
        Path(path).unlink(missing_ok=True)
        return ImportRun.Status.REJECTED
    except Exception as error:
        # Anything unexpected (run_import records its own; this also covers the time zone
        # it is called with): the page must stop showing "running"; the file is kept so
        # the re-delivered task (acks_late) can try again.
        run.fail(run.failure_sentence(error))
        raise
    # The samples are stored: the uploaded copy is no longer needed.
    Path(path).unlink(missing_ok=True)
    run.refresh_from_db(fields=["status"])
    return run.status
