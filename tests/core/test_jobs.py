"""The lifecycle every background run shares (apps/core/jobs.py), on each model that has
it: progress, success, failure with a sentence a person can act on, and the state
values each model's page and reaper rely on."""

from datetime import date, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.core import runs
from apps.core.jobs import FAILED, INTERRUPTED, RUNNING, Job
from apps.procurement.models import ComparisonExport, Scenario
from apps.reports.models import RecomputeJob
from apps.telemetry.models import ImportRun
from tests.old_graph import old_graph_executor, old_leaf_nodes, scratch_database
from tests.waiting import wait_until

JOB_MODELS = (ImportRun, ComparisonExport, RecomputeJob)


def make_job(model, **fields):
    if model is ImportRun:
        return ImportRun.objects.create(kind="gpu", format="csv", source="upload", **fields)
    if model is ComparisonExport:
        scenario, _ = Scenario.objects.get_or_create(name="Jobs", slug="jobs")
        return ComparisonExport.objects.create(scenario=scenario, format="csv", **fields)
    return RecomputeJob.objects.create(
        start_day=date(2026, 1, 1), end_day=date(2026, 1, 10), **fields
    )


@pytest.mark.parametrize("model", JOB_MODELS)
def test_each_job_model_has_the_shared_states_in_its_own_choices(model):
    assert issubclass(model, Job)
    values = set(model.Status.values)
    assert {RUNNING, FAILED, INTERRUPTED} <= values
    assert {model.not_started_status, model.succeeded_status} <= values
    assert set(model.finished_statuses) <= values
    assert model._meta.get_field("status").default == model.not_started_status
    assert RUNNING not in model.finished_statuses
    assert model.not_started_status not in model.finished_statuses


@pytest.mark.django_db
@pytest.mark.parametrize("model", JOB_MODELS)
def test_is_finished_follows_the_status(model):
    job = make_job(model)
    assert not job.is_finished
    for status in model.Status.values:
        job.status = status
        assert job.is_finished == (status in model.finished_statuses)
    job.status = RUNNING
    assert not job.is_finished


@pytest.mark.django_db
@pytest.mark.parametrize("model", JOB_MODELS)
def test_advance_writes_progress_message_and_heartbeat(model):
    job = make_job(model, status=RUNNING)
    before = timezone.now()
    job.advance(40)
    job.refresh_from_db()
    assert job.progress_pct == 40 and job.message == ""
    assert job.heartbeat_at >= before and job.status == RUNNING

    job.advance(60, "Writing the file…")
    job.refresh_from_db()
    assert (job.progress_pct, job.message) == (60, "Writing the file…")


@pytest.mark.django_db
def test_advance_saves_the_fields_named_with_it_and_no_others():
    job = make_job(RecomputeJob, status=RUNNING)
    job.days_done, job.rows_written = 7, 120
    percent = job.days_done_pct()
    job.end_day = date(2027, 1, 1)  # changed in memory only
    job.advance(percent, also_save=["days_done", "rows_written"])
    job.refresh_from_db()
    assert (job.progress_pct, job.days_done, job.rows_written) == (70, 7, 120)
    assert job.end_day == date(2026, 1, 10)


@pytest.mark.django_db
@pytest.mark.parametrize("model", JOB_MODELS)
def test_succeed_sets_the_success_status_full_progress_and_finished_at(model):
    job = make_job(model, status=RUNNING, progress_pct=40)
    before = timezone.now()
    job.succeed("All done.")
    job.refresh_from_db()
    assert job.status == model.succeeded_status and job.is_finished
    assert job.progress_pct == 100 and job.message == "All done."
    assert job.finished_at >= before


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("model", "progress_after"), [(ImportRun, 100), (ComparisonExport, 100), (RecomputeJob, 40)]
)
def test_fail_ends_the_job_failed_and_a_recompute_keeps_how_far_it_got(model, progress_after):
    job = make_job(model, status=RUNNING, progress_pct=40)
    job.fail("It broke.")
    job.refresh_from_db()
    assert (job.status, job.message, job.progress_pct) == (FAILED, "It broke.", progress_after)
    assert job.finished_at is not None and job.is_finished


@pytest.mark.django_db
def test_finish_writes_only_the_lifecycle_and_the_fields_named():
    run = make_job(ImportRun, status=RUNNING)
    run.rows_total, run.filename = 3, "changed-in-memory.csv"
    run.finish(ImportRun.Status.REJECTED, "line 2: not a number", also_save=["rows_total"])
    run.refresh_from_db()
    assert (run.status, run.progress_pct, run.rows_total) == ("rejected", 100, 3)
    assert run.filename == "" and run.finished_at is not None


SENTENCES = {
    ImportRun: (
        "The import stopped with an error (RuntimeError: disk full). Samples are stored once "
        "each, so importing the file again is safe; the server log has the details."
    ),
    ComparisonExport: (
        "The export stopped with an error (RuntimeError: disk full). Ask for it again; the "
        "server log has the details."
    ),
    RecomputeJob: (
        "The recompute stopped with an error (RuntimeError: disk full); the days rebuilt so "
        "far are kept. Start it again; the server log has the details."
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("model", JOB_MODELS)
def test_running_records_an_error_as_a_failure_with_its_sentence_and_raises_it(model):
    job = make_job(model, status=RUNNING, progress_pct=30)
    with pytest.raises(RuntimeError, match="disk full"), job.running():
        job.advance(30)
        raise RuntimeError("disk full")
    job.refresh_from_db()
    assert job.status == FAILED and job.finished_at is not None
    assert job.message == SENTENCES[model] == model.failure_sentence(RuntimeError("disk full"))


@pytest.mark.django_db
def test_running_leaves_the_errors_the_block_records_itself_to_it():
    class Refused(Exception):
        pass

    run = make_job(ImportRun, status=RUNNING)
    with pytest.raises(Refused), run.running(recorded=(Refused,)):
        run.finish(ImportRun.Status.REJECTED, "line 3: a NUL character")
        raise Refused
    run.refresh_from_db()
    assert (run.status, run.message) == ("rejected", "line 3: a NUL character")


@pytest.mark.django_db
def test_running_without_an_error_changes_nothing_itself():
    job = make_job(RecomputeJob, status=RUNNING)
    with job.running() as beat:
        assert hasattr(beat, "progress")
    job.refresh_from_db()
    assert job.status == RUNNING and job.message == "" and job.finished_at is None


@pytest.mark.django_db(transaction=True)
def test_running_keeps_the_heartbeat_fresh_from_its_own_thread(settings):
    """The heartbeat thread has its own connection, so the job is committed first."""
    settings.RUN_HEARTBEAT_SECONDS = 0.05
    run = make_job(ImportRun, status=RUNNING)
    long_ago = timezone.now() - timedelta(hours=1)
    ImportRun.objects.filter(pk=run.pk).update(heartbeat_at=long_ago)
    with run.running() as beat:
        beat.progress(55)

        def beaten():
            run.refresh_from_db()
            return run.heartbeat_at > long_ago and run.progress_pct == 55

        wait_until(beaten, timeout_seconds=10, what="the heartbeat thread to write")


@pytest.mark.django_db
@pytest.mark.parametrize("model", JOB_MODELS)
def test_a_claim_records_when_the_attempt_started(model):
    job = make_job(model)
    before = timezone.now()
    assert runs.claim(model, job.pk, startable=(model.not_started_status,))
    job.refresh_from_db()
    assert job.status == RUNNING and job.attempts == 1 and job.started_at >= before


@pytest.fixture
def scratch(django_db_blocker):
    """The old graph moves a copy of the migrated database, never the test database."""
    with scratch_database(django_db_blocker) as database:
        yield database


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_existing_recomputes_the_progress_their_days_showed(scratch):
    """reports 0008 adds progress_pct: a job migrated halfway shows the share of its days
    rebuilt, as the page computed it before."""
    executor = old_graph_executor(connection)
    before = [("reports", "0007_usage_rollups_owned_by_telemetry")]
    after = [("reports", "0008_job_lifecycle")]
    executor.migrate(before)
    try:
        old_apps = executor.loader.project_state(before).apps
        OldRecomputeJob = old_apps.get_model("reports", "RecomputeJob")
        range_of = {"start_day": date(2026, 1, 1), "end_day": date(2026, 1, 10)}
        halfway = OldRecomputeJob.objects.create(**range_of, status="failed", days_done=4)
        done = OldRecomputeJob.objects.create(**range_of, status="done", days_done=10)
        queued = OldRecomputeJob.objects.create(**range_of, status="queued", message="kept")
        executor = old_graph_executor(connection)
        executor.migrate(after)
        migrated = executor.loader.project_state(after).apps.get_model("reports", "RecomputeJob")
        progress = dict(migrated.objects.values_list("pk", "progress_pct"))
        assert (progress[halfway.pk], progress[done.pk], progress[queued.pk]) == (40, 100, 0)
        assert migrated.objects.get(pk=queued.pk).message == "kept"
        assert migrated.objects.get(pk=halfway.pk).status == "failed"
    finally:
        executor = old_graph_executor(connection)
        executor.migrate(old_leaf_nodes(executor))


def test_every_job_says_its_failure_with_the_error_in_it():
    """Each job model's failure sentence names the error through its placeholder (a
    template written with "{error}" would show the braces to the reader)."""
    from django.apps import apps

    error = RuntimeError("disk full")
    job_models = [model for model in apps.get_models() if issubclass(model, Job)]
    assert len(job_models) >= 4
    for model in job_models:
        sentence = model.failure_sentence(error)
        assert "(RuntimeError: disk full)" in sentence, model.__name__
        assert "{" not in sentence, model.__name__
