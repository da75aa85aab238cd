"""Checks behind /healthz: database, broker and workers, each reported separately and
each bounded by a timeout (the broker's 1 s connection timeout, a 1 s worker ping), so
the check answers while what it checks hangs."""

from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.core.models import OutboxTask, WorkerHeartbeat
from config.celery_app import app as celery_app


def check_database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # noqa: BLE001 - any failure is reported, not raised
        return {"ok": False, "vendor": connection.vendor, "error": str(error)}
    return {"ok": True, "vendor": connection.vendor}


def check_broker(broker_url: str) -> dict:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"ok": True, "mode": "eager", "detail": "no broker configured: tasks run inline"}
    try:
        with celery_app.connection_for_write(url=broker_url) as broker_connection:
            broker_connection.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0.2, interval_max=0.2, timeout=2
            )
            transport = broker_connection.transport_cls
    except Exception as error:  # noqa: BLE001
        return {
            "ok": False,
            "mode": "broker",
            "error": str(error),
            "outbox_waiting": _outbox_waiting(),
        }
    return {
        "ok": True,
        "mode": "broker",
        "transport": str(transport),
        "outbox_waiting": _outbox_waiting(),
    }


def _outbox_waiting() -> int | None:
    """Tasks kept for the broker (apps/core/outbox.py); None when the database is down."""
    try:
        return OutboxTask.objects.filter(enqueued_at__isnull=True).count()
    except Exception:  # noqa: BLE001 - the database check reports why
        return None


def check_workers() -> dict:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"ok": True, "mode": "eager", "count": 0}
    try:
        replies = celery_app.control.ping(timeout=1.0) or []
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "count": 0, "error": str(error)}
    latest = WorkerHeartbeat.objects.order_by("-last_seen_at").first()
    heartbeat_age_seconds = (
        round((timezone.now() - latest.last_seen_at).total_seconds(), 1) if latest else None
    )
    return {
        "ok": bool(replies),
        "count": len(replies),
        "names": sorted(name for reply in replies for name in reply),
        "last_heartbeat_age_seconds": heartbeat_age_seconds,
    }


def health_report() -> tuple[dict, int]:
    """The JSON body and HTTP status: 503 when the database or broker is down.

    Missing workers make the report "degraded" but keep 200, so a load balancer keeps
    sending page traffic to a web node whose background jobs are merely delayed.
    """
    database, broker = check_database(), check_broker(settings.CELERY_BROKER_URL)
    if broker["ok"]:
        workers = check_workers()
    else:
        workers = {"ok": False, "count": 0, "error": "broker unreachable: workers not asked"}
    if not (database["ok"] and broker["ok"]):
        status, http_status = "down", 503
    elif not workers["ok"]:
        status, http_status = "degraded", 200
    else:
        status, http_status = "ok", 200
    return {
        "status": status,
        "database": database,
        "broker": broker,
        "workers": workers,
    }, http_status
