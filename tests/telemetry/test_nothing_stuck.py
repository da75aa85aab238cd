"""No import is left "running": a failing import ends failed with a sentence, a file holding
a NUL character or a value longer than its column is refused with its line, and a run whose
process stopped is marked interrupted by the reaper (retried when it is an upload)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.core.runs import reap_stalled_runs
from apps.telemetry.ingest import storage
from apps.telemetry.models import GpuDevice, GpuSample, ImportRun
from tests.telemetry.helpers import import_csv_command

TEN = datetime(2026, 11, 1, 10, tzinfo=UTC)
LONG_DEVICE_ID = "GPU-" + "x" * 10_236  # 10,240 characters


def _csv(devices=("GPU-a", "GPU-b", "GPU-c")) -> str:
    return "time,gpu,util\n" + "".join(
        f"{(TEN + timedelta(minutes=line)).isoformat()},{device},50\n"
        for line, device in enumerate(devices)
    )


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def bearer(make_user):
    _, plaintext = ApiToken.issue(
        user=make_user("ops"), description="agent", lifetime=timedelta(days=1), read_only=False
    )
    return {"Authorization": f"Bearer {plaintext}"}


# A failure never leaves the run running


@pytest.mark.django_db
def test_a_command_line_import_that_raises_ends_failed_with_a_sentence(pool, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(storage, "import_gpu_samples", broken)
    path = tmp_path / "samples.csv"
    path.write_text(_csv())
    with pytest.raises(CommandError, match="disk full"):
        import_csv_command(path, pool)
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.FAILED
    assert run.finished_at is not None and run.progress_pct == 100
    assert run.message == (
        "The import stopped with an error (RuntimeError: disk full). Samples are stored once "
        "each, so importing the file again is safe; the server log has the details."
    )


@pytest.mark.django_db
def test_an_api_import_that_raises_ends_failed_and_says_so(client, bearer, pool, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(storage, "import_gpu_samples", broken)
    client.raise_request_exception = False
    response = client.post(
        "/api/v1/telemetry/gpu/",
        {
            "format": "csv",
            "pool": pool.slug,
            "text": _csv(),
            "columns": dict(timestamp="time", device="gpu", utilization_pct="util"),
        },
        content_type="application/json",
        headers=bearer,
    )
    assert response.status_code == 500
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.FAILED
    assert response.json()["status"] == "failed"
    assert "RuntimeError: disk full" in response.json()["message"]


# NUL characters and values longer than their column


@pytest.mark.django_db
def test_a_nul_character_in_a_file_is_refused_with_its_line(pool, tmp_path):
    path = tmp_path / "binary.csv"
    path.write_text(_csv().replace("GPU-b", "GPU-\x00b"))
    with pytest.raises(CommandError) as refused:
        import_csv_command(path, pool, "--skip-bad-rows")
    line = "line 3: a NUL character (\\x00); the file is binary or corrupted"
    assert line in str(refused.value)
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.REJECTED and run.message == line
    assert not GpuSample.objects.exists()


@pytest.mark.django_db
def test_a_nul_character_pushed_to_the_api_is_refused_with_its_line(client, bearer, pool):
    response = client.post(
        "/api/v1/telemetry/gpu/",
        {
            "format": "csv",
            "pool": pool.slug,
            "text": _csv().replace("GPU-c", "GPU-\x00c"),
            "columns": {"timestamp": "time", "device": "gpu", "utilization_pct": "util"},
        },
        content_type="application/json",
        headers=bearer,
    )
    assert response.status_code == 400, response.content
    assert response.json() == {
        "text": ["line 4: a NUL character (\\x00); the file is binary or corrupted"]
    }
    assert ImportRun.objects.get().status == ImportRun.Status.REJECTED


@pytest.mark.django_db
def test_a_10_kb_device_id_is_refused_with_its_line(pool, tmp_path):
    path = tmp_path / "long.csv"
    path.write_text(_csv(devices=("GPU-a", LONG_DEVICE_ID, "GPU-c")))
    with pytest.raises(CommandError, match="line 3: device id is 10,240 characters; at most 100"):
        import_csv_command(path, pool)
    assert ImportRun.objects.get().status == ImportRun.Status.REJECTED
    assert not GpuDevice.objects.exists()

    # With --skip-bad-rows the other lines are kept and the long one is listed.
    import_csv_command(path, pool, "--skip-bad-rows")
    run = ImportRun.objects.latest("pk")
    assert run.status == ImportRun.Status.SUCCEEDED
    assert (run.rows_accepted, run.rows_rejected) == (2, 1)
    assert [(error["line"], error["message"]) for error in run.errors] == [
        (3, "line 3: device id is 10,240 characters; at most 100")
    ]
    assert set(GpuDevice.objects.values_list("uuid", flat=True)) == {"GPU-a", "GPU-c"}


@pytest.mark.django_db
def test_labels_longer_than_their_columns_are_refused_with_their_line(pool):
    from apps.telemetry.ingest.parsers.rows import DeviceKey, GpuSampleRow, ParseResult

    rows = [
        GpuSampleRow(line_number=7, device=DeviceKey("GPU-a"), timestamp=TEN, pod="p" * 256),
        GpuSampleRow(line_number=9, device=DeviceKey("GPU-b"), timestamp=TEN, mig_profile="m" * 51),
    ]
    summary = storage.import_gpu_samples(ParseResult(rows=rows, errors=[]), pool=pool)
    assert summary.rejected_whole
    assert [error.message for error in summary.errors] == [
        "line 7: pod is 256 characters; at most 255",
        "line 9: MIG profile is 51 characters; at most 50",
    ]


# Runs whose process stopped


def _stalled_run(**fields) -> ImportRun:
    fields.setdefault("attempts", 1)
    run = ImportRun.objects.create(
        kind="gpu", format="csv", status=ImportRun.Status.RUNNING, **fields
    )
    long_ago = timezone.now() - timedelta(minutes=10)
    ImportRun.objects.filter(pk=run.pk).update(heartbeat_at=long_ago, created_at=long_ago)
    run.refresh_from_db()
    return run


@pytest.mark.django_db
def test_a_command_line_import_whose_process_stopped_is_marked_interrupted(settings):
    fresh = ImportRun.objects.create(
        kind="gpu",
        format="csv",
        source=ImportRun.Source.COMMAND,
        status=ImportRun.Status.RUNNING,
        heartbeat_at=timezone.now(),
    )
    stalled = _stalled_run(source=ImportRun.Source.COMMAND)
    assert reap_stalled_runs()["apps.telemetry.ingest.importer.reap_stalled_imports"] == 1
    stalled.refresh_from_db()
    fresh.refresh_from_db()
    assert fresh.status == ImportRun.Status.RUNNING
    assert stalled.status == ImportRun.Status.INTERRUPTED
    last_heard = stalled.heartbeat_at.astimezone(UTC)
    when = (
        f"{last_heard:%H:%M}"
        if last_heard.date() == timezone.now().astimezone(UTC).date()
        else f"{last_heard:%Y-%m-%d %H:%M}"
    )
    assert stalled.message == (
        f"The process stopped while importing (last heard {when} UTC); import the file again."
    )
    # Marked once: a second pass finds nothing.
    assert reap_stalled_runs()["apps.telemetry.ingest.importer.reap_stalled_imports"] == 0


@pytest.mark.django_db
def test_an_interrupted_upload_is_retried_until_its_attempts_run_out(
    settings, pool, tmp_path, eager_celery, django_capture_on_commit_callbacks
):
    settings.RUN_MAX_ATTEMPTS = 2
    path = tmp_path / "upload.csv"
    path.write_text(_csv())
    arguments = {
        "path": str(path),
        "columns": {"timestamp": "time", "device": "gpu", "utilization_pct": "util"},
        "tz": "UTC",
    }
    run = _stalled_run(source=ImportRun.Source.UPLOAD, pool=pool, task_arguments=arguments)
    with django_capture_on_commit_callbacks(execute=True):
        reap_stalled_runs()
    run.refresh_from_db()
    # Eager: the retry ran after the reaper's commit and completed.
    assert run.status == ImportRun.Status.SUCCEEDED, run.message
    assert run.attempts == 2 and run.rows_accepted == 3

    # Out of attempts: interrupted for good, with what to do.
    path.write_text(_csv())
    last = _stalled_run(
        source=ImportRun.Source.UPLOAD, pool=pool, task_arguments=arguments, attempts=2
    )
    reap_stalled_runs()
    last.refresh_from_db()
    assert last.status == ImportRun.Status.INTERRUPTED
    assert last.message.endswith("); import the file again.")


@pytest.mark.django_db
def test_the_import_page_shows_interrupted_and_stops_polling(client, make_user):
    run = _stalled_run(source=ImportRun.Source.COMMAND)
    reap_stalled_runs()
    run.refresh_from_db()
    client.force_login(make_user("reader"))
    url = reverse("telemetry:import_detail", args=[run.pk])
    page = client.get(url, headers={"HX-Request": "true", "HX-Target": "import-progress"})
    html = page.content.decode()
    assert "Interrupted" in html
    assert run.message in html
    assert "hx-trigger" not in html
