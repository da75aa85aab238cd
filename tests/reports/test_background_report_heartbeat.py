"""A long report computed by a worker for a polling page beats like the other background
runs (apps/core/runs.py): at each step and from a thread during a long step; a poll that
finds its worker not heard from for ``STALLED_RUN_AFTER_SECONDS`` says the worker
stopped and queues the report again, up to ``RUN_MAX_ATTEMPTS`` attempts, then gives up
with the way to compute it in the page (apps/reports/cache.py).

Queued reports go to a queue of this test's own on the real Redis, read back and deleted
afterwards."""

import base64
import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import redis
from django.conf import settings as django_settings
from django.urls import reverse

from apps.reports import selectors
from apps.reports.cache import (
    background_attempts,
    background_last_heard,
    background_progress,
    record_background_heartbeat,
    report_job,
    set_background_progress,
    start_background_job,
)
from apps.reports.selectors import REPORT_STEPS
from apps.reports.warming import compute_report_in_background
from config.celery_app import app as celery_app
from tests.reports.test_views import _make_pools

RESULTS = {"HX-Request": "true", "HX-Target": "report-results"}
# The scope of the fixture's reader, in no team: the shared pools (apps/accounts/scope.py).
READER_SCOPE_KEY = "t"


def _job(query: str) -> str:
    """The reader's job for ``query``: jobs are per scope."""
    return report_job(query, READER_SCOPE_KEY)


@pytest.fixture
def queued_reports():
    """Reads the messages published meanwhile, as (task name, first argument) pairs."""
    queue = f"gpufleet-reports-{uuid.uuid4().hex[:8]}"
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    previous = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue

    def read():
        messages = [json.loads(raw) for raw in broker.lrange(queue, 0, -1)]
        # kombu's Redis envelope: the task's (args, kwargs, embed) base64-encoded JSON.
        return [
            (message["headers"]["task"], json.loads(base64.b64decode(message["body"]))[0][0])
            for message in messages
        ]

    try:
        yield read
    finally:
        celery_app.conf.task_default_queue = previous
        broker.delete(queue)


@pytest.fixture
def long_report(settings, gpu_model, make_user, client):
    """A report range a worker computes, already queued once as the first view does."""
    settings.REPORTS_WARM_UP = True
    settings.CELERY_TASK_ALWAYS_EAGER = False
    _make_pools(gpu_model, 1)
    start = (datetime.now(UTC) - timedelta(days=59)).date().isoformat()
    query = f"start={start}&group_by=pool"
    assert start_background_job("report", _job(query))
    client.force_login(make_user("reader"))
    return query


def _poll(client, query) -> str:
    return client.get(reverse("reports:report") + "?" + query, headers=RESULTS).content.decode()


def _worker_stopped(query, minutes_ago=10):
    """What a worker killed at the second step leaves: its progress, an old heartbeat."""
    set_background_progress("report", _job(query), {"done": 1, "step": REPORT_STEPS[1]})
    record_background_heartbeat("report", _job(query), at=time.time() - minutes_ago * 60)


@pytest.mark.django_db
def test_the_worker_beats_while_a_long_step_runs(long_report, settings, monkeypatch):
    settings.RUN_HEARTBEAT_SECONDS = 0.1
    heard_during_the_step = []
    daily_split = selectors.daily_split

    def slow_daily_split(*args, **kwargs):
        before = background_last_heard("report", _job(long_report))
        time.sleep(0.6)  # a long step: the beats during its duration are what is tested
        heard_during_the_step.append((before, background_last_heard("report", _job(long_report))))
        return daily_split(*args, **kwargs)

    monkeypatch.setattr(selectors, "daily_split", slow_daily_split)
    started = time.time()
    assert (
        compute_report_in_background(long_report, None, READER_SCOPE_KEY) is True
    )  # what the worker runs
    [(before, after)] = heard_during_the_step
    assert started <= before < after  # beaten by the thread, with no step in between
    assert after - before >= 0.3


@pytest.mark.django_db
def test_a_report_whose_worker_stopped_is_queued_again(long_report, client, queued_reports):
    _worker_stopped(long_report)
    last_heard = datetime.fromtimestamp(background_last_heard("report", _job(long_report)), UTC)

    fragment = _poll(client, long_report)
    sentence = (
        f"The worker stopped while computing these figures (last heard {last_heard:%H:%M} "
        "UTC); they are being computed again."
    )
    assert sentence in fragment and 'id="report-progress-note"' in fragment
    assert 'hx-trigger="load delay:1s"' in fragment  # it keeps polling
    assert queued_reports() == [("reports.compute_report", long_report)]
    assert background_attempts("report", _job(long_report)) == 2
    assert background_progress("report", _job(long_report))["step"] == "waiting for a worker"

    # The next poll waits for that attempt: nothing is queued twice.
    assert sentence in _poll(client, long_report)
    assert len(queued_reports()) == 1

    # A worker takes it: its heartbeat is fresh, the note goes with its first step.
    assert compute_report_in_background(long_report, None, READER_SCOPE_KEY) is True
    assert 'id="report-table"' in _poll(client, long_report)


@pytest.mark.django_db
def test_a_live_worker_is_left_alone(long_report, client, queued_reports):
    _worker_stopped(long_report, minutes_ago=1)
    fragment = _poll(client, long_report)
    assert "stopped" not in fragment and 'hx-trigger="load delay:1s"' in fragment
    assert queued_reports() == []
    assert background_attempts("report", _job(long_report)) == 1


@pytest.mark.django_db
def test_a_report_out_of_attempts_stops_polling_and_says_what_to_do(
    long_report, client, queued_reports, settings
):
    settings.RUN_MAX_ATTEMPTS = 1
    _worker_stopped(long_report)
    fragment = _poll(client, long_report)
    assert 'id="report-progress-interrupted"' in fragment
    assert "The worker stopped while computing these figures (last heard " in fragment
    assert "it was given up after 1 attempt." in fragment and "compute=inline" in fragment
    assert "hx-trigger" not in fragment
    assert queued_reports() == []
    assert 'id="report-progress-interrupted"' in _poll(client, long_report)
