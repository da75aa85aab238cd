"""Figures computed ahead of a visit: after a change the pages viewed lately are warmed
(apps/reports/cache.py), and a long report is computed by a worker for the page that
polls for it. Both call the selectors and the renderer a page calls, with the page's own
cache keys, so the page then finds them; neither builds a request."""

import time

from django.conf import settings
from django.http import QueryDict
from django.utils import timezone, translation

from apps.accounts.scope import Scope
from apps.pools.models import Pool
from apps.reports import rendering, selectors
from apps.reports.cache import (
    WARM_BUDGET_SECONDS,
    background_heartbeat,
    recent_views,
    record_background_heartbeat,
    report_job,
    set_background_progress,
)
from apps.reports.forms import report_filter_form

# What a page of an app above reports computes and caches from these figures, warmed
# with them: (kind of page) → callables taking ``now`` and the scope, in order (the
# Overview's figures and their rendering, apps/dashboard/apps.py). Reports cannot import
# those apps; they register here.
PAGE_WARMERS: dict[str, list] = {}


def register_page_warmer(kind: str, warm) -> None:
    PAGE_WARMERS.setdefault(kind, []).append(warm)


def warm_view(kind: str, argument: str = "", scope_key: str = "all") -> bool:
    """Compute one remembered page's figures into the cache (a no-op when they are there
    already), for the scope it was viewed in (``scope_key``). False when the page no
    longer exists, is no longer in that scope or its filters are no longer valid."""
    now = timezone.now()
    scope = Scope.from_cache_key(scope_key)
    if kind == "overview":
        for warm in PAGE_WARMERS.get(kind, ()):
            warm(now, scope)
        return True
    if kind == "pool":
        pools = Pool.objects.in_scope(scope).filter(pk=int(argument))
        pool = pools.select_related("gpu_model").first()
        if pool is None:
            return False
        selectors.pool_figures(pool, now, scope)
        return True
    if kind == "pool-list":
        selectors.pool_list_figures(now, scope)
        return True
    if kind == "report":
        params = QueryDict(argument)
        form = report_filter_form(params, scope)
        if not form.is_valid():
            return False
        rendering.report_results(form, argument)
        rendering.filter_fields_html(form, params.urlencode())
        return True
    return False


def warm_recent_views(budget_seconds: float = WARM_BUDGET_SECONDS) -> int:
    """Recompute the pages viewed lately, most recent first, until the budget is spent.
    Returns how many were warmed."""
    started = time.monotonic()
    warmed = 0
    for kind, argument, *seen in recent_views():
        if time.monotonic() - started > budget_seconds:
            break
        language = seen[0] if seen else settings.LANGUAGE_CODE
        scope_key = seen[1] if len(seen) > 1 else "all"
        # The cache keys hold the language and the scope: the page is warmed in the
        # language it was seen in, for the scope of who saw it.
        with translation.override(language):
            warmed += warm_view(kind, argument, scope_key)
    return warmed


def compute_report_in_background(
    query: str, language: str | None = None, scope_key: str = "all"
) -> bool:
    """What ``compute_report_task`` runs: the report's figures and partial into the cache,
    in ``language`` (the polling page's; default: the site's) and over the scope of the
    user who asked (``scope_key``), telling the progress partial after each step."""
    with translation.override(language or settings.LANGUAGE_CODE):
        return _compute_report(query, scope_key)


def _compute_report(query: str, scope_key: str) -> bool:
    form = report_filter_form(QueryDict(query), Scope.from_cache_key(scope_key))
    if not form.is_valid():
        return False
    job = report_job(query, scope_key)

    def progress(done, step):
        set_background_progress("report", job, {"done": done, "step": step})
        record_background_heartbeat("report", job)

    progress(0, selectors.REPORT_STEPS[0])
    try:
        with background_heartbeat("report", job):
            rendering.report_results(form, query, progress=progress)
    except Exception as error:
        # The polling page stops and says why, rather than waiting for the job's key to
        # expire; the task still fails, so the worker's log has the traceback.
        set_background_progress(
            "report",
            job,
            {"done": 0, "step": "failed", "error": f"{type(error).__name__}: {error}"},
        )
        raise
    return True
