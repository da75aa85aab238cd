"""Schemathesis against gpufleet's own OpenAPI schema (drf-spectacular, ``/api/v1/schema/``).

Every operation the schema documents is called in-process through Django's WSGI handler
with a read-write token of each role (superuser, technical lead, ops, procurement,
finance, and a signed-in user with no role), and every Schemathesis check is on: no 5xx,
documented status codes, content types, headers and bodies, invalid input refused, valid
input accepted, authentication enforced, and the rest. Generation is deterministic (a
fixed seed, no example database), so a red run reproduces and a green one stays green
until the code or the schema changes.

Two depths, one code:

- ``make test`` (``FUZZ_EXAMPLES`` unset): every operation once as the superuser, and a
  fixed sample of operations as each other role and without credentials, one generated
  case each, without the coverage phase; a smoke test of every operation that keeps the
  suite fast. (Every conformance test also checks that the operation refuses a call
  without credentials: Schemathesis's ``ignored_auth``.)
- ``make fuzz`` (``FUZZ_EXAMPLES=30``): every operation as every role, that many fuzzed
  cases each plus the examples and coverage phases. Run it before a release
  (docs-fuzz.md). ``FUZZ_ROLES=lead,ops`` narrows it to some roles.

The schema is rendered once at import by the very view that serves ``/api/v1/schema/``:
Schemathesis needs it at collection, to make one test per operation, before any database
exists. ``test_served_schema_is_the_one_tested`` proves the served document is the same.
(``schemathesis.pytest.from_fixture`` would load it per test instead, but Schemathesis 4
rewrites ``Function._nodeid``, which pytest 9.2 no longer has.)
"""

import json
import os
import zlib
from datetime import timedelta

import hypothesis
import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from drf_spectacular.views import SpectacularAPIView
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.throttling import SimpleRateThrottle

from apps.accounts.models import ApiToken
from config.wsgi import application

SCHEMA_PATH = "/api/v1/schema/"
SCHEMA_MEDIA_TYPE = "application/vnd.oai.openapi+json"
SEED = 20250917
ROLES = ("admin", "lead", "ops", "procurement", "finance", "reader")
# Fuzzed cases per operation; the examples and coverage phases add their own on top.
# Unset (make test): the smoke depth described above.
FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES") or 0)
FULL = FUZZ_EXAMPLES > 0
FUZZ_ROLES = tuple(
    role for role in (os.environ.get("FUZZ_ROLES") or ",".join(ROLES)).split(",") if role
)
MAX_EXAMPLES = FUZZ_EXAMPLES if FULL else 1
UNAUTHENTICATED_MAX_EXAMPLES = 5 if FULL else 1
# At the smoke depth each role but the superuser calls one operation in this many.
SAMPLE_ONE_IN = 12

# The same settings a schemathesis.toml would hold.
CONFIG = f"""
seed = {SEED}

[generation]
max-examples = {MAX_EXAMPLES}
database = "none"

[phases.coverage]
enabled = {"true" if FULL else "false"}

[checks]
enabled = true

# A request body can be valid by the schema and still refused with a documented 400: it
# names a GPU model, pool or architecture that does not exist, reuses a slug, breaks a
# rule between fields (GPUs in whole nodes, KV heads dividing heads, a price the
# deployment needs), or a decimal minimum that a string-typed decimal cannot declare.
# Everything else about such a 400 is still checked: documented, JSON, the error schema.
[[operations]]
include-method-regex = "^(POST|PUT|PATCH)$"
[operations.checks.positive_data_acceptance]
expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429"]

# The FOCUS export's range is a rule between its two query fields (an end after the start,
# at most 366 days apart), which a schema cannot declare: its documented 400 names the field.
[[operations]]
include-path-regex = "^/api/v1/exports/focus/$"
[operations.checks.positive_data_acceptance]
expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429"]
"""


def _served_schema() -> dict:
    """What ``GET /api/v1/schema/`` answers a signed-in user, without touching the database."""
    request = APIRequestFactory().get(SCHEMA_PATH, HTTP_ACCEPT=SCHEMA_MEDIA_TYPE)
    force_authenticate(request, user=get_user_model()(username="schema-reader"))
    response = SpectacularAPIView.as_view()(request)
    response.render()
    assert response.status_code == 200, response.content[:500]
    return json.loads(response.content)


def _load_schema(raw: dict, *, modes: list[str] | None = None) -> schemathesis.BaseSchema:
    config = schemathesis.Config.from_str(CONFIG)
    if modes:
        config.projects.default.generation.update(modes=modes)
    loaded = schemathesis.openapi.from_dict(raw, config=config)
    loaded.app = application
    loaded.hook(filter_query)
    return loaded


def filter_query(context, query):
    """Django refuses a NUL byte in any query value with a 400 ("Null characters are not
    allowed."), as it should; no OpenAPI string type can say so, so don't send one. NUL
    bytes still go into paths and bodies."""
    return not any("\x00" in str(value) for value in (query or {}).values())


HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def _sample_of(raw: dict, role: str) -> dict:
    """The schema with every operation for the superuser and at full depth; otherwise a
    fixed share of them, a different one per role (by a hash of the role and the
    operation). The document is cut rather than filtered: a Schemathesis filter does not
    hold on a schema loaded with ``[[operations]]`` settings."""
    if FULL or role == "admin":
        return raw
    paths = {}
    for path, item in raw["paths"].items():
        kept = {
            key: value
            for key, value in item.items()
            if key not in HTTP_METHODS
            or zlib.crc32(f"{role} {key.upper()} {path}".encode()) % SAMPLE_ONE_IN == 0
        }
        if HTTP_METHODS & set(kept):
            paths[path] = kept
    return {**raw, "paths": paths}


RAW_SCHEMA = _served_schema()
schema = _load_schema(RAW_SCHEMA)
# Without credentials a request is refused before its input is read, so only well-formed
# requests are sent: a refusal then proves it was the missing credentials.
anonymous_schema = _load_schema(_sample_of(RAW_SCHEMA, "anonymous"), modes=["positive"])


@pytest.fixture
def unthrottled(monkeypatch):
    """A run is thousands of requests, far over the 1200/minute a user may make.

    A rate of None is no throttling at all: the throttles then never touch the cache, so
    nothing needs clearing (and Django's RedisCache.clear() is a FLUSHDB of the database
    that Celery's broker shares).
    """
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": None, "user": None})


@pytest.fixture
def in_test_transaction(db):
    """Keep Django's request handling inside the test's transaction.

    The handler closes "old" connections when a request starts and finishes, which inside
    the test's atomic block would throw the test transaction away. Like
    ``django.test.Client``, stop it doing so: requests run in this thread, on this
    connection, so they see the fixtures' rows and are rolled back with them (no
    ``transaction=True`` flush, which would also wipe the catalog the data migrations
    seeded).
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _headers(user) -> dict:
    """A read-write token: a role's writes are then refused by the role, not the token."""
    _, plaintext = ApiToken.issue(
        user=user, description="schemathesis", lifetime=timedelta(hours=1), read_only=False
    )
    return {"Authorization": f"Bearer {plaintext}"}


@pytest.fixture
def admin_headers(make_user):
    return _headers(make_user("admin"))


@pytest.fixture
def role_headers(make_user):
    """``role_headers("ops")``: the headers of a user holding that role, made once per
    test (Hypothesis calls the test once per case with the same fixtures)."""
    made = {}

    def headers(role: str) -> dict:
        if role not in made:
            made[role] = _headers(make_user(role))
        return made[role]

    return headers


@pytest.fixture
def api(in_test_transaction, unthrottled, admin_headers, pool, workload):
    """All a generated request needs: the token, and a pool and a workload to find."""
    return admin_headers


@pytest.fixture
def api_as(in_test_transaction, unthrottled, role_headers, pool, workload):
    return role_headers


def test_served_schema_is_the_one_tested(in_test_transaction, unthrottled, admin_headers):
    client = Client()
    response = client.get(SCHEMA_PATH, HTTP_ACCEPT=SCHEMA_MEDIA_TYPE, headers=admin_headers)
    assert response.status_code == 200
    assert json.loads(response.content) == RAW_SCHEMA
    assert client.get(SCHEMA_PATH, HTTP_ACCEPT=SCHEMA_MEDIA_TYPE).status_code in (401, 403)


def _conformance_test(role: str):
    """The test of every operation (or the role's sample) with a token of ``role``."""

    @_load_schema(_sample_of(RAW_SCHEMA, role)).parametrize()
    @hypothesis.settings(suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
    def test(case, api_as):
        case.call_and_validate(headers=api_as(role))

    test.__name__ = f"test_api_conforms_to_its_schema_as_{role}"
    return test


for _role in FUZZ_ROLES:
    globals()[f"test_api_conforms_to_its_schema_as_{_role}"] = _conformance_test(_role)


@anonymous_schema.parametrize()
@hypothesis.settings(
    max_examples=UNAUTHENTICATED_MAX_EXAMPLES,
    suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture],
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


NUL = "a\x00b"


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", f"/api/v1/pools/{NUL}/", None),
        ("delete", f"/api/v1/workloads/{NUL}/", None),
        ("get", f"/api/v1/gpu-models/{NUL}/", None),
        ("patch", f"/api/v1/model-architectures/{NUL}/", {"name": "x"}),
        ("post", "/api/v1/pools/", {"slug": "p", "name": "p", "gpu_model": NUL, "gpu_count": 8}),
        ("post", "/api/v1/workloads/", {"slug": "w", "name": "w", "pool": NUL, "gpu_count": 8}),
        ("patch", "/api/v1/workloads/test-fine-tune/", {"model_architecture": NUL}),
        ("post", "/api/v1/estimates/memory/", {"model": NUL, "gpu_model": NUL}),
    ],
    ids=[
        "GET pools/{slug}",
        "DELETE workloads/{slug}",
        "GET gpu-models/{slug}",
        "PATCH model-architectures/{slug}",
        "POST pools gpu_model",
        "POST workloads pool",
        "PATCH workloads model_architecture",
        "POST estimates/memory model",
    ],
)
def test_nul_bytes_are_client_errors(method, path, body, api):
    """A NUL byte in a slug must be a 4xx: PostgreSQL refuses it in a query, with a 500."""
    client = Client(raise_request_exception=False)
    kwargs = {"headers": api}
    if body is not None:
        kwargs.update(data=json.dumps(body), content_type="application/json")
    response = getattr(client, method)(path, **kwargs)
    assert response.status_code in (400, 404), (response.status_code, response.content[:300])


def test_every_delete_documents_409_with_what_refused_it():
    """A DELETE of an object still in use (or with usage history) answers 409; clients
    read it in the schema, with its body."""
    deletes = [
        (path, operation)
        for path, item in RAW_SCHEMA["paths"].items()
        for method, operation in item.items()
        if method == "delete"
    ]
    assert deletes
    for path, operation in deletes:
        conflict = operation["responses"].get("409")
        assert conflict, f"DELETE {path} does not document 409"
        assert conflict["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Conflict"
        }, path
    conflict = RAW_SCHEMA["components"]["schemas"]["Conflict"]
    assert conflict["required"] == ["detail"]
    assert set(conflict["properties"]) == {"detail", "used_by", "archive"}


def test_a_protected_delete_answers_the_documented_409(api, pool, workload):
    """A pool that a workload runs on is kept: 409, as the schema documents it."""
    case = schema["/api/v1/pools/{slug}/"]["DELETE"].Case(path_parameters={"slug": pool.slug})
    response = case.call(headers=api)
    assert response.status_code == 409, response.text[:300]
    body = response.json()
    assert set(body) <= {"detail", "used_by", "archive"} and body["detail"]
    case.validate_response(response, headers=api)
