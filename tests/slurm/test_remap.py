"""A change of the mapping rules re-maps the stored jobs as a re-map job
(apps/slurm/remap.py): in the request when they are few, else on a worker while the rules
page shows its progress; a change made while one waits joins it; a failed one says why
and what to do, and is started again from the page."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.models import OutboxTask
from apps.slurm.models import SlurmJob, SlurmMappingRule, SlurmRemap
from apps.slurm.remap import REMAP_TASK, reap_stalled_remaps, request_remap, run_remap
from apps.slurm.services import import_sacct
from tests.factories import ClusterFactory, PoolFactory, TeamFactory, UserFactory, WorkloadFactory
from tests.slurm.test_mapping import NOW, TEXT
from tests.waiting import wait_until

POLLING = {"HX-Request": "true", "HX-Target": "remap-progress"}


@pytest.fixture
def setup(db):
    cluster = ClusterFactory(slug="hopper")
    team = TeamFactory(name="LLM")
    llm = WorkloadFactory(name="LLM", slug="llm", pool=PoolFactory(cluster=cluster, team=team))
    import_sacct(cluster, TEXT, now=NOW)  # jobs 10 (proj-llm), 11 (proj-vision), 12 (physics)
    return {"cluster": cluster, "team": team, "llm": llm}


def _workloads():
    return dict(SlurmJob.objects.values_list("job_id", "workload__slug"))


@pytest.mark.django_db
def test_a_few_jobs_are_remapped_in_the_request_and_recorded(setup, client):
    lead = UserFactory(role="lead", teams=[setup["team"]])
    client.force_login(lead)
    response = client.post(
        reverse("slurm:rule_create"),
        {"field": "account", "pattern": "proj-*", "workload": setup["llm"].pk, "priority": 5},
        follow=True,
    )
    page = response.content.decode()
    assert "2 jobs re-mapped by the rules as they are now." in page
    assert _workloads() == {"10": "llm", "11": "llm", "12": None}
    remap = SlurmRemap.objects.get()
    assert (remap.status, remap.jobs_total, remap.jobs_changed, remap.requested_by) == (
        "succeeded",
        3,
        2,
        lead,
    )
    assert "2 of 3 jobs changed workload or team." in page
    # Finished: the fragment stops polling.
    assert 'id="remap-progress" hx-get' not in page
    assert not OutboxTask.objects.exists()


@pytest.mark.django_db
def test_a_change_while_a_remap_waits_joins_it(setup, settings):
    settings.SLURM_REMAP_INLINE_MAX_JOBS = 2  # 3 jobs stored: to a worker
    rule = SlurmMappingRule.objects.create(
        field="account", pattern="proj-llm", workload=setup["llm"]
    )
    first = request_remap()
    rule.pattern = "proj-*"
    rule.save()
    second = request_remap()
    assert second.pk == first.pk and second.status == SlurmRemap.Status.QUEUED
    assert list(OutboxTask.objects.values_list("name", "args")) == [(REMAP_TASK, [first.pk])]
    assert _workloads() == {"10": None, "11": None, "12": None}
    # The worker's run reads the rules as they are when it starts: both changes.
    assert run_remap(first.pk) == 2
    assert _workloads() == {"10": "llm", "11": "llm", "12": None}
    assert run_remap(first.pk) == 0  # a redelivered task finds it finished


@pytest.mark.django_db
def test_an_api_write_runs_a_waiting_remap_before_it_answers(setup, settings):
    settings.SLURM_REMAP_INLINE_MAX_JOBS = 2
    waiting = request_remap()
    api = APIClient()
    api.force_authenticate(UserFactory(role="lead", teams=[setup["team"]]))
    created = api.post(
        "/api/v1/slurm/rules/",
        {"field": "account", "pattern": "proj-*", "workload": "llm"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert _workloads() == {"10": "llm", "11": "llm", "12": None}
    waiting.refresh_from_db()
    assert (waiting.status, waiting.jobs_changed) == (SlurmRemap.Status.SUCCEEDED, 2)
    assert SlurmRemap.objects.count() == 1
    assert run_remap(waiting.pk) == 0  # the worker's task, later


@pytest.mark.django_db
def test_a_failed_remap_says_why_keeps_the_mapping_and_is_started_again(
    setup, client, monkeypatch, settings
):
    settings.SLURM_REMAP_INLINE_MAX_JOBS = 0
    SlurmMappingRule.objects.create(field="account", pattern="proj-*", workload=setup["llm"])
    remap = request_remap()

    def disk_full(progress=None):
        raise RuntimeError("disk full")

    monkeypatch.setattr("apps.slurm.remap.remap_jobs", disk_full)
    with pytest.raises(RuntimeError):
        run_remap(remap.pk)
    remap.refresh_from_db()
    assert remap.status == SlurmRemap.Status.FAILED
    sentence = (
        "The re-map stopped with an error (RuntimeError: disk full); the jobs keep their "
        "earlier mapping. Re-map them again from this page; the server log has the details."
    )
    assert remap.message == sentence
    assert _workloads() == {"10": None, "11": None, "12": None}
    monkeypatch.undo()

    reader = UserFactory(role="reader")
    client.force_login(reader)
    page = client.get(reverse("slurm:rule_list")).content.decode()
    assert sentence in page and 'id="remap-again"' not in page
    assert client.post(reverse("slurm:rule_remap")).status_code == 403

    settings.SLURM_REMAP_INLINE_MAX_JOBS = 5000
    client.force_login(UserFactory(role="lead"))
    page = client.get(reverse("slurm:rule_list")).content.decode()
    assert 'id="remap-again"' in page
    response = client.post(reverse("slurm:rule_remap"), follow=True)
    assert "2 jobs re-mapped by the rules as they are now." in response.content.decode()
    assert _workloads() == {"10": "llm", "11": "llm", "12": None}


@pytest.mark.django_db
def test_a_remap_whose_worker_stopped_is_marked_and_queued_again(setup, settings):
    remap = SlurmRemap.objects.create(
        status=SlurmRemap.Status.RUNNING,
        attempts=1,
        heartbeat_at=timezone.now() - timedelta(seconds=settings.STALLED_RUN_AFTER_SECONDS + 60),
    )
    assert reap_stalled_remaps() == 1
    remap.refresh_from_db()
    assert remap.status == SlurmRemap.Status.INTERRUPTED
    assert "re-mapping Slurm jobs" in remap.message and "being retried" in remap.message
    assert list(OutboxTask.objects.values_list("name", "args")) == [(REMAP_TASK, [remap.pk])]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_many_jobs_are_remapped_by_a_real_worker_while_the_page_shows_it(
    setup, client, settings, celery_worker_process
):
    """Over SLURM_REMAP_INLINE_MAX_JOBS the page answers at once and a worker re-maps; the
    rules page polls the re-map until it is done."""
    settings.SLURM_REMAP_INLINE_MAX_JOBS = 2
    client.force_login(UserFactory(role="lead", teams=[setup["team"]]))
    response = client.post(
        reverse("slurm:rule_create"),
        {"field": "account", "pattern": "proj-*", "workload": setup["llm"].pk, "priority": 5},
        follow=True,
    )
    page = response.content.decode()
    assert "The stored jobs are re-mapped by a worker: this page shows how far it got." in page
    assert 'id="remap-progress"' in page

    def finished():
        fragment = client.get(reverse("slurm:rule_list"), headers=POLLING).content.decode()
        return fragment if "hx-get" not in fragment else None

    fragment = wait_until(
        finished, timeout_seconds=60, what="the worker's re-map", interval_seconds=0.2
    )
    assert fragment.lstrip().startswith('<div id="remap-progress"')
    assert "2 of 3 jobs changed workload or team." in fragment and "100 %" in fragment
    assert _workloads() == {"10": "llm", "11": "llm", "12": None}
    assert SlurmRemap.objects.get().status == SlurmRemap.Status.SUCCEEDED
