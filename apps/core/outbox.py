"""Work for a worker, kept in the database until the broker has it (a transactional outbox).

``enqueue(task, *args, **kwargs)`` writes an ``OutboxTask`` row in the caller's
transaction, so the task exists exactly when the write that needs it does, and publishes
it once that transaction commits. Publishing is one attempt with the short broker
timeouts of ``config/settings.py``: with the broker down the request answers at once and
the row waits; for the next ``SKIP_PUBLISH_AFTER_FAILURE_SECONDS`` the process does not
try again after its commits, so a broker that hangs costs one request its timeouts, not
every request. ``drain_outbox`` publishes the waiting rows, oldest first; beat runs it
every 30 s (``core.drain_outbox``), and since beat needs the broker too, the first drain
after an outage runs within 30 s of the broker being back. Until then a run whose row
waits is shown as waiting for a worker.

Delivery is at least once: a row whose publish succeeded but whose ``enqueued_at`` could
not be saved is published again, so the tasks sent through here are idempotent (keyed
imports and rollups, exports and recomputes that rewrite their own output).

Where Celery runs tasks inline (eager: no broker configured, ``make run``), no row is
written: the task runs after the commit, as ``delay_on_commit`` does.
"""

import logging
import time
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.core.models import OutboxTask
from config.celery_app import app as celery_app

logger = logging.getLogger(__name__)

DRAIN_LIMIT = 500
# Published rows are kept this long, for the admin and for tracing a run's history.
KEEP_ENQUEUED = timedelta(days=7)
# After a failed publish, a process leaves the rows it records to the drain for this long
# rather than make each request wait for the broker's timeouts again.
SKIP_PUBLISH_AFTER_FAILURE_SECONDS = 10.0
_publish_failed_at = None  # time.monotonic() of this process's last failed publish


def enqueue(task, *args, **kwargs) -> OutboxTask | None:
    """Record ``task(*args, **kwargs)`` for a worker and publish it after the commit.

    ``task`` is a Celery task or its name: a module a task calls back enqueues it by name,
    so that it need not import the tasks module that imports it. Arguments must be JSON
    (ids, strings, numbers), as Celery's serializer needs anyway. Returns the row, or None
    where tasks run inline."""
    if celery_app.conf.task_always_eager:
        transaction.on_commit(lambda: _task_named(task).apply_async(args, kwargs))
        return None
    name = task if isinstance(task, str) else task.name
    row = OutboxTask.objects.create(name=name, args=list(args), kwargs=kwargs)
    # robust: a publish that fails after the commit is logged and left to the drain, never
    # raised into the request whose write is already saved.
    transaction.on_commit(lambda: _publish_after_commit(row.pk), robust=True)
    return row


def _task_named(task):
    """The task object of a task or task name; the apps' task modules are imported first
    (Celery's autodiscovery is lazy) so that every task is registered."""
    if not isinstance(task, str):
        return task
    if task not in celery_app.tasks:
        celery_app.loader.import_default_modules()
    return celery_app.tasks[task]


def _publish_after_commit(row_id: int) -> None:
    failed_at = _publish_failed_at
    if failed_at is not None and time.monotonic() - failed_at < SKIP_PUBLISH_AFTER_FAILURE_SECONDS:
        return
    publish(row_id)


def _send(row: OutboxTask) -> None:
    # One attempt: the row keeps the task when it fails. No result is kept: the runs
    # record their own progress, and subscribing to a result would make Celery's Redis
    # result backend retry its connection for 20 s when Redis is down.
    options = {"retry": False, "ignore_result": True}
    task = celery_app.tasks.get(row.name)
    if task is None:
        celery_app.send_task(row.name, args=row.args, kwargs=row.kwargs, **options)
    else:
        task.apply_async(row.args, row.kwargs, **options)


def publish(row_id: int) -> bool:
    """Publish one waiting row; True when the broker took it.

    The row is locked while it is published, so the drain and the commit hook never
    send the same row twice at once."""
    global _publish_failed_at
    with transaction.atomic():
        row = (
            OutboxTask.objects.select_for_update(skip_locked=True)
            .filter(pk=row_id, enqueued_at__isnull=True)
            .first()
        )
        if row is None:
            return False
        row.attempts += 1
        try:
            _send(row)
        except Exception as error:  # the broker's errors vary by transport
            row.last_error = f"{type(error).__name__}: {error}"[:2000]
            row.save(update_fields=["attempts", "last_error"])
            _publish_failed_at = time.monotonic()
            logger.warning(
                "broker unreachable: %s (outbox row %s) waits for the next drain: %s",
                row.name,
                row.pk,
                row.last_error,
            )
            return False
        row.enqueued_at = timezone.now()
        row.save(update_fields=["attempts", "enqueued_at"])
    _publish_failed_at = None
    return True


def drain_outbox(limit: int = DRAIN_LIMIT) -> int:
    """Publish waiting rows, oldest first, stopping at the first the broker refuses;
    returns how many were published. Rows published more than ``KEEP_ENQUEUED`` ago are
    deleted."""
    published = 0
    waiting = OutboxTask.objects.filter(enqueued_at__isnull=True)
    for row_id in list(waiting.values_list("pk", flat=True)[:limit]):
        if publish(row_id):
            published += 1
        elif OutboxTask.objects.filter(pk=row_id, enqueued_at__isnull=True).exists():
            break  # refused (not merely taken by a concurrent drain): the broker is down
    OutboxTask.objects.filter(enqueued_at__lt=timezone.now() - KEEP_ENQUEUED).delete()
    return published


def waiting_first_args(task_name: str) -> set:
    """The first argument of every ``task_name`` row not yet published: for a task
    taking a run's id, the runs still waiting for the broker."""
    return {
        args[0]
        for args in OutboxTask.objects.filter(name=task_name, enqueued_at__isnull=True)
        .values_list("args", flat=True)
        .iterator()
        if args
    }


def mark_waiting(runs, task, *, not_started: str) -> list:
    """Set ``waiting_for_worker`` on each of ``runs`` (exports, recomputes: models whose
    task is ``task(run.pk)``) and return them as a list: True while the run has not
    started (status ``not_started``) and its task is still kept here because the broker
    could not take it. One query for them all, none when no run is waiting to start;
    templates show it with ``components/_waiting_for_worker.html``."""
    runs = list(runs)
    not_started_ids = {run.pk for run in runs if run.status == not_started}
    waiting = waiting_first_args(task.name) & not_started_ids if not_started_ids else set()
    for run in runs:
        run.waiting_for_worker = run.pk in waiting
    return runs
