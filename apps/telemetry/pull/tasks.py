"""Celery tasks of the pull channels (apps/telemetry/pull/), run by beat.

Celery's autodiscovery imports ``tasks.py`` only; ``apps/telemetry/tasks.py`` imports this
module so that workers register these tasks.
"""

from datetime import datetime, timedelta

from celery import shared_task
from django.utils import timezone

from apps.core import runs
from apps.core.sentences import gettext_noop, sentence
from apps.telemetry.models import MIN_PULL_INTERVAL_SECONDS, ImportRun, PullSource
from apps.telemetry.pull import connect, scrapes, sources, tsdb

# Time limits: up to seven Prometheus queries of at most 10 s each, then the import (an
# hourly pull: seven queries of at most HOURLY_QUERY_TIMEOUT_SECONDS for one chunk).
PULL_SOFT_TIME_LIMIT_SECONDS = 4 * 60
PULL_TIME_LIMIT_SECONDS = 5 * 60
# A pull enqueued by beat that no worker has started within the source's interval (at
# least one beat tick) is dropped: a later tick enqueues a fresh one, so a busy queue
# never fills with stale pulls.
MIN_PULL_EXPIRY_SECONDS = MIN_PULL_INTERVAL_SECONDS


# A source pulled a few seconds after a beat tick (the worker's delay) is due again at the
# tick one interval later, not one tick after that: "due" allows half a tick early. Two
# pulls of one source stay at least interval − this apart.
DUE_EARLY_SECONDS = MIN_PULL_INTERVAL_SECONDS / 2


def is_due(source: PullSource, now) -> bool:
    return source.last_pulled_at is None or (
        source.last_pulled_at + timedelta(seconds=source.interval_seconds - DUE_EARLY_SECONDS)
        <= now
    )


@shared_task(
    name="telemetry.pull_source",
    # Idempotent by design: a Prometheus range is keyed by (device, instant), and a
    # re-run scrape is a new reading at a new instant, never a double count.
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=0,  # the next beat tick is the retry
    time_limit=PULL_TIME_LIMIT_SECONDS,
    soft_time_limit=PULL_SOFT_TIME_LIMIT_SECONDS,
)
def pull_source_task(source_id: int, only_if_due: bool = False) -> str:
    """Pull one source now; with ``only_if_due`` (beat), skip it when another pull of it
    already ran within its interval (e.g. two enqueued while the workers were busy)."""
    source = PullSource.objects.select_related("pool").filter(pk=source_id).first()
    if source is None or not source.enabled:
        return "skipped"
    if only_if_due and not is_due(source, timezone.now()):
        return "skipped"
    if source.kind == PullSource.Kind.PROMETHEUS_HOURLY:
        # One chunk of complete hours a run; a source behind catches up tick by tick.
        run = tsdb.pull_hourly(source, max_chunks=1)
        return run.status if run is not None else "nothing due"
    return sources.pull_source(source).status


@shared_task(
    name="telemetry.pull_scrape_batch",
    # As pull_source: a batch commits its samples, runs and sources together or not at
    # all, so a redelivered batch scrapes again at a new instant and counts nothing twice.
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=0,
    time_limit=PULL_TIME_LIMIT_SECONDS,
    soft_time_limit=PULL_SOFT_TIME_LIMIT_SECONDS,
)
def pull_scrape_batch_task(source_ids: list[int], only_if_due: bool = False) -> dict:
    """Scrape a batch of dcgm-exporter sources and store them in one transaction
    (``scrapes.pull_dcgm_exporters``); with ``only_if_due`` (beat), sources pulled within
    their interval meanwhile are left out. Returns the runs' count per status."""
    now = timezone.now()
    sources = [
        source
        for source in PullSource.objects.select_related("pool")
        .filter(pk__in=source_ids, enabled=True, kind=PullSource.Kind.DCGM_EXPORTER)
        .order_by("pk")
        if not only_if_due or is_due(source, now)
    ]
    statuses: dict[str, int] = {}
    for run in scrapes.pull_dcgm_exporters(sources):
        statuses[run.status] = statuses.get(run.status, 0) + 1
    return statuses


@shared_task(name="telemetry.pull_due_sources", time_limit=60, soft_time_limit=50)
def pull_due_sources_task() -> int:
    """Enqueue a pull of every enabled source whose ``last_pulled_at + interval`` has come
    (``is_due``); returns how many sources. Beat runs this every 15 s (settings:
    "pull-telemetry-sources"), so 15 s (``MIN_PULL_INTERVAL_SECONDS``) is the finest
    interval that holds: a source due between two ticks waits for the next, up to 15 s
    late. dcgm-exporter sources go in batches of ``scrapes.SCRAPE_BATCH_SIZE`` to
    ``telemetry.pull_scrape_batch``, so 1,250 nodes are 25 tasks a tick, each one
    transaction; Prometheus sources are pulled one task each. Sources are filtered here
    by ``is_due``, the one definition of due that a single pull checks too (1,250 rows
    read in a few milliseconds)."""
    now = timezone.now()
    sources = (
        PullSource.objects.filter(enabled=True)
        .only("id", "kind", "last_pulled_at", "interval_seconds")
        .order_by("pk")
    )
    enqueued = 0
    scrape_sources: list[PullSource] = []
    for source in sources:
        if not is_due(source, now):
            continue
        enqueued += 1
        if source.kind == PullSource.Kind.DCGM_EXPORTER:
            scrape_sources.append(source)
            continue
        pull_source_task.apply_async(
            (source.pk,),
            {"only_if_due": True},
            expires=max(source.interval_seconds, MIN_PULL_EXPIRY_SECONDS),
        )
    for first in range(0, len(scrape_sources), scrapes.SCRAPE_BATCH_SIZE):
        batch = scrape_sources[first : first + scrapes.SCRAPE_BATCH_SIZE]
        pull_scrape_batch_task.apply_async(
            ([source.pk for source in batch],),
            {"only_if_due": True},
            # A batch nobody started within its sources' shortest interval is superseded
            # by a later tick's.
            expires=max(min(source.interval_seconds for source in batch), MIN_PULL_EXPIRY_SECONDS),
        )
    return enqueued


@shared_task(
    name=connect.FIRST_PULL_TASK,
    # Idempotent by design, as pull_source: the range is keyed by (device, instant), and
    # the claim lets one attempt of the run start.
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=0,  # a failed first pull is beat's to repeat: the source is enabled
    time_limit=PULL_TIME_LIMIT_SECONDS,
    soft_time_limit=PULL_SOFT_TIME_LIMIT_SECONDS,
)
def connect_first_pull_task(run_id: int, source_id: int, since: str) -> str:
    """The first pull of a connected fleet (apps/telemetry/pull/connect.py): the last hour
    from ``since`` on, recorded on run ``run_id``, then its hours rolled up."""
    if not runs.claim(ImportRun, run_id, startable=(ImportRun.Status.PENDING,)):
        return "skipped"
    run = ImportRun.objects.get(pk=run_id)
    source = PullSource.objects.select_related("pool").filter(pk=source_id).first()
    if source is None:
        run.fail(sentence(gettext_noop("The pull source was deleted before its first pull.")))
        return run.status
    with runs.heartbeat(ImportRun, run.pk):
        run = connect.first_pull(run, source, datetime.fromisoformat(since))
    return run.status
