"""A recompute whose worker stopped is marked interrupted with a sentence and queued again;
the page says so and stops polling."""

from datetime import date, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.core.runs import reap_stalled_runs
from apps.reports.models import RecomputeJob

REAPER = "apps.reports.recompute.reap_stalled_recomputes"


def _stalled_job(attempts=1) -> RecomputeJob:
    long_ago = timezone.now() - timedelta(minutes=10)
    job = RecomputeJob.objects.create(
        start_day=date(2026, 1, 1),
        end_day=date(2026, 1, 10),
        status=RecomputeJob.Status.RUNNING,
        attempts=attempts,
        days_done=7,
    )
    RecomputeJob.objects.filter(pk=job.pk).update(heartbeat_at=long_ago)
    return job


@pytest.mark.django_db
def test_a_stalled_recompute_is_interrupted_and_retried_to_the_end(
    eager_celery, django_capture_on_commit_callbacks
):
    job = _stalled_job()
    with django_capture_on_commit_callbacks(execute=True):
        assert reap_stalled_runs()[REAPER] == 1
    job.refresh_from_db()
    # Eager: the retry ran after the reaper's commit, from the first day again.
    assert job.status == RecomputeJob.Status.DONE, job.message
    assert job.attempts == 2 and job.days_done == 10


@pytest.mark.django_db
def test_a_recompute_out_of_attempts_stays_interrupted_and_the_page_stops_polling(
    client, make_user, settings
):
    settings.RUN_MAX_ATTEMPTS = 1
    job = _stalled_job(attempts=1)
    reap_stalled_runs()
    job.refresh_from_db()
    assert job.status == RecomputeJob.Status.INTERRUPTED
    assert job.message.startswith("The worker stopped while recomputing daily totals (last heard ")
    assert job.message.endswith("); start the recompute again.")
    client.force_login(make_user("reader"))
    fragment = client.get(
        reverse("reports:recompute_detail", args=[job.pk]),
        headers={"HX-Request": "true", "HX-Target": "recompute-progress"},
    ).content.decode()
    assert "Interrupted" in fragment and job.message in fragment
    assert "hx-trigger" not in fragment


@pytest.mark.django_db
def test_a_redelivered_recompute_of_a_finished_job_does_nothing():
    from apps.reports.tasks import recompute_days_task

    job = RecomputeJob.objects.create(
        start_day=date(2026, 1, 1), end_day=date(2026, 1, 2), status=RecomputeJob.Status.DONE
    )
    assert recompute_days_task.apply(args=(job.pk,)).get() == 0
    job.refresh_from_db()
    assert job.status == RecomputeJob.Status.DONE and job.attempts == 0
