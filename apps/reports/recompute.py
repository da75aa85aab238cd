"""Rebuilding the daily rows of a range on a worker (RecomputeJob), with its progress and
heartbeat, and the reaper of recomputes whose worker stopped (apps/core/runs.py)."""

from datetime import UTC, datetime, time, timedelta

from django.utils import timezone

from apps.core import runs
from apps.reports.models import RecomputeJob
from apps.telemetry.days import rebuild_days

DAYS_PER_STEP = 7


def run_recompute(job_id: int) -> int:
    """Rebuild a range's daily rows a week at a time, saving progress after each week;
    returns the rows written.

    Each week is a keyed rebuild (delete + insert in one transaction), so an attempt after
    a worker died writes the same rows again, never twice. A job finished, running
    elsewhere or out of attempts is left alone (0)."""
    claimed = runs.claim(
        RecomputeJob,
        job_id,
        startable=(RecomputeJob.Status.QUEUED, RecomputeJob.Status.INTERRUPTED),
        days_done=0,
        rows_written=0,
        message="",
    )
    if not claimed:
        return 0
    job = RecomputeJob.objects.get(pk=job_id)
    try:
        with runs.heartbeat(RecomputeJob, job.pk):
            day = job.start_day
            while day <= job.end_day:
                last = min(day + timedelta(days=DAYS_PER_STEP - 1), job.end_day)
                pool_rows, workload_rows = rebuild_days(
                    datetime.combine(day, time.min, tzinfo=UTC),
                    datetime.combine(last + timedelta(days=1), time.min, tzinfo=UTC),
                )
                job.days_done += (last - day).days + 1
                job.rows_written += pool_rows + workload_rows
                job.heartbeat_at = timezone.now()
                job.save(update_fields=["days_done", "rows_written", "heartbeat_at"])
                day = last + timedelta(days=1)
    except Exception as error:
        job.status, job.finished_at = RecomputeJob.Status.FAILED, timezone.now()
        job.message = (
            f"The recompute stopped with an error ({type(error).__name__}: {error}); the days "
            "rebuilt so far are kept. Start it again; the server log has the details."
        )
        job.save(update_fields=["status", "message", "finished_at"])
        raise
    job.status, job.finished_at = RecomputeJob.Status.DONE, timezone.now()
    job.message = f"{job.rows_written:,} daily rows rebuilt over {job.day_count} days."
    job.save(update_fields=["status", "finished_at", "message"])
    return job.rows_written


def reap_stalled_recomputes() -> int:
    """Mark recomputes not heard from for a few minutes interrupted and queue them again
    (a rebuild is keyed, so a rerun is safe). Returns the jobs marked."""
    from apps.core.outbox import enqueue

    return runs.reap(
        RecomputeJob.objects.all(),
        describe=lambda job: ("worker", "recomputing daily totals"),
        retry=lambda job: enqueue("reports.recompute_days", job.pk),
        advice=lambda job: "start the recompute again.",
    )
