"""Celery tasks of the alerts app: thin, idempotent by design (an alert is unique while
firing, a delivery per alert, channel and event; a delivery is claimed before it is
sent), so acknowledged late."""

from celery import shared_task

from apps.alerts import services


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
