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


@shared_task(name="alerts.send_slurm_efficiency", ignore_result=True, time_limit=30 * 60)
def send_slurm_efficiency_task() -> int:
    """Last week's Slurm GPU efficiency report, to its users and teams."""
    from django.utils import timezone

    from apps.alerts.slurm_reports import last_week, send_weekly_efficiency

    delivery = send_weekly_efficiency(last_week(timezone.now().date()))
    for failure in delivery.failed:
        logger.warning("Slurm efficiency report not sent to %s", failure)
    return len(delivery.sent)
