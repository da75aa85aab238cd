"""Heartbeats of background runs (imports, exports, recomputes), and the reaper that marks
a run whose worker stopped as interrupted and retries it.

A run's ``heartbeat_at`` is written when it starts, at each progress update and, from a
thread of its own, every ``RUN_HEARTBEAT_SECONDS`` while a long step runs (a COPY of a
large file holds one transaction for minutes, and a write inside it would not be seen
until it commits). A worker killed with SIGKILL stops beating at once, whereas its task
only comes back from Redis after the visibility timeout (two hours): the reaper
(``core.reap_stalled_runs``, every minute) notices within ``STALLED_RUN_AFTER_SECONDS``.

The runs are ``apps.core.jobs.Job`` models: they share the fields ``status``,
``heartbeat_at``, ``attempts``, ``message``, ``started_at``, ``finished_at`` and
``created_at``, and the status values "running" and "interrupted".
"""

import logging
import threading
from collections.abc import Callable
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.core.sentences import Sentence, gettext_noop, sentence, to_data

logger = logging.getLogger(__name__)

RUNNING = "running"
INTERRUPTED = "interrupted"


def stalled_before(now: datetime | None = None) -> datetime:
    """Runs last heard before this instant are taken for stopped."""
    return (now or timezone.now()) - timedelta(seconds=settings.STALLED_RUN_AFTER_SECONDS)


def last_heard_sentence(moment: datetime, now: datetime | None = None) -> str:
    """E.g. "14:02 UTC", with the date when it is not today (UTC)."""
    moment, now = moment.astimezone(UTC), (now or timezone.now()).astimezone(UTC)
    return f"{moment:%H:%M} UTC" if moment.date() == now.date() else f"{moment:%Y-%m-%d %H:%M} UTC"


def interrupted_sentence(*, who: str, doing: str, last_heard: datetime, next_step: str) -> Sentence:
    """E.g. "The worker stopped while importing (last heard 14:02 UTC); it is being
    retried." Its parts may be sentences themselves (msgids marked with gettext_noop):
    ``translated`` says the whole in the reader's language."""
    return sentence(
        gettext_noop("%(who)s stopped while %(doing)s (last heard %(last_heard)s); %(next_step)s"),
        who=who,
        doing=doing,
        last_heard=last_heard_sentence(last_heard),
        next_step=next_step,
    )


def claim(model, pk: int, *, startable: tuple[str, ...], **fields) -> bool:
    """Mark run ``pk`` running for this attempt, unless it is finished, already running
    with a fresh heartbeat, or out of attempts; False then, and the task does nothing.

    A task redelivered by the broker after its run was retried (or finished) meets a run
    it must not touch: the claim is one conditional UPDATE, so only one attempt runs."""
    now = timezone.now()
    if "message" in fields:
        fields.setdefault("message_parts", [])
    claimable = Q(status__in=startable) | Q(status=RUNNING, heartbeat_at__lt=stalled_before(now))
    return bool(
        model.objects.filter(claimable, pk=pk, attempts__lt=settings.RUN_MAX_ATTEMPTS).update(
            status=RUNNING,
            heartbeat_at=now,
            attempts=F("attempts") + 1,
            started_at=now,
            finished_at=None,
            **fields,
        )
    )


class _Beat:
    """What a block under ``heartbeat`` reports: its progress, written by the heartbeat's
    thread at once rather than by the block, whose transaction would hold the run's row
    locked (and hide the value) until it commits."""

    def __init__(self):
        self.progress_pct: int | None = None
        self.wake = threading.Event()

    def progress(self, percent: int) -> None:
        if percent != self.progress_pct:
            self.progress_pct = percent
            self.wake.set()


@contextmanager
def heartbeat(model, pk: int):
    """Keep run ``pk``'s ``heartbeat_at`` fresh while the block runs, from a thread with
    its own database connection; the block may report ``progress(percent)`` on the object
    it gets.

    The row is skipped while another transaction holds it locked, rather than waited for:
    a heartbeat must never stall the run it reports on."""
    stop = threading.Event()
    beat_state = _Beat()
    interval_seconds = settings.RUN_HEARTBEAT_SECONDS

    def beat():
        try:
            while True:
                beat_state.wake.wait(interval_seconds)
                beat_state.wake.clear()
                if stop.is_set():
                    break
                fields = {"heartbeat_at": timezone.now()}
                if beat_state.progress_pct is not None:
                    fields["progress_pct"] = beat_state.progress_pct
                unlocked = model.objects.filter(pk=pk).select_for_update(skip_locked=True)
                try:
                    with transaction.atomic():
                        model.objects.filter(pk__in=unlocked.values("pk")).update(**fields)
                except DatabaseError:
                    logger.warning("could not record the heartbeat of %s %s", model.__name__, pk)
        finally:
            connections.close_all()  # this thread's connections only

    thread = threading.Thread(target=beat, name=f"heartbeat-{model.__name__}-{pk}", daemon=True)
    thread.start()
    try:
        yield beat_state
    finally:
        stop.set()
        beat_state.wake.set()
        thread.join(timeout=interval_seconds + 10)


def reap(
    queryset,
    *,
    describe: Callable[[object], tuple[str, str]],
    retry: Callable[[object], None] | None,
    can_retry: Callable[[object], bool] = lambda run: True,
    advice: Callable[[object], str],
    now: datetime | None = None,
) -> int:
    """Mark the running rows of ``queryset`` last heard before ``stalled_before()``
    interrupted, with a sentence, and ``retry(run)`` those that can be retried and have
    attempts left. ``describe(run)`` is (who, doing) and ``advice(run)`` what to do, as
    msgids marked with gettext_noop: ("The worker", "importing"), "import the file again.";
    the sentence is stored in English with them, and each page says it in its language.

    Returns the runs marked. Each is marked by a conditional UPDATE on the heartbeat it
    was read with, so two reapers at once, or a run that beats again meanwhile, never
    mark it twice."""
    now = now or timezone.now()
    cutoff = stalled_before(now)
    stalled = queryset.filter(status=RUNNING).filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff)
    )
    marked = 0
    for run in stalled:
        who, doing = (sentence(part) for part in describe(run))
        last_heard = run.heartbeat_at or run.created_at
        retrying = retry is not None and can_retry(run) and run.attempts < settings.RUN_MAX_ATTEMPTS

        def said(next_step: str, who=who, doing=doing, last_heard=last_heard) -> dict:
            message = interrupted_sentence(
                who=who, doing=doing, last_heard=last_heard, next_step=sentence(next_step)
            )
            return {"message": message, "message_parts": to_data(message)}

        updated = (
            type(run)
            .objects.filter(pk=run.pk, status=RUNNING, heartbeat_at=run.heartbeat_at)
            .update(
                status=INTERRUPTED,
                finished_at=now,
                **said(gettext_noop("it is being retried.") if retrying else advice(run)),
            )
        )
        if not updated:
            continue
        marked += 1
        logger.warning("%s %s stopped; marked interrupted", type(run).__name__, run.pk)
        if retrying:
            try:
                retry(run)  # through the outbox: kept while the broker is down
            except Exception:  # the broker's errors vary by transport
                logger.warning("could not queue the retry of %s %s", type(run).__name__, run.pk)
                type(run).objects.filter(pk=run.pk).update(**said(advice(run)))
    return marked


def reap_stalled_runs() -> dict[str, int]:
    """Run every reaper in ``settings.STALLED_RUN_REAPERS``; returns runs marked by each."""
    return {path: import_string(path)() for path in settings.STALLED_RUN_REAPERS}
