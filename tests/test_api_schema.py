"""Schemathesis against gpufleet's own OpenAPI schema (drf-spectacular, ``/api/v1/schema/``).

Every operation the schema documents is called in-process through Django's WSGI handler
with a superuser's read-write token and every Schemathesis check on: no 5xx, documented
status codes, content types, headers and bodies, invalid data rejected, valid data
accepted, authentication enforced, and the rest. Generation is deterministic (a fixed
seed and no example database), so a red run is reproducible and a green one stays green
until the code or the schema changes.

The schema is rendered once at import by the very view that serves ``/api/v1/schema/``
(Schemathesis needs it to collect one test per operation, before any database exists);
``test_served_schema_is_the_one_tested`` proves the served document is the same.
``schemathesis.pytest.from_fixture`` would load it per test instead, but Schemathesis 4
rewrites ``Function._nodeid``, which pytest 9.2 no longer has.
"""

import json
from datetime import timedelta

import hypothesis
import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.views import SpectacularAPIView
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.throttling import SimpleRateThrottle

from apps.accounts.models import ApiToken
from config.wsgi import application

SCHEMA_PATH = "/api/v1/schema/"
SCHEMA_MEDIA_TYPE = "application/vnd.oai.openapi+json"
SEED = 20250917
# Fuzzed cases per operation; the examples and coverage phases add their own on top.
MAX_EXAMPLES = 25
NO_THROTTLING = {"anon": "1000000/minute", "user": "1000000/minute"}


def _served_schema() -> dict:
    """What ``GET /api/v1/schema/`` answers a signed-in user, without touching the database."""
    request = APIRequestFactory().get(SCHEMA_PATH, HTTP_ACCEPT=SCHEMA_MEDIA_TYPE)
    force_authenticate(request, user=get_user_model()(username="schema-reader"))
    response = SpectacularAPIView.as_view()(request)
    response.render()
    assert response.status_code == 200, response.content[:500]
    return json.loads(response.content)


def _config(*, modes=None) -> schemathesis.Config:
    config = schemathesis.Config(seed=SEED)
    project = config.projects.default
    project.checks.update(included_check_names=["all"])
    project.generation.update(modes=modes, max_examples=MAX_EXAMPLES, database="none")
    return config


RAW_SCHEMA = _served_schema()
schema = schemathesis.openapi.from_dict(RAW_SCHEMA, config=_config())
schema.app = application
# Without credentials every request is refused before its input is looked at, so only
# well-formed requests are sent: a refusal then proves the credentials were missing.
anonymous_schema = schemathesis.openapi.from_dict(RAW_SCHEMA, config=_config(modes=["positive"]))
anonymous_schema.app = application


@pytest.fixture
def unthrottled(monkeypatch):
    """A run is thousands of requests, far over the 1200/minute a user may make."""
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", NO_THROTTLING)
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def in_test_transaction(db):
    """Keep Django's request handling inside the test's transaction.

    The handler closes "old" connections when a request starts and finishes, which inside
    the test's atomic block would throw the test transaction away. Like
    ``django.test.Client``, stop it doing so: requests run in this thread, on this
    connection, so they see the fixtures' rows and are rolled back with them.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def admin_headers(make_user):
    """A superuser's read-write token, so that every write is exercised."""
    _, plaintext = ApiToken.issue(
        user=make_user("admin"),
        description="schemathesis",
        lifetime=timedelta(hours=1),
        read_only=False,
    )
    return {"Authorization": f"Bearer {plaintext}"}


@pytest.fixture
def api(in_test_transaction, unthrottled, admin_headers, pool, workload):
    """Everything a generated request needs: the token, and a pool and workload to find."""
    return admin_headers


def test_served_schema_is_the_one_tested(in_test_transaction, unthrottled, admin_headers):
    from django.test import Client

    response = Client().get(SCHEMA_PATH, HTTP_ACCEPT=SCHEMA_MEDIA_TYPE, headers=admin_headers)
    assert response.status_code == 200
    assert json.loads(response.content) == RAW_SCHEMA


@schema.parametrize()
@hypothesis.settings(suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
def test_api_conforms_to_its_schema(case, api):
    case.call_and_validate(headers=api)


@anonymous_schema.parametrize()
@hypothesis.settings(
    max_examples=5, suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture]
)
def test_api_refuses_unauthenticated_calls(case, in_test_transaction, unthrottled):
    case.headers = {
        name: value
        for name, value in (case.headers or {}).items()
        if name.lower() != "authorization"
    }
    case.cookies = {}
    response = case.call()
    assert response.status_code in (401, 403), (
        f"{case.method} {case.formatted_path} without credentials answered "
        f"{response.status_code}: {response.text[:300]}"
    )
