"""Celery tasks of the backups app: thin, idempotent (recomputed from the drills), so
acknowledged late."""

from celery import shared_task

from apps.backups import services


@shared_task(
    name="backups.refresh_drill_schedules",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=3,
    default_retry_delay=300,
    time_limit=10 * 60,
    soft_time_limit=9 * 60,
)
def refresh_drill_schedules_task() -> int:
    """Daily (settings: "refresh-drill-schedules"): every policy's due date and overdue
    flag from its drills. Returns how many policies have a drill overdue."""
    return services.refresh_drill_schedules()
