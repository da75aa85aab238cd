import pytest
from django.urls import reverse

from apps.core import health


@pytest.mark.django_db
def test_healthz_is_public_json_without_a_session(client):
    response = client.get(reverse("healthz"))
    assert response["Content-Type"] == "application/json"
    assert set(response.json()) == {"status", "database", "broker", "workers"}


@pytest.mark.django_db
def test_healthz_is_503_when_the_broker_is_unreachable(client, settings):
    from config.celery_app import app as celery_app

    settings.CELERY_TASK_ALWAYS_EAGER = False
    previous = celery_app.conf.broker_url
    # Port 9 (discard) on loopback: nothing listens, so the connection is refused at once.
    celery_app.conf.broker_url = "redis://127.0.0.1:9/0"
    try:
        body, status = health.health_report()
    finally:
        celery_app.conf.broker_url = previous
    assert status == 503
    assert body["status"] == "down"
    assert body["broker"]["ok"] is False and body["broker"]["error"]
    assert body["database"]["ok"] is True
