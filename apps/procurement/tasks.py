"""Celery tasks: thin, keyed by ids."""

from celery import shared_task


@shared_task(
    name="procurement.generate_export",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=2,
    time_limit=10 * 60,
    soft_time_limit=9 * 60,
)
def generate_export_task(export_id: int) -> str:
    """Write one export's file. Idempotent: a re-run recomputes and replaces the file."""
    from apps.procurement.exports import WRITERS
    from apps.procurement.services import run_export

    return run_export(export_id, writers=WRITERS)
