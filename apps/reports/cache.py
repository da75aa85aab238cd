"""Report figures cached until the data under them changes, and recomputed by a worker
right after it changes.

Every cached entry's key holds the *reports version*, a counter in the cache that every
write affecting a report bumps: hourly and daily rollups (apps/reports/rollups.py), and
saving or deleting a pool, workload, GPU model or interruption (apps/reports/signals.py).
A bumped counter makes every older entry unreachable, so a page never shows figures
older than the data; entries also expire after ``TTL_SECONDS`` so the cache cleans itself.
The key also holds the current UTC hour, because "the last 24 hours" moves with it, and
the active language: entries hold rendered partials and charts whose titles are
translated, so a page in Chinese never reads the English entry (and a warm-up recomputes
a page in the language it was viewed in, ``remember_view``).

Computing the figures of a year of rollups takes seconds (bench/dashboard.py), and with
pull sources the data changes every minute. So a change does not leave the next visitor
to pay for it: ``data_changed`` also schedules a *warm-up* (``warm_report_cache_task``,
debounced to one per ``WARM_DELAY_SECONDS``) that recomputes the pages viewed in the last
``RECENT_WINDOW_SECONDS`` (``remember_view``), most recently viewed first, within
``WARM_BUDGET_SECONDS``. A visitor arriving during the warm-up computes the page in the
request, as before; figures are never served stale.

A warm-up keeps no run record and needs no heartbeat: no page shows it running, and one
lost with its worker leaves only entries not yet computed, which their next visitor
computes as without warm-ups (the flag that debounces warm-ups expires a minute later, and
beat warms again each hour). A long report computed for a polling page does show
progress, so it beats like the other background runs (apps/core/runs.py): the worker
writes the job's heartbeat at each step and, from a thread, every
``RUN_HEARTBEAT_SECONDS``; a poll that finds it not heard from for
``STALLED_RUN_AFTER_SECONDS`` says the worker stopped and queues the job again, up to
``RUN_MAX_ATTEMPTS`` attempts (``background_job_stalled``, ``retry_background_job``).

With Redis unreachable the cache answers every read as a miss (apps/core/cache.py): pages
compute their figures in the request, and no work is handed to workers, whose results
would have nowhere to go. A version bump lost to the outage is made on the next call that
reaches Redis again, so figures cached before the outage are not served after it.
"""

import hashlib
import json
import logging
import threading
import time
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone, translation

from apps.core.cache import cache_unreachable

logger = logging.getLogger(__name__)

VERSION_KEY = "reports:version"
TTL_SECONDS = 15 * 60
RECENT_KEY = "reports:recent-views"
RECENT_WINDOW_SECONDS = 15 * 60
RECENT_LIMIT = 40
# A view already remembered less than this long ago is not written again (one cache
# write per page a minute, not one per request).
RECENT_REFRESH_SECONDS = 60
WARM_FLAG_KEY = "reports:warm-up-scheduled"
# Rollups and edits come in bursts (a drain rolls up many pool-hours, a form saves several
# rows): one warm-up after the burst, not one per write.
WARM_DELAY_SECONDS = 2
WARM_BUDGET_SECONDS = 20

# A bump this process could not make while the cache was unreachable, made on its return.
_bump_missed = False


def reports_version() -> int:
    if _bump_missed:
        bump_reports_version()
    version = cache.get(VERSION_KEY)
    if version is None:
        cache.add(VERSION_KEY, 1, timeout=None)
        version = cache.get(VERSION_KEY, 1)
    return version


def bump_reports_version() -> None:
    global _bump_missed
    try:
        bumped = cache.incr(VERSION_KEY) is not None
    except ValueError:  # not there yet (fresh cache)
        cache.add(VERSION_KEY, 2, timeout=None)
        bumped = not cache_unreachable()
    _bump_missed = not bumped


def data_changed() -> None:
    """What a committed write under the reports calls: older figures become unreachable
    and a worker recomputes the pages people are looking at."""
    bump_reports_version()
    schedule_warm_up()


def workers_run_warm_ups() -> bool:
    """Whether a worker takes report work off the web process: ``REPORTS_WARM_UP`` on,
    Celery not eager (no worker with ``make run``) and the cache, where workers leave
    their results, reachable."""
    return (
        settings.REPORTS_WARM_UP
        and not settings.CELERY_TASK_ALWAYS_EAGER
        and not cache_unreachable()
    )


def schedule_warm_up() -> bool:
    """Queue one warm-up unless one is already waiting; True when this call queued it.

    Off where no worker runs (Celery eager: the warm-up would run in the request that
    wrote) and where ``REPORTS_WARM_UP`` is false. A broker that is down loses only the warm-up,
    never the write that triggered it."""
    if not workers_run_warm_ups():
        return False
    if not cache.add(WARM_FLAG_KEY, 1, timeout=WARM_DELAY_SECONDS + 60):
        return False
    from config.celery_app import app

    try:
        # By name: the tasks module imports the warm-up, which imports this one.
        app.send_task("reports.warm_report_cache", countdown=WARM_DELAY_SECONDS, retry=False)
    except Exception:  # the broker's errors vary by transport
        cache.delete(WARM_FLAG_KEY)
        logger.warning("could not queue the reports warm-up", exc_info=True)
        return False
    return True


def _key(name: str, params: dict) -> str:
    hour = timezone.now().strftime("%Y%m%d%H")
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    language = translation.get_language() or settings.LANGUAGE_CODE
    # The reporting currency is part of every figure a report caches.
    currency = settings.REPORTING_CURRENCY
    return f"reports:{name}:{reports_version()}:{hour}:{language}:{currency}:{digest[:24]}"


def cached_value(name: str, params: dict):
    """The cached result for these parameters at the current version, or None."""
    return cache.get(_key(name, params))


def cached(name: str, params: dict, compute):
    """``compute()``'s result, from the cache while nothing it reads has changed."""
    key = _key(name, params)
    found = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, timeout=TTL_SECONDS)
    return found


def remember_view(kind: str, argument: str = "", scope_key: str = "all") -> None:
    """Note that a page was viewed, in the active language and by a viewer of the scope
    ``scope_key`` (apps/accounts/scope.py), for the next warm-up (``recent_views``)."""
    now = time.time()
    recent = cache.get(RECENT_KEY) or {}
    language = translation.get_language() or settings.LANGUAGE_CODE
    # A page in the default language seen by the whole fleet's scope is remembered as
    # (kind, argument); another language is kept as a third item, the language to warm
    # it in, and another scope as a fourth, the scope to compute it for.
    entry = [kind, argument]
    if language != settings.LANGUAGE_CODE or scope_key != "all":
        entry.append(language)
    if scope_key != "all":
        entry.append(scope_key)
    name = json.dumps(entry)
    if now - recent.get(name, 0) < RECENT_REFRESH_SECONDS:
        return
    recent[name] = now
    kept = sorted(
        ((seen, entry) for entry, seen in recent.items() if now - seen < RECENT_WINDOW_SECONDS),
        reverse=True,
    )[:RECENT_LIMIT]
    cache.set(RECENT_KEY, {entry: seen for seen, entry in kept}, timeout=RECENT_WINDOW_SECONDS)


def recent_views() -> list[tuple[str, ...]]:
    """(kind, argument) of the pages viewed in the last ``RECENT_WINDOW_SECONDS``, most
    recent first; (kind, argument, language) for a page viewed in a language other than
    the default one; (kind, argument, language, scope key) for a page viewed by a viewer
    who does not see the whole fleet."""
    now = time.time()
    recent = cache.get(RECENT_KEY) or {}
    ordered = sorted(
        ((seen, entry) for entry, seen in recent.items() if now - seen < RECENT_WINDOW_SECONDS),
        reverse=True,
    )
    return [tuple(json.loads(entry)) for _, entry in ordered]


# --- long reports computed by a worker (apps/reports/views.py) ----------------------------

BACKGROUND_JOB_SECONDS = 10 * 60


def report_job(query: str, scope_key: str) -> str:
    """What names a background report's job: its filters and the scope it is computed
    for, so two scopes asking for the same filters get a job each."""
    return f"{scope_key}?{query}"


def _job_key(prefix: str, kind: str, query: str) -> str:
    # Per data version: a change while a job runs makes its result unreachable, and the
    # next poll queues a job for the new data. Per language too: the job renders the
    # page's partial in the language of the page that polls for it.
    digest = hashlib.sha256(query.encode()).hexdigest()[:24]
    language = translation.get_language() or settings.LANGUAGE_CODE
    return f"reports:{prefix}:{kind}:{reports_version()}:{language}:{digest}"


def start_background_job(kind: str, query: str) -> bool:
    """True when this call should queue the job (none queued for this data version)."""
    return cache.add(_job_key("job", kind, query), 1, timeout=BACKGROUND_JOB_SECONDS)


def background_attempts(kind: str, query: str) -> int:
    """Times the job was queued for this data version (0: never)."""
    return cache.get(_job_key("job", kind, query)) or 0


def forget_background_job(kind: str, query: str) -> None:
    """Drop the job's key, when it could not be queued, so the next view queues it."""
    cache.delete(_job_key("job", kind, query))


def set_background_progress(kind: str, query: str, progress: dict) -> None:
    cache.set(_job_key("progress", kind, query), progress, timeout=BACKGROUND_JOB_SECONDS)


def background_progress(kind: str, query: str) -> dict | None:
    return cache.get(_job_key("progress", kind, query))


def record_background_heartbeat(kind: str, query: str, at: float | None = None) -> None:
    """The worker computing the job is alive at ``at`` (a Unix time; default now)."""
    heard_at = time.time() if at is None else at
    cache.set(_job_key("heard", kind, query), heard_at, timeout=BACKGROUND_JOB_SECONDS)


def background_last_heard(kind: str, query: str) -> float | None:
    """Unix time the job's worker was last heard from, or None."""
    return cache.get(_job_key("heard", kind, query))


@contextmanager
def background_heartbeat(kind: str, query: str):
    """Keep the job's heartbeat fresh from a thread while the block runs: one step of a
    long report (a single query over a year of rollups) can outlast the reaper's wait."""
    stop = threading.Event()
    # The active language is the thread's own: the beating thread keys it the same way.
    language = translation.get_language() or settings.LANGUAGE_CODE

    def beat():
        with translation.override(language):
            while not stop.wait(settings.RUN_HEARTBEAT_SECONDS):
                record_background_heartbeat(kind, query)

    record_background_heartbeat(kind, query)
    thread = threading.Thread(target=beat, name=f"heartbeat-{kind}-job", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=settings.RUN_HEARTBEAT_SECONDS + 10)


def background_job_stalled(kind: str, query: str, progress: dict | None) -> float | None:
    """When a started job's worker was last heard (a Unix time), if that is more than
    ``STALLED_RUN_AFTER_SECONDS`` ago: it showed progress, has neither failed nor been
    given up, and stopped beating. None while it is alive, finished or not started."""
    if not progress or progress.get("error") or progress.get("interrupted"):
        return None
    heard_at = background_last_heard(kind, query)
    if heard_at is None or time.time() - heard_at <= settings.STALLED_RUN_AFTER_SECONDS:
        return None
    return heard_at


def retry_background_job(kind: str, query: str, progress: dict) -> bool:
    """Count one more attempt of a stalled job and show ``progress`` (waiting for the
    next worker) until a worker takes it; True when this call should queue it: another
    poll may have counted the attempt already."""
    attempt = background_attempts(kind, query) + 1
    if not cache.add(_job_key(f"retry-{attempt}", kind, query), 1, BACKGROUND_JOB_SECONDS):
        return False
    cache.set(_job_key("job", kind, query), attempt, timeout=BACKGROUND_JOB_SECONDS)
    set_background_progress(kind, query, progress)
    cache.delete(_job_key("heard", kind, query))  # not stalled until a worker beats again
    return True
