"""Uploads that forgive: the format is detected from the file, a form with errors keeps
the file, and a refused import is tried again with another format from the kept file,
never choosing it again. The kept file is only ever found through a signed token or the
user's own run; its path is never taken from the request."""

import hashlib
import os
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from apps.telemetry.ingest import kept_uploads
from apps.telemetry.ingest.formats import parse_column_mapping
from apps.telemetry.models import GpuSample, ImportRun, RequestSample

DATA = Path(__file__).resolve().parent.parent / "data"
NVIDIA_SMI_H100 = (
    DATA
    / "nvidia-smi"
    / "query_gpu_csv"
    / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv"
)
L4_SCRAPE = DATA / "dcgm-exporter" / "scrapes" / "kops_aws_L4_driver580.prom"
AZURE_CODE = DATA / "traces" / "azure-llm-2023" / "AzureLLMInferenceTrace_code.csv"
PROMETHEUS_JSON = DATA / "prometheus-api" / "aicr_instant_query_DCGM_FI_DEV_GPU_UTIL.json"
DUTY_CYCLE = DATA / "traces" / "alibaba-genai-2026" / "pod_gpu_duty_cycle_anon_head5000.csv"
DUTY_CYCLE_COLUMNS = "timestamp=timestamp_anon,device=container_ip,utilization_pct=value"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def lead(make_user):
    return make_user("lead")


@pytest.fixture
def lead_client(client, lead):
    client.force_login(lead)
    return client


def _post(client, *, kind="gpu", path=None, **fields):
    data = {"kind": kind, "time_zone": "UTC", **fields}
    if path is not None:
        data["file"] = SimpleUploadedFile(path.name, path.read_bytes())
    return client.post(reverse("telemetry:import_create"), data)


def _post_and_run(client, capture, **fields):
    with capture(execute=True):
        response = _post(client, **fields)
    assert response.status_code == 302, response.content.decode()[:3000]
    run = ImportRun.objects.latest("pk")
    assert response.url == reverse("telemetry:import_detail", kwargs={"pk": run.pk})
    run.refresh_from_db()
    return run


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _kept_path(media_root, path: Path) -> Path:
    return Path(media_root) / "imports" / "kept" / _digest(path)


# Detection


@pytest.mark.django_db
def test_an_nvidia_smi_csv_uploaded_with_detect_is_imported_and_says_detected(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks, media_root
):
    page = lead_client.get(reverse("telemetry:import_create")).content.decode()
    # "Detect from the file" is the first choice and the one selected.
    assert '<option value="detect" selected>Detect from the file</option>' in page
    run = _post_and_run(
        lead_client,
        django_capture_on_commit_callbacks,
        path=NVIDIA_SMI_H100,
        format="detect",
        pool=pool.pk,
    )
    assert run.status == "succeeded", run.message
    assert (run.format, run.detected_format) == ("nvidia-smi", "nvidia-smi")
    assert run.content_sha256 == _digest(NVIDIA_SMI_H100)
    assert run.scraped_at is None and GpuSample.objects.count() == 1
    detail = lead_client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk}))
    body = detail.content.decode()
    assert '<dd class="col-7" id="import-format">Detected: nvidia-smi CSV</dd>' in body
    assert "(detected: nvidia-smi CSV); the import runs in the background." in body
    # The run's own copy is gone with the import; the kept copy waits out its day.
    assert not (Path(media_root) / "imports" / f"{run.pk}-{NVIDIA_SMI_H100.name}").exists()
    assert _kept_path(media_root, NVIDIA_SMI_H100).read_bytes() == NVIDIA_SMI_H100.read_bytes()


@pytest.mark.django_db
def test_a_chosen_format_is_recorded_as_chosen(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks
):
    run = _post_and_run(
        lead_client, django_capture_on_commit_callbacks, path=NVIDIA_SMI_H100, format="nvidia-smi"
    )
    assert (run.format, run.detected_format, run.status) == ("nvidia-smi", "", "succeeded")
    body = lead_client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk})).content
    assert '<dd class="col-7" id="import-format">nvidia-smi CSV</dd>' in body.decode()


@pytest.mark.django_db
def test_a_detected_dcgm_scrape_needs_its_scrape_time_and_keeps_the_file(lead_client, pool):
    response = _post(lead_client, path=L4_SCRAPE, format="detect")
    form = response.context["form"]
    assert list(form.errors) == ["scraped_at"]
    assert form.cleaned_data["format"] == "dcgm"
    body = response.content.decode()
    assert "the file is kept, no need to choose it again" in body
    assert f"<strong>{L4_SCRAPE.name}</strong>" in body
    token = form.data["kept_upload"]
    assert f'name="kept_upload" value="{token}"' in body
    # The scrape time, and nothing else: the kept file is imported.
    again = _post(lead_client, format="detect", kept_upload=token, scraped_at="2026-11-30T10:00")
    assert again.status_code == 302, again.context["form"].errors
    run = ImportRun.objects.get()
    assert (run.format, run.detected_format, run.filename) == ("dcgm", "dcgm", L4_SCRAPE.name)
    assert run.content_sha256 == _digest(L4_SCRAPE)


@pytest.mark.django_db
def test_a_detected_generic_csv_asks_for_its_mapping_then_imports_the_kept_file(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks
):
    response = _post(lead_client, path=DUTY_CYCLE, format="detect", pool=pool.pk)
    form = response.context["form"]
    assert form.errors["columns"] == [
        "A generic CSV (a CSV with the headers value, timestamp_anon, container_ip "
        "(3 columns)) needs a column mapping, e.g. "
        "timestamp=time,device=gpu_uuid,utilization_pct=util."
    ]
    token = form.data["kept_upload"]
    # A mapping naming a header the file lacks is refused at once, its headers listed.
    wrong = _post(
        lead_client,
        format="detect",
        kept_upload=token,
        pool=pool.pk,
        columns="timestamp=time,device=container_ip,utilization_pct=value",
    )
    assert wrong.context["form"].errors["columns"] == [
        "The file has no column named as mapped in timestamp=time; its headers are value, "
        "timestamp_anon, container_ip."
    ]
    run = _post_and_run(
        lead_client,
        django_capture_on_commit_callbacks,
        format="detect",
        kept_upload=wrong.context["form"].data["kept_upload"],
        pool=pool.pk,
        columns=DUTY_CYCLE_COLUMNS,
    )
    assert (run.format, run.detected_format, run.filename) == ("csv", "csv", DUTY_CYCLE.name)
    assert run.status == "succeeded", run.message
    assert run.rows_accepted == 5000 == GpuSample.objects.count()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "content", "error"),
    [
        (
            PROMETHEUS_JSON,
            None,
            "Could not tell the format from the file's first 16 KiB: it holds JSON with DCGM "
            "metric names (a Prometheus API response?), starting “{”. Expected a dcgm-exporter "
            "scrape (lines like DCGM_FI_DEV_GPU_UTIL{…} 42 or # HELP DCGM_…), nvidia-smi "
            "--query-gpu=… --format=csv output (a header like timestamp, name, pci.bus_id, "
            "utilization.gpu [%]) or a CSV with a header line and a column mapping. Choose the "
            "format below if you know it.",
        ),
        (
            None,
            b"\xef\xbb\xbf\r\n",
            "Could not tell the format from the file's first 16 KiB: it holds only blank lines.",
        ),
        (
            AZURE_CODE,
            None,
            "This file is an Azure LLM inference trace (the Azure LLM trace header TIMESTAMP, "
            "ContextTokens, GeneratedTokens): import it on the Inference requests tab.",
        ),
    ],
    ids=["prometheus-json", "blank", "request-trace"],
)
def test_an_undetectable_file_names_what_was_seen_and_what_was_expected(
    lead_client, path, content, error
):
    upload = SimpleUploadedFile(path.name if path else "blank.csv", content or path.read_bytes())
    response = lead_client.post(
        reverse("telemetry:import_create"),
        {"kind": "gpu", "time_zone": "UTC", "format": "detect", "file": upload},
    )
    errors = response.context["form"].errors
    assert list(errors) == ["format"]
    assert errors["format"][0].startswith(error)
    assert not ImportRun.objects.exists()


@pytest.mark.django_db
def test_an_empty_file_is_refused_as_the_file_field_refuses_it(lead_client):
    response = lead_client.post(
        reverse("telemetry:import_create"),
        {
            "kind": "gpu",
            "time_zone": "UTC",
            "format": "detect",
            "file": SimpleUploadedFile("e", b""),
        },
    )
    assert response.context["form"].errors["file"] == ["The submitted file is empty."]
    assert not ImportRun.objects.exists()


@pytest.mark.django_db
def test_a_chosen_format_the_file_contradicts_is_refused_with_the_file_kept(lead_client):
    """The journey this page had: an nvidia-smi CSV sent as dcgm."""
    response = _post(
        lead_client, path=NVIDIA_SMI_H100, format="dcgm", scraped_at="2026-11-30T10:00"
    )
    form = response.context["form"]
    assert list(form.errors) == ["format"]
    assert form.errors["format"][0] == (
        "You chose a dcgm-exporter scrape, but the file looks like an nvidia-smi CSV "
        "(nvidia-smi query fields (timestamp, uuid, pci.bus_id, pci.domain, …; 212 columns)). "
        "Choose “Detect from the file” or the format it is in."
    )
    fixed = _post(lead_client, format="nvidia-smi", kept_upload=form.data["kept_upload"])
    assert fixed.status_code == 302
    assert ImportRun.objects.get().format == "nvidia-smi"


@pytest.mark.django_db
def test_the_request_form_detects_the_azure_trace(
    lead_client, inference_workload, eager_celery, django_capture_on_commit_callbacks
):
    run = _post_and_run(
        lead_client,
        django_capture_on_commit_callbacks,
        kind="requests",
        path=AZURE_CODE,
        format="detect",
        workload=inference_workload.pk,
    )
    assert (run.format, run.detected_format, run.status) == ("azure-llm", "azure-llm", "succeeded")
    assert RequestSample.objects.count() == run.rows_accepted > 0
    scrape = _post(lead_client, kind="requests", path=L4_SCRAPE, format="detect", workload=1)
    assert (
        scrape.context["form"]
        .errors["format"][0]
        .endswith("that is GPU telemetry, imported on the GPU telemetry tab.")
    )


@pytest.fixture
def inference_workload(pool, architecture):
    from apps.pools.models import Workload, WorkloadKind

    return Workload.objects.create(
        name="Code assistant",
        slug="code-assistant",
        kind=WorkloadKind.API_SERVICE,
        model_architecture=architecture,
        pool=pool,
        gpu_count=8,
    )


# The kept upload's token


@pytest.mark.django_db
def test_a_token_works_only_for_its_user_and_never_names_a_path(client, make_user, lead_client):
    response = _post(lead_client, path=DUTY_CYCLE, format="detect")
    token = response.context["form"].data["kept_upload"]
    other = Client()
    other.force_login(make_user("lead"))
    stolen = _post(other, format="detect", kept_upload=token, columns=DUTY_CYCLE_COLUMNS)
    assert stolen.context["form"].errors["file"] == [
        "The kept file was uploaded by someone else: choose the file again."
    ]
    forged = _post(
        lead_client,
        format="detect",
        kept_upload=token[:-3] + "abc",
        columns=DUTY_CYCLE_COLUMNS,
    )
    assert forged.context["form"].errors["file"] == [
        "The kept file's reference is not valid: choose the file again."
    ]
    # A path or a digest in the field is no reference either.
    for attempt in ("/etc/passwd", "../../../etc/passwd", _digest(DUTY_CYCLE)):
        refused = _post(
            lead_client, format="detect", kept_upload=attempt, columns=DUTY_CYCLE_COLUMNS
        )
        assert "not valid" in refused.context["form"].errors["file"][0]
    assert not ImportRun.objects.exists()


@pytest.mark.django_db
def test_an_expired_kept_upload_says_to_choose_the_file_again(lead_client, settings, media_root):
    response = _post(lead_client, path=DUTY_CYCLE, format="detect")
    token = response.context["form"].data["kept_upload"]
    kept = _kept_path(media_root, DUTY_CYCLE)
    day_and_a_minute_ago = time.time() - 24 * 3600 - 60
    os.utime(kept, (day_and_a_minute_ago, day_and_a_minute_ago))
    expired = _post(lead_client, format="detect", kept_upload=token, columns=DUTY_CYCLE_COLUMNS)
    assert expired.context["form"].errors["file"] == [
        f"The uploaded file {DUTY_CYCLE.name} is no longer kept (uploads are kept for 24 "
        "hours): choose the file again."
    ]
    # The next upload clears files past their time.
    _post(lead_client, path=L4_SCRAPE, format="detect")
    assert not kept.exists() and _kept_path(media_root, L4_SCRAPE).exists()
    # A token past its time is refused alike, even with its file still there.
    settings.TELEMETRY_KEPT_UPLOAD_HOURS = 0
    assert kept_uploads.kept_for().total_seconds() == 0
    late = _post(lead_client, format="detect", kept_upload=token, columns=DUTY_CYCLE_COLUMNS)
    assert "is no longer kept" in late.context["form"].errors["file"][0]
    assert not ImportRun.objects.exists()


# Trying a refused import again


def _refused_run(client, capture, pool):
    """An nvidia-smi CSV imported as a generic CSV whose mapping names columns the file
    has, but which the worker refuses: its utilization cells read "100 %"."""
    run = _post_and_run(
        client,
        capture,
        path=NVIDIA_SMI_H100,
        format="csv",
        pool=pool.pk,
        columns="timestamp=timestamp,device=uuid,utilization_pct=utilization.gpu [%]",
        time_zone="Asia/Shanghai",
    )
    assert run.status == "rejected", run.message
    return run


@pytest.mark.django_db
def test_a_refused_import_is_tried_again_with_another_format_from_the_kept_file(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks, media_root
):
    refused = _refused_run(lead_client, django_capture_on_commit_callbacks, pool)
    detail = lead_client.get(reverse("telemetry:import_detail", kwargs={"pk": refused.pk}))
    body = detail.content.decode()
    retry_url = f"{reverse('telemetry:import_create')}?kind=gpu&amp;retry={refused.pk}"
    assert f'href="{retry_url}"' in body and "Try another format or mapping" in body

    form_page = lead_client.get(
        reverse("telemetry:import_create"), {"kind": "gpu", "retry": refused.pk}
    )
    body = form_page.content.decode()
    assert f"Try import #{refused.pk} again" in body
    assert f"<strong>{NVIDIA_SMI_H100.name}</strong>" in body
    form = form_page.context["form"]
    # The refused run's settings, its format left to detection this time.
    assert form.initial["format"] == "detect" and form.initial["pool"] == pool.pk
    assert form.initial["time_zone"] == "Asia/Shanghai"
    assert parse_column_mapping(form.initial["columns"]) == {
        "timestamp": "timestamp",
        "device": "uuid",
        "utilization_pct": "utilization.gpu [%]",
    }
    run = _post_and_run(
        lead_client,
        django_capture_on_commit_callbacks,
        format="detect",
        kept_upload=form.initial["kept_upload"],
        pool=pool.pk,
        time_zone="UTC",
    )
    assert run.pk != refused.pk and run.status == "succeeded", run.message
    assert run.content_sha256 == refused.content_sha256 == _digest(NVIDIA_SMI_H100)
    assert (run.format, run.detected_format, run.filename) == (
        "nvidia-smi",
        "nvidia-smi",
        NVIDIA_SMI_H100.name,
    )
    assert GpuSample.objects.count() == 1
    # Each names the other: the same file.
    retried = lead_client.get(reverse("telemetry:import_detail", kwargs={"pk": refused.pk}))
    assert f"import #{run.pk}</a> (nvidia-smi, succeeded)" in retried.content.decode()
    # Now imported, the same content is refused as a duplicate, kept or not.
    twice = lead_client.get(reverse("telemetry:import_create"), {"retry": refused.pk})
    token = twice.context["form"].initial["kept_upload"]
    refused_again = _post(lead_client, format="detect", kept_upload=token, pool=pool.pk)
    assert "nothing added" in refused_again.context["form"].errors["file"][0]


@pytest.mark.django_db
def test_only_the_uploader_may_try_their_upload_again(
    client, make_user, lead_client, pool, eager_celery, django_capture_on_commit_callbacks
):
    refused = _refused_run(lead_client, django_capture_on_commit_callbacks, pool)
    retry = {"kind": "gpu", "retry": refused.pk}
    colleague = make_user("lead")
    client.force_login(colleague)
    assert client.get(reverse("telemetry:import_create"), retry).status_code == 403
    detail = client.get(reverse("telemetry:import_detail", kwargs={"pk": refused.pk}))
    assert "Try another format" not in detail.content.decode()
    # Ops import telemetry too, but not someone else's file; the roles that cannot import
    # at all get 403 on the form itself. None sees the offer.
    for role in ("ops", "procurement", "reader"):
        user = make_user(role)
        client.force_login(user)
        assert client.get(reverse("telemetry:import_create"), retry).status_code == 403
        if not user.has_perm("telemetry.add_importrun"):
            assert client.post(reverse("telemetry:import_create"), retry).status_code == 403
        page = client.get(reverse("telemetry:import_detail", kwargs={"pk": refused.pk}))
        assert "Try another format" not in page.content.decode()
    # A superuser may.
    client.force_login(make_user("admin"))
    assert client.get(reverse("telemetry:import_create"), retry).status_code == 200
    # No such upload: 404; the same for a run that did not come from an upload.
    missing = lead_client.get(reverse("telemetry:import_create"), {"retry": refused.pk + 99})
    assert missing.status_code == 404
    command = ImportRun.objects.create(
        kind="gpu", format="csv", source="command", status="rejected"
    )
    assert (
        lead_client.get(reverse("telemetry:import_create"), {"retry": command.pk}).status_code
        == 404
    )
    assert lead_client.get(reverse("telemetry:import_create"), {"retry": "x"}).status_code == 404
    assert ImportRun.objects.count() == 2


@pytest.mark.django_db
def test_a_retry_without_a_csrf_token_is_refused(lead, pool, media_root):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(lead)
    page = browser.get(reverse("telemetry:import_create"))
    assert 'name="csrfmiddlewaretoken"' in page.content.decode()
    kept = kept_uploads.keep(
        SimpleUploadedFile(NVIDIA_SMI_H100.name, NVIDIA_SMI_H100.read_bytes()),
        _digest(NVIDIA_SMI_H100),
    )
    data = {
        "kind": "gpu",
        "time_zone": "UTC",
        "format": "detect",
        "kept_upload": kept_uploads.token_for(kept, lead),
    }
    assert browser.post(reverse("telemetry:import_create"), data).status_code == 403
    assert not ImportRun.objects.exists()
    data["csrfmiddlewaretoken"] = str(page.context["csrf_token"])
    assert browser.post(reverse("telemetry:import_create"), data).status_code == 302
    assert ImportRun.objects.get().content_sha256 == kept.content_sha256


@pytest.mark.django_db
def test_a_retry_whose_file_is_gone_says_so_and_offers_the_plain_form(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks, media_root
):
    refused = _refused_run(lead_client, django_capture_on_commit_callbacks, pool)
    _kept_path(media_root, NVIDIA_SMI_H100).unlink()
    detail = lead_client.get(reverse("telemetry:import_detail", kwargs={"pk": refused.pk}))
    assert "Try another format" not in detail.content.decode()
    page = lead_client.get(reverse("telemetry:import_create"), {"retry": refused.pk})
    body = page.content.decode()
    assert page.status_code == 200
    assert (
        f"The uploaded file {NVIDIA_SMI_H100.name} is no longer kept (uploads are kept for 24 "
        "hours): choose the file again."
    ) in body
    assert 'id="kept-upload"' not in body and 'name="kept_upload"' in body
    assert 'type="file" name="file"' in body
    assert page.context["form"].fields["file"].required


@pytest.mark.django_db
def test_a_retry_of_an_import_that_succeeded_offers_nothing_to_retry(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks
):
    run = _post_and_run(
        lead_client, django_capture_on_commit_callbacks, path=NVIDIA_SMI_H100, format="detect"
    )
    page = lead_client.get(reverse("telemetry:import_create"), {"retry": run.pk})
    assert f"Import #{run.pk} was not refused (Succeeded): there is nothing to try again." in (
        page.content.decode()
    )
    assert "kept_upload" not in page.context["form"].initial


@pytest.mark.django_db
def test_an_upload_streamed_to_disk_is_detected_from_its_head_only(
    lead_client, pool, settings, monkeypatch
):
    """Files beyond FILE_UPLOAD_MAX_MEMORY_SIZE arrive as temporary files on disk; the form
    reads DETECTION_HEAD_BYTES of them, never the whole file, to tell the format."""
    from apps.telemetry import forms
    from apps.telemetry.ingest.parsers.detect import DETECTION_HEAD_BYTES

    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1_000
    heads, read_head = [], forms.read_head

    def spying_read_head(handle, size_bytes=DETECTION_HEAD_BYTES):
        head = read_head(handle, size_bytes)
        heads.append((type(handle).__name__, len(head)))
        return head

    monkeypatch.setattr(forms, "read_head", spying_read_head)
    response = _post(
        lead_client, path=DUTY_CYCLE, format="detect", pool=pool.pk, columns=DUTY_CYCLE_COLUMNS
    )
    assert response.status_code == 302, response.context["form"].errors
    assert DUTY_CYCLE.stat().st_size > 15 * DETECTION_HEAD_BYTES
    assert heads == [("_TemporaryFileWrapper", DETECTION_HEAD_BYTES)]
    assert ImportRun.objects.get().detected_format == "csv"


def test_beat_purges_kept_uploads_past_their_time(settings, media_root):
    """Beat's hourly ``telemetry.purge_kept_uploads`` deletes what is older than
    TELEMETRY_KEPT_UPLOAD_HOURS and keeps the rest, with no upload needed to sweep."""
    import os
    import time

    from apps.telemetry.ingest import kept_uploads
    from apps.telemetry.tasks import purge_kept_uploads_task
    from config.settings import CELERY_BEAT_SCHEDULE

    settings.TELEMETRY_KEPT_UPLOAD_HOURS = 2
    directory = kept_uploads.kept_directory()
    directory.mkdir(parents=True, exist_ok=True)
    old, fresh = directory / ("a" * 64), directory / ("b" * 64)
    old.write_text("x")
    fresh.write_text("y")
    three_hours_ago = time.time() - 3 * 3600
    os.utime(old, (three_hours_ago, three_hours_ago))
    assert purge_kept_uploads_task.apply().get() == 1
    assert not old.exists() and fresh.exists()
    schedule = CELERY_BEAT_SCHEDULE["purge-kept-uploads"]
    assert schedule["task"] == purge_kept_uploads_task.name
