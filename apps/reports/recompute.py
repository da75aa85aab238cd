"""Rebuilding the daily rows of a range on a worker (RecomputeJob), with its progress and
heartbeat, and the reaper of recomputes whose worker stopped (apps/core/runs.py)."""

from datetime import UTC, datetime, time, timedelta

from apps.core import runs
from apps.core.sentences import gettext_noop, sentence
from apps.reports.models import RecomputeJob
from apps.telemetry.rollups.days import rebuild_days

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
        progress_pct=0,
        days_done=0,
        rows_written=0,
        message="",
    )
    if not claimed:
        return 0
    job = RecomputeJob.objects.get(pk=job_id)
    with job.running():
        day = job.start_day
        while day <= job.end_day:
            last = min(day + timedelta(days=DAYS_PER_STEP - 1), job.end_day)
            pool_rows, workload_rows = rebuild_days(
                datetime.combine(day, time.min, tzinfo=UTC),
                datetime.combine(last + timedelta(days=1), time.min, tzinfo=UTC),
            )
            job.days_done += (last - day).days + 1
            job.rows_written += pool_rows + workload_rows
            job.advance(job.days_done_pct(), also_save=["days_done", "rows_written"])
            day = last + timedelta(days=1)
        job.succeed(
            sentence(
                gettext_noop("%(rows)s daily rows rebuilt over %(days)s days."),
                rows=f"{job.rows_written:,}",
                days=job.day_count,
            )
        )
    return job.rows_written


def reap_stalled_recomputes() -> int:
    """Mark recomputes not heard from for a few minutes interrupted and queue them again
    (a rebuild is keyed, so a rerun is safe). Returns the jobs marked."""
    from apps.core.outbox import enqueue

    return runs.reap(
        RecomputeJob.objects.all(),
        describe=lambda job: (gettext_noop("The worker"), gettext_noop("recomputing daily totals")),
        retry=lambda job: enqueue("reports.recompute_days", job.pk),
        advice=lambda job: gettext_noop("start the recompute again."),
    )
