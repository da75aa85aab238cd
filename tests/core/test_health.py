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
    settings.CELERY_TASK_ALWAYS_EAGER = False
    # Port 9 (discard) on loopback: nothing listens, so the connection is refused at once.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"
    body, status = health.health_report()
    assert status == 503
    assert body["status"] == "down"
    assert body["broker"]["ok"] is False and body["broker"]["error"]
    assert body["database"]["ok"] is True
    assert body["workers"]["ok"] is False
