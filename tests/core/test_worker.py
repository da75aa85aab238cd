"""A real Celery worker process (not eager mode) takes a task from Redis and writes to
PostgreSQL; /healthz then reports it."""

import pytest
from django.urls import reverse

from apps.core.models import WorkerHeartbeat
from apps.core.tasks import record_worker_heartbeat


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_real_worker_runs_a_task_through_redis_and_writes_to_postgres(celery_worker_process):
    result = record_worker_heartbeat.delay()
    written = result.get(timeout=60)

    # It ran in the worker process, not in this one, and the row it wrote is visible here.
    assert written["process_id"] == celery_worker_process["pid"]
    assert written["hostname"] == celery_worker_process["name"]
    heartbeat = WorkerHeartbeat.objects.get(hostname=celery_worker_process["name"])
    assert heartbeat.process_id == celery_worker_process["pid"]
    assert heartbeat.beats == 1

    record_worker_heartbeat.delay().get(timeout=60)
    heartbeat.refresh_from_db()
    assert heartbeat.beats == 2


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_healthz_reports_database_broker_and_live_workers(client, celery_worker_process):
    record_worker_heartbeat.delay().get(timeout=60)
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    body = response.json()
    assert body["database"] == {"ok": True, "vendor": "postgresql"}
    assert body["broker"]["ok"] is True and body["broker"]["mode"] == "broker"
    assert body["workers"]["ok"] is True
    assert celery_worker_process["name"] in body["workers"]["names"]
    assert body["workers"]["last_heartbeat_age_seconds"] < 60
    assert body["status"] == "ok"
