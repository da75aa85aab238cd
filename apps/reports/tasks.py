from datetime import UTC, datetime, time, timedelta

from celery import shared_task
from django.utils import timezone

from apps.reports.models import RecomputeJob
from apps.reports.rollups import rebuild_days

DAYS_PER_STEP = 7


@shared_task(acks_late=True)
def recompute_days_task(job_id: int) -> int:
    """Rebuild a range's daily rows a week at a time, saving progress after each week.

    Each week is a keyed rebuild (delete + insert in one transaction), so a redelivered
    task after a worker died writes the same rows again, never twice."""
    job = RecomputeJob.objects.get(pk=job_id)
    job.status, job.days_done, job.rows_written = RecomputeJob.Status.RUNNING, 0, 0
    job.save(update_fields=["status", "days_done", "rows_written"])
    try:
        day = job.start_day
        while day <= job.end_day:
            last = min(day + timedelta(days=DAYS_PER_STEP - 1), job.end_day)
            pool_rows, workload_rows = rebuild_days(
                datetime.combine(day, time.min, tzinfo=UTC),
                datetime.combine(last + timedelta(days=1), time.min, tzinfo=UTC),
            )
            job.days_done += (last - day).days + 1
            job.rows_written += pool_rows + workload_rows
            job.save(update_fields=["days_done", "rows_written"])
            day = last + timedelta(days=1)
    except Exception as error:
        job.status, job.message = RecomputeJob.Status.FAILED, f"{type(error).__name__}: {error}"
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "message", "finished_at"])
        raise
    job.status, job.finished_at = RecomputeJob.Status.DONE, timezone.now()
    job.message = f"{job.rows_written:,} daily rows rebuilt over {job.day_count} days."
    job.save(update_fields=["status", "finished_at", "message"])
    return job.rows_written


@shared_task(name="reports.warm_report_cache", ignore_result=True)
def warm_report_cache_task() -> int:
    """Recompute the pages viewed lately after a change (apps/reports/cache.py).

    The flag is cleared first, so a change committed while this runs queues the next
    warm-up rather than being missed. Recomputing is idempotent: a redelivered or
    duplicated warm-up only writes the same cache entries again."""
    from django.core.cache import cache

    from apps.reports.cache import WARM_FLAG_KEY
    from apps.reports.views import warm_recent_views

    cache.delete(WARM_FLAG_KEY)
    return warm_recent_views()


@shared_task(name="reports.compute_report", ignore_result=True)
def compute_report_task(query: str) -> bool:
    """A long report's figures, computed for the page that polls for them (the reports
    page with a range over ``SYNC_RECOMPUTE_DAYS``). Idempotent: it writes cache entries."""
    from apps.reports.views import compute_report_in_background

    return compute_report_in_background(query)
