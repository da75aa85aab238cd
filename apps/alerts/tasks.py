"""Celery tasks of the alerts app: thin, idempotent by design (an alert is unique while
firing, a delivery per alert, channel and event; a delivery is claimed before it is
sent), so acknowledged late."""

import logging

from celery import shared_task

from apps.alerts import services

logger = logging.getLogger(__name__)


@shared_task(
    name="alerts.evaluate",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=120,
    soft_time_limit=100,
    ignore_result=True,
)
def evaluate_alerts_task() -> dict:
    """Every minute (settings: "evaluate-alerts"): evaluate the rules, then send what
    they raised or resolved."""
    evaluation, delivery = services.evaluate_and_deliver()
    return {
        "rules": evaluation.rules,
        "fired": evaluation.fired,
        "resolved": evaluation.resolved,
        "sent": delivery.sent,
        "retrying": delivery.retrying,
        "failed": delivery.failed,
    }


@shared_task(
    name="alerts.deliver",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=90,
    soft_time_limit=75,
    ignore_result=True,
)
def deliver_alerts_task() -> dict:
    """Every 15 s (settings: "deliver-alert-notifications") and on demand: send the
    notifications whose next attempt has come."""
    summary = services.deliver_due()
    return {"sent": summary.sent, "retrying": summary.retrying, "failed": summary.failed}


# A weekly report whose receiver did not answer is tried again this often, this many times.
SLURM_REPORT_RETRY_SECONDS = 15 * 60
SLURM_REPORT_MAX_RETRIES = 4


@shared_task(
    bind=True,
    name="alerts.send_slurm_efficiency",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    time_limit=30 * 60,
    max_retries=SLURM_REPORT_MAX_RETRIES,
)
def send_slurm_efficiency_task(self, week: str | None = None) -> int:
    """The Slurm GPU efficiency report of ``week``'s week (an ISO date; None: last week),
    to its users and teams. Idempotent: each send is recorded once per week, channel and
    recipient, so a redelivered or retried task sends only what was not sent; one whose
    receiver did not answer is retried in 15 minutes."""
    from datetime import date

    from django.utils import timezone

    from apps.alerts.slurm_reports import last_week, send_weekly_efficiency

    day = date.fromisoformat(week) if week else last_week(timezone.now().date())
    delivery = send_weekly_efficiency(day)
    for failure in delivery.failed:
        logger.warning("Slurm efficiency report not sent to %s", failure)
    retries_left = self.request.retries < SLURM_REPORT_MAX_RETRIES
    if delivery.retryable and retries_left and not self.request.called_directly:
        raise self.retry(kwargs={"week": day.isoformat()}, countdown=SLURM_REPORT_RETRY_SECONDS)
    return len(delivery.sent)
