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
def generate_export_task(export_id: int, language: str | None = None) -> str:
    """Write one export's file, in ``language`` (the page's that asked for it; default:
    the one kept on the export, as a retry queues it). Idempotent: a re-run recomputes and
    replaces the file."""
    from apps.procurement.exports.jobs import run_export

    return run_export(export_id, language=language)
