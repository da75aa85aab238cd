"""Celery tasks of the pull channels (apps/telemetry/pull.py), run by beat.

Celery's autodiscovery imports ``tasks.py`` only; ``apps/telemetry/tasks.py`` imports this
module so that workers register these tasks.
"""

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from apps.telemetry import pull, pull_hourly
from apps.telemetry.models import MIN_PULL_INTERVAL_SECONDS, PullSource

# Time limits: up to seven Prometheus queries of at most 10 s each, then the import (an
# hourly pull: seven queries of at most HOURLY_QUERY_TIMEOUT_SECONDS for one chunk).
PULL_SOFT_TIME_LIMIT_SECONDS = 4 * 60
PULL_TIME_LIMIT_SECONDS = 5 * 60
# A pull enqueued by beat that no worker has started within the source's interval (at
# least one beat tick) is dropped: a later tick enqueues a fresh one, so a busy queue
# never fills with stale pulls.
MIN_PULL_EXPIRY_SECONDS = MIN_PULL_INTERVAL_SECONDS


def is_due(source: PullSource, now) -> bool:
    return source.last_pulled_at is None or (
        source.last_pulled_at + timedelta(seconds=source.interval_seconds) <= now
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
        run = pull_hourly.pull_hourly(source, max_chunks=1)
        return run.status if run is not None else "nothing due"
    return pull.pull_source(source).status


@shared_task(name="telemetry.pull_due_sources", time_limit=60, soft_time_limit=50)
def pull_due_sources_task() -> int:
    """Enqueue a pull of every enabled source whose ``last_pulled_at + interval ≤ now``;
    returns how many. Beat runs this every 15 s (settings: "pull-telemetry-sources"), so
    15 s (``MIN_PULL_INTERVAL_SECONDS``) is the finest interval that holds: a source due
    between two ticks waits for the next, up to 15 s late. A few dozen sources are
    filtered here rather than with date arithmetic in SQL, which differs between
    PostgreSQL and SQLite."""
    now = timezone.now()
    sources = PullSource.objects.filter(enabled=True).only(
        "id", "last_pulled_at", "interval_seconds"
    )
    enqueued = 0
    for source in sources:
        if is_due(source, now):
            pull_source_task.apply_async(
                (source.pk,),
                {"only_if_due": True},
                expires=max(source.interval_seconds, MIN_PULL_EXPIRY_SECONDS),
            )
            enqueued += 1
    return enqueued
