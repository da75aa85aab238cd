"""Checks behind /healthz: database, broker, cache and workers, each reported separately
and each bounded by a timeout (the broker's 1 s connection timeout, the cache's socket
timeouts, a 1 s worker ping), so the check answers while what it checks hangs. No check
raises: whatever is down, /healthz answers 503 naming it, never a 500."""

from django.conf import settings
from django.core.cache import caches
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
    try:
        latest = WorkerHeartbeat.objects.order_by("-last_seen_at").first()
    except Exception:  # noqa: BLE001 - the database check reports why
        heartbeat_age_seconds = None
    else:
        heartbeat_age_seconds = (
            round((timezone.now() - latest.last_seen_at).total_seconds(), 1) if latest else None
        )
    return {
        "ok": bool(replies),
        "count": len(replies),
        "names": sorted(name for reply in replies for name in reply),
        "last_heartbeat_age_seconds": heartbeat_age_seconds,
    }


def check_cache(alias: str = "default") -> dict:
    """Asks the cache's server itself: the fail-soft cache (apps/core/cache.py) answers a
    miss for an unreachable Redis, which would hide it. A cache in the process (locmem,
    as without REDIS_URL) cannot be down."""
    cache = caches[alias]
    backend = type(cache).__name__
    client = getattr(cache, "_cache", None)
    if client is None or not hasattr(client, "get_client"):
        return {"ok": True, "backend": backend}
    try:
        client.get_client(write=True).ping()
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "backend": backend, "error": str(error)}
    return {"ok": True, "backend": backend}


# What a 503 can name as down, in the order /healthz reports them.
CRITICAL_CHECKS = ("database", "broker", "cache")


def health_report() -> tuple[dict, int]:
    """The JSON body and HTTP status: 503 when the database, broker or cache is down,
    with ``down`` naming which.

    Missing workers make the report "degraded" but keep 200, so a load balancer keeps
    sending page traffic to a web node whose background jobs are merely delayed.
    """
    checks = {
        "database": check_database(),
        "broker": check_broker(settings.CELERY_BROKER_URL),
        "cache": check_cache(),
    }
    if checks["broker"]["ok"]:
        workers = check_workers()
    else:
        workers = {"ok": False, "count": 0, "error": "broker unreachable: workers not asked"}
    down = [name for name in CRITICAL_CHECKS if not checks[name]["ok"]]
    if down:
        status, http_status = "down", 503
    elif not workers["ok"]:
        status, http_status = "degraded", 200
    else:
        status, http_status = "ok", 200
    return {"status": status, "down": down, **checks, "workers": workers}, http_status
