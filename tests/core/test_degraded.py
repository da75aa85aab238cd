"""With Redis unreachable — cache, broker and result backend alike — pages, the API and
writes answer at once; work for a worker waits in the outbox and runs once the broker is
back (apps/core/cache.py, apps/core/outbox.py).

"Unreachable" is a closed loopback port in this process's settings and Celery app: the
shared Redis keeps running for everyone else.
"""

import logging
import socket
import threading
import time
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.cache import caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse

from apps.core import cache as core_cache
from apps.core import outbox
from apps.core.cache import FailSoftRedisCache, cache_unreachable
from apps.core.models import OutboxTask
from apps.procurement.models import ComparisonExport
from apps.reports.models import RecomputeJob
from apps.telemetry.models import ImportRun, PoolHourlyUsage
from config.celery_app import app as celery_app
from tests.factories import TEST_PASSWORD
from tests.procurement.conftest import add_measurements, make_scenario
from tests.waiting import wait_until

# Nothing listens on port 1 of loopback: connections are refused at once.
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
SCRAPE = (
    Path(__file__).resolve().parent.parent
    / "data"
    / "dcgm-exporter"
    / "scrapes"
    / "kops_aws_L4_driver580.prom"
)
FAST_SECONDS = 2.0


def _reset_celery_connections():
    # kombu keeps one pool per broker URL: dropping the app's reference switches URLs, and
    # the real broker's pool is found again on the way back.
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    celery_app._local.__dict__.pop("backend", None)


@contextmanager
def hung_redis_url():
    """A Redis URL whose server accepts connections and never answers, as a host that
    drops packets after the handshake does; each connection is closed after 10 s."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=128)
    listener.settimeout(0.1)
    stop, held = threading.Event(), []

    def hold_connections():
        while not stop.is_set():
            with suppress(TimeoutError):
                held.append((time.monotonic(), listener.accept()[0]))
            while held and time.monotonic() - held[0][0] > 10:
                held.pop(0)[1].close()

    thread = threading.Thread(target=hold_connections, daemon=True)
    thread.start()
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        stop.set()
        thread.join()
        for _, connection in held:
            connection.close()
        listener.close()


@contextmanager
def redis_unreachable(url=UNREACHABLE_REDIS):
    """The cache, the broker and the result backend pointed at ``url``: a closed port
    unless told otherwise."""
    from django.conf import settings

    cache_settings = {**settings.CACHES["default"], "LOCATION": url}
    assert cache_settings["BACKEND"] == "apps.core.cache.FailSoftRedisCache", (
        "these tests need REDIS_URL (make test sets it)"
    )
    conf = celery_app.conf
    names = ("broker_url", "broker_read_url", "broker_write_url", "result_backend")
    saved = {name: conf[name] for name in names} | {"task_always_eager": conf.task_always_eager}
    with override_settings(
        CACHES={"default": cache_settings},
        CELERY_BROKER_URL=url,
        CELERY_TASK_ALWAYS_EAGER=False,
    ):
        conf.update({name: url for name in names}, task_always_eager=False)
        _reset_celery_connections()
        # As in a fresh process: no failed publish seen yet.
        outbox._publish_failed_at = None
        try:
            yield
        finally:
            conf.update(saved)
            _reset_celery_connections()
            outbox._publish_failed_at = None


@pytest.fixture
def redis_down():
    with redis_unreachable():
        yield


def _timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def _sign_in(client, user):
    response = client.post(
        reverse("login"), {"username": user.get_username(), "password": TEST_PASSWORD}
    )
    assert response.status_code == 302, response.content.decode()[:500]


def _upload_scrape(client, pool):
    scraped_at = (datetime.now(UTC) - timedelta(days=1)).replace(
        hour=10, minute=7, second=30, microsecond=0
    )
    return client.post(
        reverse("telemetry:import_create"),
        {
            "kind": "gpu",
            "format": "dcgm",
            "time_zone": "UTC",
            "pool": pool.pk,
            "scraped_at": f"{scraped_at:%Y-%m-%dT%H:%M:%S}",
            "file": SimpleUploadedFile(SCRAPE.name, SCRAPE.read_bytes()),
        },
    )


def test_the_cache_answers_as_a_miss_fast_and_logs_once(caplog, monkeypatch):
    monkeypatch.setattr(core_cache, "_outages", {})  # no outage seen by earlier tests
    cache = FailSoftRedisCache(UNREACHABLE_REDIS, {"OPTIONS": {"socket_connect_timeout": 0.25}})
    caplog.set_level(logging.WARNING, logger="apps.core.cache")
    started = time.monotonic()
    assert cache.get("key", "default") == "default"
    assert cache.add("key", 1) is False
    assert cache.set("key", 1) is None
    assert cache.incr("key") is None
    assert cache.get_many(["a", "b"]) == {}
    assert cache.delete("key") is False
    assert all(cache.get(f"key-{n}") is None for n in range(200))
    assert time.monotonic() - started < 0.5
    assert cache.unreachable
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and "unreachable" in warnings[0].getMessage()


@pytest.mark.django_db
def test_sign_in_pages_and_the_api_answer_quickly_with_redis_down(
    client, make_user, pool, workload, redis_down
):
    lead = make_user("lead")
    _, seconds = _timed(lambda: _sign_in(client, lead))
    assert seconds < FAST_SECONDS
    pages = {
        "overview": reverse("dashboard:overview"),
        "pool": reverse("pools:pool_detail", kwargs={"slug": pool.slug}),
        "reports": reverse("reports:report"),
        "long report": reverse("reports:report") + "?start=2025-01-01&end=2025-12-31",
        "api read": "/api/v1/pools/",
    }
    for name, url in pages.items():
        response, seconds = _timed(lambda url=url: client.get(url))
        assert response.status_code == 200, (name, response.content.decode()[:500])
        assert seconds < FAST_SECONDS, (name, seconds)
    # A year is handed to a worker when Redis is up; here it is computed in the page.
    long_report = client.get(pages["long report"]).content.decode()
    assert "waiting for a worker" not in long_report
    assert cache_unreachable()

    # A write whose follow-up needs a worker: the service period's hours are recomputed.
    response, seconds = _timed(
        lambda: client.patch(
            f"/api/v1/pools/{pool.slug}/",
            {"in_service_from": "2021-06-01T00:00:00Z"},
            content_type="application/json",
        )
    )
    assert response.status_code == 200, response.content.decode()[:500]
    assert seconds < FAST_SECONDS
    waiting = OutboxTask.objects.get(name="telemetry.rollup_pool_history")
    assert waiting.args == [pool.pk] and waiting.enqueued_at is None


@pytest.mark.django_db
def test_recompute_and_export_are_kept_for_the_worker_with_the_broker_down(
    client, make_user, pool, workload, redis_down, django_capture_on_commit_callbacks
):
    scenario = make_scenario(add_measurements(pool, workload))
    client.force_login(make_user("admin"))
    today = datetime.now(UTC).date()

    def post_and_commit(url, data):
        # The publish runs when the transaction commits: it is part of the request's time.
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            response = client.post(url, data)
        assert callbacks
        return response

    recompute, recompute_seconds = _timed(
        lambda: post_and_commit(
            reverse("reports:recompute_create"),
            {"start": (today - timedelta(days=3)).isoformat(), "end": today.isoformat()},
        )
    )
    export, export_seconds = _timed(
        lambda: post_and_commit(
            reverse("procurement:export_create", kwargs={"slug": scenario.slug}),
            {"format": "csv"},
        )
    )
    assert recompute.status_code == 302 and recompute_seconds < FAST_SECONDS
    assert export.status_code == 302 and export_seconds < FAST_SECONDS
    job, comparison_export = RecomputeJob.objects.get(), ComparisonExport.objects.get()
    rows = {row.name: row for row in OutboxTask.objects.all()}
    assert rows["procurement.generate_export"].args == [comparison_export.pk]
    recompute_row = next(row for name, row in rows.items() if "recompute" in name)
    assert recompute_row.args == [job.pk]
    assert recompute_row.enqueued_at is None and recompute_row.attempts == 1
    assert recompute_row.last_error
    # The export, right after, does not wait for the broker again: the drain sends it.
    export_row = rows["procurement.generate_export"]
    assert export_row.enqueued_at is None and export_row.attempts == 0


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_upload_waits_for_the_broker_then_a_real_worker_imports_it(
    client, make_user, pool, celery_worker_process
):
    lead = make_user("lead")
    with redis_unreachable():
        _sign_in(client, lead)
        response, seconds = _timed(lambda: _upload_scrape(client, pool))
        assert response.status_code == 302, response.content.decode()[:500]
        assert seconds < FAST_SECONDS
        run = ImportRun.objects.get()
        row = OutboxTask.objects.get(name="telemetry.import_file")
        assert row.args[0] == run.pk and row.enqueued_at is None and row.last_error
        assert run.status == ImportRun.Status.PENDING

        detail, seconds = _timed(
            lambda: client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk}))
        )
        assert detail.status_code == 200 and seconds < FAST_SECONDS
        assert "Waiting for a worker</span>" in detail.content.decode()
        history = client.get(reverse("telemetry:import_list")).content.decode()
        assert "Waiting for a worker</span>" in history

        health, seconds = _timed(lambda: client.get(reverse("healthz")))
        assert health.status_code == 503 and seconds < FAST_SECONDS
        body = health.json()
        assert body["broker"]["ok"] is False and body["broker"]["outbox_waiting"] == 1
        assert body["database"]["ok"] is True

        # A drain while the broker is still down publishes nothing and keeps the row.
        assert outbox.drain_outbox() == 0
        row.refresh_from_db()
        assert row.enqueued_at is None and row.attempts == 2

    # The broker is back: the drain (beat's core.drain_outbox) hands the import over.
    assert outbox.drain_outbox() == 1
    row.refresh_from_db()
    assert row.enqueued_at is not None

    def run_finished():
        run.refresh_from_db()
        return run.status not in (ImportRun.Status.PENDING, ImportRun.Status.RUNNING)

    wait_until(run_finished, timeout_seconds=60, what="the worker to run the import")
    assert run.status == ImportRun.Status.SUCCEEDED, run.message
    assert run.rows_accepted == 1
    # The rollup it scheduled went through the outbox too, and the worker ran it.
    wait_until(
        PoolHourlyUsage.objects.filter(pool=pool).exists,
        timeout_seconds=60,
        what="the worker to run the rollup",
    )
    assert PoolHourlyUsage.objects.filter(pool=pool).count() == 1
    assert not OutboxTask.objects.filter(enqueued_at__isnull=True).exists()
    page = client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk})).content.decode()
    assert "Waiting for a worker" not in page
    assert caches["default"].get("anything") is None  # the real cache answers again


@pytest.mark.django_db
def test_a_redis_that_hangs_costs_one_timeout_not_one_per_call(
    client, make_user, pool, django_capture_on_commit_callbacks, media_root
):
    client.force_login(make_user("lead"))
    with hung_redis_url() as url, redis_unreachable(url):
        pages = [
            reverse("dashboard:overview"),
            reverse("pools:pool_detail", kwargs={"slug": pool.slug}),
            reverse("reports:report"),
        ]
        for page in pages:
            response, seconds = _timed(lambda page=page: client.get(page))
            assert response.status_code == 200 and seconds < FAST_SECONDS, (page, seconds)

        def upload():
            with django_capture_on_commit_callbacks(execute=True):
                return _upload_scrape(client, pool)

        # The first write waits for the broker's read timeout once; the next does not.
        first, first_seconds = _timed(upload)
        ImportRun.objects.all().delete()
        second, second_seconds = _timed(upload)
    assert first.status_code == second.status_code == 302
    assert first_seconds < 3 and second_seconds < 0.5, (first_seconds, second_seconds)
    assert OutboxTask.objects.filter(name="telemetry.import_file", enqueued_at=None).count() == 2
