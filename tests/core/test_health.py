import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse

from apps.core import health


@pytest.mark.django_db
def test_healthz_is_public_json_without_a_session(client):
    response = client.get(reverse("healthz"))
    assert response["Content-Type"] == "application/json"
    assert set(response.json()) == {"status", "down", "database", "broker", "cache", "workers"}


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


# /healthz asked in a fresh process whose settings point the database (or Redis) at a
# closed port: Django then really fails to connect, as in production, with no mock.
HEALTHZ_IN_A_PROCESS = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
settings.ALLOWED_HOSTS = ["*"]
response = Client(raise_request_exception=False).get("/healthz")
print(json.dumps({"status_code": response.status_code,
                  "content_type": response["Content-Type"],
                  "body": json.loads(response.content)}))
"""
# Port 9 (discard) on loopback: nothing listens, so a connection is refused at once.
CLOSED = "127.0.0.1:9"


def _healthz_in_a_process(**environment) -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **environment}
    completed = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", HEALTHZ_IN_A_PROCESS],
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_healthz_is_503_naming_the_database_when_it_is_unreachable():
    answer = _healthz_in_a_process(DATABASE_URL=f"postgres://postgres@{CLOSED}/gpufleet")
    assert answer["status_code"] == 503
    assert answer["content_type"] == "application/json"
    body = answer["body"]
    assert body["status"] == "down" and body["down"] == ["database"]
    assert body["database"]["ok"] is False and "refused" in body["database"]["error"]
    # The broker is up; what it cannot say without the database is null, not a 500.
    assert body["broker"]["outbox_waiting"] is None


@pytest.mark.django_db
def test_healthz_is_503_naming_redis_when_broker_and_cache_are_unreachable():
    database = connection.settings_dict  # the test database, which the process reads
    redis_url = f"redis://{CLOSED}/0"
    answer = _healthz_in_a_process(
        DATABASE_URL=(
            f"postgres://{database['USER']}:{database['PASSWORD']}@{database['HOST']}:"
            f"{database['PORT'] or 5432}/{database['NAME']}"
        ),
        REDIS_URL=redis_url,
        CELERY_BROKER_URL=redis_url,
        CELERY_TASK_ALWAYS_EAGER="false",
    )
    assert answer["status_code"] == 503
    body = answer["body"]
    assert body["down"] == ["broker", "cache"]
    assert body["database"]["ok"] is True
    assert body["broker"]["ok"] is False and body["broker"]["error"]
    assert body["cache"]["ok"] is False and body["cache"]["error"]


@pytest.mark.django_db
def test_healthz_is_503_naming_the_cache_alone_when_only_it_is_unreachable(client, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "apps.core.cache.FailSoftRedisCache",
            "LOCATION": f"redis://{CLOSED}/0",
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.5},
        }
    }
    response = client.get(reverse("healthz"))
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["cache"]
    assert body["cache"]["ok"] is False and body["cache"]["error"]
