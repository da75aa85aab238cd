import os
import socket

from celery import shared_task
from django.db.models import F
from django.utils import timezone

from apps.core.models import WorkerHeartbeat


@shared_task(name="core.record_worker_heartbeat", time_limit=30, soft_time_limit=20)
def record_worker_heartbeat(hostname: str | None = None) -> dict:
    """Record that a worker ran a task and reached the database; returns what it wrote."""
    hostname = hostname or record_worker_heartbeat.request.hostname or socket.gethostname()
    now = timezone.now()
    heartbeat, created = WorkerHeartbeat.objects.get_or_create(
        hostname=hostname,
        defaults={"process_id": os.getpid(), "last_seen_at": now, "beats": 1},
    )
    if not created:
        WorkerHeartbeat.objects.filter(pk=heartbeat.pk).update(
            process_id=os.getpid(), last_seen_at=now, beats=F("beats") + 1
        )
    return {"hostname": hostname, "process_id": os.getpid(), "at": now.isoformat()}


@shared_task(name="core.drain_outbox", time_limit=120, soft_time_limit=100, ignore_result=True)
def drain_outbox_task() -> int:
    """Publish the work recorded while the broker was unreachable (apps/core/outbox.py)."""
    from apps.core.outbox import drain_outbox

    return drain_outbox()


@shared_task(name="core.reap_stalled_runs", time_limit=60, soft_time_limit=50)
def reap_stalled_runs_task() -> dict:
    """Mark background runs whose worker stopped interrupted and retry them
    (apps/core/runs.py); beat runs it every minute."""
    from apps.core.runs import reap_stalled_runs

    return reap_stalled_runs()
