"""An export or a recompute whose task is still in the outbox, because the broker could
not take it, says "Waiting for a worker" with why, on its page, in its progress fragment
and in the lists; once the broker has the task it shows its normal status again
(apps/core/outbox.py's mark_waiting, components/_waiting_for_worker.html).

The broker is a closed loopback port while the work is asked for (tests/core/
test_degraded.py's redis_unreachable), then the real Redis, on a queue of this test's
own that nobody consumes and that is deleted afterwards."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import redis
from django.conf import settings
from django.urls import reverse

from apps.core import outbox
from apps.core.models import OutboxTask
from apps.procurement.models import ComparisonExport
from apps.reports.models import RecomputeJob
from apps.reports.tasks import recompute_days_task
from config.celery_app import app as celery_app
from tests.core.test_degraded import redis_unreachable
from tests.procurement.conftest import add_measurements, make_scenario

SENTENCE = "Waiting for a worker: the task queue cannot be reached;"
BADGE = "Waiting for a worker</span>"


@pytest.fixture
def private_queue():
    """Tasks published by this test go to a queue of its own, deleted afterwards."""
    queue = f"gpufleet-waiting-{uuid.uuid4().hex[:8]}"
    previous = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    try:
        yield queue
    finally:
        celery_app.conf.task_default_queue = previous
        redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(queue)


def _post_with_the_broker_down(client, url, data, capture):
    with redis_unreachable(), capture(execute=True):
        response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:500]
    return response


def _fragment(client, url, target):
    return client.get(url, headers={"HX-Request": "true", "HX-Target": target}).content.decode()


@pytest.mark.django_db
def test_a_recompute_kept_for_the_broker_says_it_waits_for_a_worker(
    client, make_user, private_queue, django_capture_on_commit_callbacks
):
    client.force_login(make_user("admin"))
    today = datetime.now(UTC).date()
    _post_with_the_broker_down(
        client,
        reverse("reports:recompute_create"),
        {"start": (today - timedelta(days=3)).isoformat(), "end": today.isoformat()},
        django_capture_on_commit_callbacks,
    )
    job = RecomputeJob.objects.get()
    row = OutboxTask.objects.get(args=[job.pk])
    assert row.enqueued_at is None and job.status == RecomputeJob.Status.QUEUED

    url = reverse("reports:recompute_detail", args=[job.pk])
    page = client.get(url).content.decode()
    assert SENTENCE in page and 'id="waiting-for-worker"' in page
    fragment = _fragment(client, url, "recompute-progress")
    assert SENTENCE in fragment and "hx-trigger" in fragment  # it keeps polling
    report = client.get(reverse("reports:report")).content.decode()
    assert "(waiting for a worker)" in report

    # The broker is back: the drain hands the task over, the job is queued as usual.
    outbox._publish_failed_at = None
    assert outbox.drain_outbox() == 1
    row.refresh_from_db()
    assert row.enqueued_at is not None
    assert redis.Redis.from_url(settings.CELERY_BROKER_URL).llen(private_queue) == 1
    page = client.get(url).content.decode()
    assert "Waiting for a worker" in page and SENTENCE not in page
    assert "(queued)" in client.get(reverse("reports:report")).content.decode()


@pytest.mark.django_db
def test_an_export_kept_for_the_broker_says_it_waits_for_a_worker(
    client, make_user, pool, workload, private_queue, django_capture_on_commit_callbacks
):
    scenario = make_scenario(add_measurements(pool, workload))
    client.force_login(make_user("admin"))
    _post_with_the_broker_down(
        client,
        reverse("procurement:export_create", kwargs={"slug": scenario.slug}),
        {"format": "csv"},
        django_capture_on_commit_callbacks,
    )
    export = ComparisonExport.objects.get()
    row = OutboxTask.objects.get(name="procurement.generate_export")
    assert row.args == [export.pk] and row.enqueued_at is None

    url = reverse("procurement:export_detail", args=[export.pk])
    page = client.get(url).content.decode()
    assert SENTENCE in page and '<h3 class="card-title">Waiting for a worker</h3>' in page
    assert SENTENCE in _fragment(client, url, "export-progress")
    scenario_page = client.get(scenario.get_absolute_url()).content.decode()
    assert BADGE in scenario_page

    outbox._publish_failed_at = None
    assert outbox.drain_outbox() == 1
    page = client.get(url).content.decode()
    assert SENTENCE not in page and '<h3 class="card-title">Waiting</h3>' in page
    assert BADGE not in client.get(scenario.get_absolute_url()).content.decode()


@pytest.mark.django_db
def test_a_finished_run_never_says_it_waits(client, make_user):
    """A task row left unpublished (delivered at least once, its enqueued_at lost) does
    not make a finished run look waiting."""
    job = RecomputeJob.objects.create(
        start_day=datetime(2026, 1, 1, tzinfo=UTC).date(),
        end_day=datetime(2026, 1, 2, tzinfo=UTC).date(),
        status=RecomputeJob.Status.DONE,
    )
    OutboxTask.objects.create(name=recompute_days_task.name, args=[job.pk])
    client.force_login(make_user("reader"))
    page = client.get(reverse("reports:recompute_detail", args=[job.pk])).content.decode()
    assert "Waiting for a worker" not in page and "Done" in page
