from celery import shared_task
from django.core.cache import cache

from apps.reports.cache import WARM_FLAG_KEY
from apps.reports.recompute import run_recompute
from apps.reports.warming import compute_report_in_background, warm_recent_views


@shared_task(name="reports.recompute_days", acks_late=True, reject_on_worker_lost=True)
def recompute_days_task(job_id: int) -> int:
    """Rebuild a range's daily rows (apps/reports/recompute.py). Idempotent: each week is
    a keyed rebuild, so a redelivered or retried task writes the same rows again."""
    return run_recompute(job_id)


@shared_task(name="reports.warm_report_cache", ignore_result=True)
def warm_report_cache_task() -> int:
    """Recompute the pages viewed lately after a change (apps/reports/cache.py).

    The flag is cleared first, so a change committed while this runs queues the next
    warm-up rather than being missed. Recomputing is idempotent: a redelivered or
    duplicated warm-up only writes the same cache entries again."""
    cache.delete(WARM_FLAG_KEY)
    return warm_recent_views()


@shared_task(name="reports.compute_report", ignore_result=True)
def compute_report_task(query: str, language: str | None = None, scope_key: str = "all") -> bool:
    """A long report's figures, computed for the page that polls for them (the reports
    page with a range over ``SYNC_RECOMPUTE_DAYS``), in the page's language and over the
    scope of the user who asked (``scope_key``, apps/accounts/scope.py). Idempotent: it
    writes cache entries."""
    return compute_report_in_background(query, language, scope_key)
