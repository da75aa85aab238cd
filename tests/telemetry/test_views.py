"""Telemetry pages as a technical lead uses them: upload real files, follow the import,
read the result and the rejected lines, triage unassigned GPUs, keep hostname rules.
Roles without the permission change nothing; list pages keep a constant query count."""

import hashlib
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.core.roles import OPS, PROCUREMENT, TECHNICAL_LEAD
from apps.pools.models import Workload, WorkloadKind
from apps.telemetry.charts import build_pool_utilization_figure
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    HostnameRule,
    ImportRun,
    PoolHourlyUsage,
    RequestSample,
)
from tests.waiting import wait_until

DATA = Path(__file__).resolve().parent.parent / "data"
L4_SCRAPE = DATA / "dcgm-exporter" / "scrapes" / "kops_aws_L4_driver580.prom"
H100_SCRAPE = (
    DATA / "dcgm-exporter" / "scrapes" / "aicr_8xH100_k8s_podlabels_driver580_sampled.prom"
)
NVIDIA_SMI_H100 = (
    DATA
    / "nvidia-smi"
    / "query_gpu_csv"
    / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv"
)
AZURE_CODE = DATA / "traces" / "azure-llm-2023" / "AzureLLMInferenceTrace_code.csv"
GPU_COLUMNS = "timestamp=time,device=gpu,hostname=host,utilization_pct=util"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def lead_client(client, make_user):
    client.force_login(make_user("lead"))
    return client


@pytest.fixture
def inference_workload(pool, architecture):
    return Workload.objects.create(
        name="Code assistant",
        slug="code-assistant",
        kind=WorkloadKind.API_SERVICE,
        model_architecture=architecture,
        pool=pool,
        gpu_count=8,
    )


def _file(source, name=None) -> SimpleUploadedFile:
    if isinstance(source, Path):
        return SimpleUploadedFile(name or source.name, source.read_bytes())
    return SimpleUploadedFile(name or "upload.csv", source.encode())


def _upload(client, kind="gpu", **fields):
    data = {"kind": kind, "time_zone": "UTC", **fields}
    return client.post(reverse("telemetry:import_create"), data)


def _upload_and_run(client, django_capture_on_commit_callbacks, **fields):
    """Upload through the form, then run the enqueued import (and the rollups it
    schedules) inline, as a worker would after the commit."""
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = _upload(client, **fields)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert callbacks, "the import must be enqueued after the commit"
    run = ImportRun.objects.latest("pk")
    assert response.url == reverse("telemetry:import_detail", kwargs={"pk": run.pk})
    run.refresh_from_db()
    return run


def _dcgm_value(path: Path, metric: str) -> float:
    """The metric's value read straight from the exposition text (one GPU)."""
    match = re.search(rf"^{metric}{{[^}}]*}} (\S+)$", path.read_text(), re.MULTILINE)
    return float(match.group(1))


def _csv_rows(moments_and_values) -> str:
    return "time,gpu,host,util\n" + "".join(
        f"{moment.isoformat()},{gpu},{host},{util}\n"
        for moment, gpu, host, util in moments_and_values
    )


def _ten_yesterday():
    return (datetime.now(UTC) - timedelta(days=1)).replace(
        hour=10, minute=0, second=0, microsecond=0
    )


# Upload → task → result page


@pytest.mark.django_db
def test_lead_uploads_a_dcgm_scrape_and_sees_the_counts(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks, media_root
):
    scraped_at = _ten_yesterday() + timedelta(minutes=7, seconds=30)
    run = _upload_and_run(
        lead_client,
        django_capture_on_commit_callbacks,
        file=_file(L4_SCRAPE),
        format="dcgm",
        # As the browser fills it in: wall-clock time in the form's zone, no offset.
        scraped_at=f"{scraped_at:%Y-%m-%dT%H:%M:%S}",
        pool=pool.pk,
    )
    # The uploaded copy is deleted once its samples are stored; the run says who sent what.
    assert not (Path(media_root) / "imports" / f"{run.pk}-{L4_SCRAPE.name}").exists()
    assert run.source == "upload" and run.kind == "gpu" and run.format == "dcgm"
    assert run.created_by.get_username().startswith("lead-")
    # One GPU in the scrape → one sample, whose utilization is the file's.
    assert run.status == "succeeded", run.message
    assert (run.rows_accepted, run.rows_duplicate, run.rows_rejected) == (1, 0, 0)
    sample = GpuSample.objects.select_related("device").get()
    assert sample.device.pool == pool and sample.device.model_name == "NVIDIA L4"
    # The scrape's lines carry no time: the sample is dated at the scrape time entered.
    assert sample.timestamp == scraped_at == run.scraped_at
    assert sample.utilization_pct == pytest.approx(
        100 * _dcgm_value(L4_SCRAPE, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    )
    # The rollup of the touched hour ran after the import.
    assert PoolHourlyUsage.objects.filter(pool=pool).count() == 1

    page = lead_client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk}))
    body = page.content.decode()
    assert page.status_code == 200
    assert re.search(r'id="rows-accepted">1<', body)
    assert re.search(r'id="rows-duplicate">0<', body)
    assert "1 rows accepted, 0 duplicates skipped, 0 rows rejected" in body
    assert 'hx-trigger="every 1s"' not in body  # finished: nothing polls

    history = lead_client.get(reverse("telemetry:import_list")).content.decode()
    assert L4_SCRAPE.name in history and "Succeeded" in history


@pytest.mark.django_db
def test_the_same_upload_twice_is_refused_naming_the_first_import(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks
):
    fields = {"format": "nvidia-smi", "pool": pool.pk}
    first = _upload_and_run(
        lead_client, django_capture_on_commit_callbacks, file=_file(NVIDIA_SMI_H100), **fields
    )
    assert first.status == "succeeded", first.message
    assert (first.rows_accepted, first.rows_duplicate) == (1, 0)
    assert first.content_sha256 == hashlib.sha256(NVIDIA_SMI_H100.read_bytes()).hexdigest()
    response = _upload(lead_client, file=_file(NVIDIA_SMI_H100, "renamed.csv"), **fields)
    assert response.status_code == 200
    errors = response.context["form"].errors["file"]
    created = f"{first.created_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    assert errors == [
        f"This file was already imported on {created} as import #{first.pk}: nothing added. "
        f'<a href="/telemetry/imports/{first.pk}/">Open import #{first.pk}</a>.'
    ]
    # The link is rendered as a link, next to the file field.
    assert f'<a href="/telemetry/imports/{first.pk}/">Open import #{first.pk}</a>' in (
        response.content.decode()
    )
    assert ImportRun.objects.count() == 1 and GpuSample.objects.count() == 1


@pytest.mark.django_db
def test_identical_content_is_refused_only_after_a_success_of_the_same_kind(
    lead_client, pool, inference_workload
):
    text = NVIDIA_SMI_H100.read_bytes()
    digest = hashlib.sha256(text).hexdigest()
    # A rejected earlier import, and a request log of the same bytes, do not count.
    ImportRun.objects.create(
        kind="gpu", format="nvidia-smi", source="upload", status="rejected", content_sha256=digest
    )
    ImportRun.objects.create(
        kind="requests", format="csv", source="upload", status="succeeded", content_sha256=digest
    )
    response = _upload(lead_client, file=_file(NVIDIA_SMI_H100), format="nvidia-smi")
    assert response.status_code == 302
    assert ImportRun.objects.latest("pk").content_sha256 == digest
    # With a byte-order mark the content is the same file.
    again = _upload(
        lead_client, file=SimpleUploadedFile("bom.csv", b"\xef\xbb\xbf" + text), format="nvidia-smi"
    )
    assert again.status_code == 302  # the earlier success is still pending, not succeeded
    ImportRun.objects.filter(content_sha256=digest, kind="gpu", status="pending").update(
        status="succeeded"
    )
    refused = _upload(
        lead_client, file=SimpleUploadedFile("bom.csv", b"\xef\xbb\xbf" + text), format="nvidia-smi"
    )
    assert "nothing added" in refused.context["form"].errors["file"][0]


@pytest.mark.django_db
def test_lead_uploads_the_azure_code_trace_for_a_workload(
    lead_client, inference_workload, eager_celery, django_capture_on_commit_callbacks
):
    run = _upload_and_run(
        lead_client,
        django_capture_on_commit_callbacks,
        kind="requests",
        file=_file(AZURE_CODE),
        format="azure-llm",
        workload=inference_workload.pk,
    )
    lines = AZURE_CODE.read_text().splitlines()
    requests = len(lines) - 1  # header
    assert run.status == "succeeded", run.message
    assert run.kind == "requests" and run.workload == inference_workload
    assert (run.rows_accepted, run.rows_rejected) == (requests, 0)
    assert RequestSample.objects.filter(workload=inference_workload).count() == requests
    body = lead_client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk})).content
    assert f'id="rows-accepted">{requests:,}<' in body.decode()


@pytest.mark.django_db
def test_a_bad_csv_is_rejected_with_its_lines_named(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks
):
    ten = _ten_yesterday()
    text = _csv_rows(
        [
            (ten, "GPU-a", "node-1", 50),
            (ten + timedelta(minutes=1), "GPU-a", "node-1", 140),
            (ten + timedelta(minutes=2), "GPU-a", "node-1", 70),
        ]
    )
    run = _upload_and_run(
        lead_client,
        django_capture_on_commit_callbacks,
        file=_file(text, "gpus.csv"),
        format="csv",
        columns=GPU_COLUMNS,
        pool=pool.pk,
    )
    assert run.status == "rejected" and run.rows_rejected == 1 and run.rows_accepted == 0
    assert not GpuSample.objects.exists() and not GpuDevice.objects.exists()

    body = lead_client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk})).content
    errors = body.decode().split('id="import-errors"', 1)[1].split("</table>", 1)[0]
    # The header is line 1, so the 140 % row is line 3.
    assert re.search(r'<td class="text-end">3</td><td class="text-break">[^<]*140', errors)
    assert "0–100" in errors
    assert "Rejected: 1 bad row(s), nothing imported" in body.decode()


@pytest.mark.django_db
def test_skip_bad_rows_keeps_the_good_ones_and_lists_the_rest(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks
):
    ten = _ten_yesterday()
    text = _csv_rows([(ten, "GPU-a", "n", 50), (ten + timedelta(minutes=1), "GPU-a", "n", "abc")])
    run = _upload_and_run(
        lead_client,
        django_capture_on_commit_callbacks,
        file=_file(text),
        format="csv",
        columns=GPU_COLUMNS,
        pool=pool.pk,
        skip_bad_rows="on",
    )
    assert run.status == "succeeded" and run.skip_bad_rows
    assert (run.rows_accepted, run.rows_rejected) == (1, 1)
    assert [error["line"] for error in run.errors] == [3]


# Progress polling


@pytest.mark.django_db
def test_progress_fragment_polls_while_pending_and_stops_when_finished(lead_client, pool):
    run = ImportRun.objects.create(
        kind="gpu", format="dcgm", source="upload", filename="scrape.prom", progress_pct=50
    )
    url = reverse("telemetry:import_detail", kwargs={"pk": run.pk})
    polling = {"HX-Request": "true", "HX-Target": "import-progress"}

    pending = lead_client.get(url, headers=polling).content.decode()
    assert pending.lstrip().startswith('<div id="import-progress"')
    assert 'hx-trigger="every 1s"' in pending and f'hx-get="{url}"' in pending
    assert 'aria-valuenow="50"' in pending
    assert "<html" not in pending and "page-header" not in pending

    run.status = ImportRun.Status.RUNNING
    run.save()
    assert 'hx-trigger="every 1s"' in lead_client.get(url, headers=polling).content.decode()

    run.status, run.rows_accepted, run.message = "succeeded", 7, "7 rows accepted."
    run.finished_at = datetime.now(UTC)
    run.save()
    finished = lead_client.get(url, headers=polling).content.decode()
    assert finished.lstrip().startswith('<div id="import-progress"')
    assert "hx-trigger" not in finished and "hx-get" not in finished
    assert 'id="rows-accepted">7<' in finished

    # The full page while pending carries the same polling element.
    run.status = "pending"
    run.save()
    page = lead_client.get(url).content.decode()
    assert "<html" in page and 'hx-trigger="every 1s"' in page


# Form validation


@pytest.mark.django_db
def test_csv_needs_a_mapping_and_the_error_names_the_field(lead_client, pool):
    response = _upload(lead_client, file=_file("time,gpu,util\n"), format="csv")
    assert response.status_code == 200
    form = response.context["form"]
    assert list(form.errors) == ["columns"]
    assert "column mapping" in form.errors["columns"][0]
    assert "Column mapping" in response.content.decode()  # the label next to the error
    assert not ImportRun.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field", "fragment"),
    [
        ({"columns": "timestamp=time,device"}, "columns", "not field=header"),
        ({"columns": "timestamp=time,device=gpu,utilisation=util"}, "columns", "utilisation"),
        ({"columns": "timestamp=time,device=gpu"}, "columns", "lacks utilization_pct"),
        ({"time_zone": "Mars/Olympus"}, "time_zone", "Unknown time zone “Mars/Olympus”"),
    ],
)
def test_upload_form_errors_name_the_field(lead_client, fields, field, fragment):
    response = _upload(
        lead_client,
        file=_file("time,gpu,util\n"),
        format="csv",
        **{"columns": GPU_COLUMNS, **fields},
    )
    errors = response.context["form"].errors
    assert field in errors and fragment in " ".join(errors[field])
    assert not ImportRun.objects.exists()


@pytest.mark.django_db
def test_requests_need_a_workload_and_files_over_the_cap_are_refused(lead_client, settings):
    settings.TELEMETRY_UPLOAD_MAX_BYTES = 1_000
    response = _upload(lead_client, kind="requests", file=_file("x" * 2_000), format="azure-llm")
    errors = response.context["form"].errors
    assert "workload" in errors
    assert "The file is 2 kB; uploads are limited to 1 kB" in errors["file"][0]
    assert not ImportRun.objects.exists()


@pytest.mark.django_db
def test_import_page_offers_both_kinds(lead_client):
    gpu = lead_client.get(reverse("telemetry:import_create")).content.decode()
    assert 'name="pool"' in gpu and 'name="workload"' not in gpu and 'value="dcgm"' in gpu
    requests = lead_client.get(reverse("telemetry:import_create"), {"kind": "requests"})
    body = requests.content.decode()
    assert 'name="workload"' in body and 'value="azure-llm"' in body
    assert 'enctype="multipart/form-data"' in body


# Unassigned GPUs


@pytest.mark.django_db
def test_unassigned_gpus_wait_with_their_sample_count_and_count_once_assigned(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks
):
    ten = _ten_yesterday()
    text = _csv_rows(
        [
            # GPU-x: 40 and 80 in the hour → 60 %; GPU-y: 100 % → pool mean 80 %.
            (ten + timedelta(minutes=5), "GPU-x", "far-away-1", 40),
            (ten + timedelta(minutes=35), "GPU-x", "far-away-1", 80),
            (ten + timedelta(minutes=50), "GPU-y", "far-away-2", 100),
        ]
    )
    run = _upload_and_run(
        lead_client,
        django_capture_on_commit_callbacks,
        file=_file(text),
        format="csv",
        columns=GPU_COLUMNS,
    )
    assert run.status == "succeeded" and "2 waiting for a pool" in run.message
    assert not PoolHourlyUsage.objects.exists()

    page = lead_client.get(reverse("telemetry:device_unassigned"))
    rows = {device.uuid: device.sample_count for device in page.context["page"]}
    assert rows == {"GPU-x": 2, "GPU-y": 1}
    body = page.content.decode()
    assert "far-away-1" in body and 'name="devices"' in body

    devices = list(GpuDevice.objects.order_by("uuid").values_list("pk", flat=True))
    response = lead_client.post(
        reverse("telemetry:device_assign"), {"pool": pool.pk, "devices": devices}, follow=True
    )
    assert f"2 GPUs assigned to {pool}; their 3 samples now count." in response.content.decode()
    assert set(GpuDevice.objects.values_list("pool_id", "assignment")) == {(pool.pk, "manual")}
    hour = PoolHourlyUsage.objects.get(pool=pool)
    assert hour.hour == ten and hour.reporting_gpus == 2
    assert hour.busy_gpu_hours == pytest.approx(1.6)
    assert hour.avg_utilization_pct == pytest.approx(80.0)
    # The triage is empty now.
    assert "Every GPU has a pool" in response.content.decode()


@pytest.mark.django_db
def test_assigning_nothing_says_what_to_do(lead_client, pool):
    response = lead_client.post(reverse("telemetry:device_assign"), {"pool": pool.pk}, follow=True)
    assert "Tick at least one GPU to assign." in response.content.decode()


@pytest.mark.django_db
def test_reader_sees_the_triage_without_assign_controls(client, make_user, pool):
    _device("GPU-r", "node-r")
    client.force_login(make_user("reader"))
    body = client.get(reverse("telemetry:device_unassigned")).content.decode()
    assert "node-r" in body and 'name="devices"' not in body
    assert reverse("telemetry:device_assign") not in body


def _device(uuid, hostname, samples=0, pool=None):
    moment = datetime(2026, 11, 1, 10, tzinfo=UTC)
    device = GpuDevice.objects.create(
        key=uuid,
        uuid=uuid,
        hostname=hostname,
        gpu_index=0,
        pool=pool,
        first_seen_at=moment,
        last_seen_at=moment + timedelta(minutes=samples),
    )
    GpuSample.objects.bulk_create(
        GpuSample(device=device, timestamp=moment + timedelta(minutes=index), utilization_pct=50)
        for index in range(samples)
    )
    return device


# Hostname rules


@pytest.mark.django_db
def test_lead_adds_and_deletes_a_hostname_rule(lead_client, pool):
    response = lead_client.post(
        reverse("telemetry:rule_create"),
        {"pool": pool.pk, "hostname_pattern": " gpu-sh-* ", "priority": 10},
    )
    assert response.status_code == 302 and response.url == reverse("telemetry:rule_list")
    rule = HostnameRule.objects.get()
    assert (rule.pool, rule.hostname_pattern, rule.priority) == (pool, "gpu-sh-*", 10)
    assert "gpu-sh-*" in lead_client.get(reverse("telemetry:rule_list")).content.decode()

    confirm = lead_client.get(reverse("telemetry:rule_delete", kwargs={"pk": rule.pk}))
    assert "gpu-sh-*" in confirm.content.decode()
    deleted = lead_client.post(reverse("telemetry:rule_delete", kwargs={"pk": rule.pk}))
    assert deleted.status_code == 302 and not HostnameRule.objects.exists()


@pytest.mark.django_db
def test_a_blank_rule_pattern_is_named(lead_client, pool):
    response = lead_client.post(
        reverse("telemetry:rule_create"), {"pool": pool.pk, "hostname_pattern": "  ", "priority": 1}
    )
    assert response.status_code == 200 and "hostname_pattern" in response.context["form"].errors
    assert not HostnameRule.objects.exists()


# Permissions: POSTs by roles without the right change nothing


def _post_upload(client, pool, device, rule):
    return _upload(client, file=_file(L4_SCRAPE), format="dcgm", pool=pool.pk)


def _post_assign(client, pool, device, rule):
    return client.post(
        reverse("telemetry:device_assign"), {"pool": pool.pk, "devices": [device.pk]}
    )


def _post_rule_create(client, pool, device, rule):
    return client.post(
        reverse("telemetry:rule_create"), {"pool": pool.pk, "hostname_pattern": "x-*"}
    )


def _post_rule_delete(client, pool, device, rule):
    return client.post(reverse("telemetry:rule_delete", kwargs={"pk": rule.pk}))


POSTS = {
    "upload": ("telemetry.add_importrun", _post_upload),
    "assign": ("telemetry.change_gpudevice", _post_assign),
    "rule_create": ("telemetry.add_hostnamerule", _post_rule_create),
    "rule_delete": ("telemetry.delete_hostnamerule", _post_rule_delete),
}
# Every (role, POST) pair the roles table does not allow; "reader" holds no role at all.
ROLE_PERMISSIONS = {
    "lead": TECHNICAL_LEAD.permissions,
    "ops": OPS.permissions,
    "procurement": PROCUREMENT.permissions,
    "reader": (),
}
REFUSED = [
    (role, action)
    for role, permissions in ROLE_PERMISSIONS.items()
    for action, (permission, _) in POSTS.items()
    if permission not in permissions
]


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "action"), REFUSED)
def test_roles_without_the_permission_get_403_and_nothing_changes(
    client, make_user, role, action, pool
):
    user = make_user(role)
    permission, post = POSTS[action]
    assert not user.has_perm(permission)
    client.force_login(user)
    device = _device("GPU-z", "node-z", samples=2)
    rule = HostnameRule.objects.create(pool=pool, hostname_pattern="node-*")

    assert post(client, pool, device, rule).status_code == 403

    assert not ImportRun.objects.exists() and GpuSample.objects.count() == 2
    device.refresh_from_db()
    assert device.pool is None and device.assignment == "unassigned"
    assert list(HostnameRule.objects.values_list("hostname_pattern", flat=True)) == ["node-*"]
    assert not PoolHourlyUsage.objects.exists()
    assert not (Path(settings.MEDIA_ROOT) / "imports").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["lead", "ops", "procurement", "reader"])
def test_every_role_reads_the_telemetry_pages(client, make_user, role, pool):
    client.force_login(make_user(role))
    for name in ("import_list", "device_unassigned", "rule_list"):
        assert client.get(reverse(f"telemetry:{name}")).status_code == 200


def test_the_refused_table_is_not_empty():
    """Guards the parametrisation above against a roles table that grants everything."""
    assert ("reader", "upload") in REFUSED and ("procurement", "assign") in REFUSED


@pytest.mark.django_db
def test_device_assign_is_post_only(lead_client):
    assert lead_client.get(reverse("telemetry:device_assign")).status_code == 405


# Query counts


def _count_queries(client, url) -> int:
    with CaptureQueriesContext(connection) as context:
        assert client.get(url).status_code == 200
    return len(context)


def _runs(count, *, users, pool, workload):
    for index in range(count):
        ImportRun.objects.create(
            kind="gpu" if index % 2 else "requests",
            format="dcgm" if index % 2 else "azure-llm",
            source="upload",
            filename=f"file-{index}.txt",
            created_by=users[index % len(users)],
            pool=pool if index % 2 else None,
            workload=None if index % 2 else workload,
            status="succeeded",
            rows_accepted=index,
            errors=[{"line": 2, "message": "x"}],
        )


@pytest.mark.django_db
def test_import_history_query_count_does_not_grow(lead_client, make_user, pool, workload):
    users = [make_user("lead") for _ in range(3)]
    _runs(2, users=users, pool=pool, workload=workload)
    url = reverse("telemetry:import_list")
    before = _count_queries(lead_client, url)
    _runs(20, users=users, pool=pool, workload=workload)
    assert _count_queries(lead_client, url) == before
    assert "No imports yet" not in lead_client.get(url).content.decode()


@pytest.mark.django_db
def test_import_history_paginates_and_has_an_empty_state(lead_client, make_user, pool, workload):
    url = reverse("telemetry:import_list")
    assert "No imports yet" in lead_client.get(url).content.decode()
    _runs(30, users=[make_user("lead")], pool=pool, workload=workload)
    first = lead_client.get(url)
    assert len(first.context["page"]) == 25 and "Showing 1–25 of 30" in first.content.decode()
    assert len(lead_client.get(url, {"page": 2}).context["page"]) == 5


@pytest.mark.django_db
def test_triage_and_rules_query_counts_do_not_grow(lead_client, pool, gpu_model):
    from apps.pools.models import Pool

    _device("GPU-0", "node-0", samples=3)
    HostnameRule.objects.create(pool=pool, hostname_pattern="a-*")
    triage, rules = reverse("telemetry:device_unassigned"), reverse("telemetry:rule_list")
    before = (_count_queries(lead_client, triage), _count_queries(lead_client, rules))
    for index in range(1, 12):
        _device(f"GPU-{index}", f"node-{index}", samples=index)
        other = Pool.objects.create(
            name=f"Other {index}", slug=f"other-{index}", purpose="training",
            deployment="cloud_on_demand", gpu_model=gpu_model, gpu_count=8,
        )  # fmt: skip
        HostnameRule.objects.create(pool=other, hostname_pattern=f"b{index}-*")
    after = (_count_queries(lead_client, triage), _count_queries(lead_client, rules))
    assert after == before
    counts = {
        device.uuid: device.sample_count for device in lead_client.get(triage).context["page"]
    }
    assert counts["GPU-0"] == 3 and counts["GPU-11"] == 11


# Pool utilization chart


def test_utilization_figure_breaks_the_line_where_no_gpu_reported():
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    rows = [
        {"hour": ten, "avg_utilization_pct": 50.0, "max_utilization_pct": 90.0,
         "reporting_gpus": 4, "capacity_gpu_hours": 8.0},
        {"hour": ten + timedelta(hours=1), "avg_utilization_pct": 60.0,
         "max_utilization_pct": 70.0, "reporting_gpus": 8, "capacity_gpu_hours": 8.0},
        {"hour": ten + timedelta(hours=5), "avg_utilization_pct": 10.0,
         "max_utilization_pct": 20.0, "reporting_gpus": 1, "capacity_gpu_hours": 8.0},
    ]  # fmt: skip
    figure = build_pool_utilization_figure(rows)
    average, busiest = figure.data
    assert list(average.y) == [50.0, 60.0, None, 10.0]
    assert list(busiest.y) == [90.0, 70.0, None, 20.0]
    assert [list(point) for point in average.customdata][:2] == [[4, 8.0], [8, 8.0]]
    assert "GPUs reporting" in average.hovertemplate
    assert figure.layout.yaxis.title.text == "Utilization (%)"
    assert figure.layout.xaxis.title.text == "Hour (UTC)"
    assert figure.layout.showlegend


def test_utilization_card_shows_the_empty_state_without_rollups():
    empty = render_to_string(
        "telemetry/_pool_utilization.html",
        {"utilization_figure": build_pool_utilization_figure([])},
    )
    assert "No telemetry for this pool yet" in empty and "plotly-chart" not in empty
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    drawn = render_to_string(
        "telemetry/_pool_utilization.html",
        {
            "utilization_figure": build_pool_utilization_figure(
                [{"hour": ten, "avg_utilization_pct": 42.0, "reporting_gpus": 1}]
            )
        },
    )
    assert 'id="chart-pool-utilization"' in drawn and "42" in drawn


@pytest.mark.django_db
def test_utilization_figure_from_real_rollups(pool, eager_celery):
    """The query the pool page runs, over rows the rollup wrote."""
    ten = _ten_yesterday()
    device = _device("GPU-p", "node-p", pool=pool)
    GpuSample.objects.bulk_create(
        [
            GpuSample(device=device, timestamp=ten, utilization_pct=30),
            GpuSample(device=device, timestamp=ten + timedelta(hours=1), utilization_pct=90),
        ]
    )
    from apps.telemetry.rollups.hourly import rollup_pool_hours

    rollup_pool_hours(pool.pk, ten, ten + timedelta(hours=2))
    since = datetime.now(UTC) - timedelta(days=14)
    rows = (
        pool.hourly_usage.filter(hour__gte=since)
        .order_by("hour")
        .values(
            "hour",
            "avg_utilization_pct",
            "max_utilization_pct",
            "reporting_gpus",
            "capacity_gpu_hours",
        )
    )
    figure = build_pool_utilization_figure(rows)
    assert list(figure.data[0].y) == [30.0, 90.0]


# A real worker


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_upload_is_imported_by_a_real_worker(client, make_user, celery_worker_process):
    """Through Redis to a real worker process; the page polls until the run finishes.
    No pool is given, so no rollup is scheduled: only the import task is exercised."""
    client.force_login(make_user("lead"))
    response = _upload(
        client, file=_file(H100_SCRAPE), format="dcgm", scraped_at="2026-11-01T10:15:00"
    )
    assert response.status_code == 302
    run = ImportRun.objects.get()
    url = reverse("telemetry:import_detail", kwargs={"pk": run.pk})
    polling = {"HX-Request": "true", "HX-Target": "import-progress"}
    fragment = wait_until(
        lambda: _finished_fragment(client.get(url, headers=polling).content.decode()),
        timeout_seconds=60,
        what="the import's progress to stop polling",
        interval_seconds=0.2,
    )
    run.refresh_from_db()
    assert run.status == "succeeded", run.message
    assert run.rows_accepted == 8 == GpuDevice.objects.filter(pool__isnull=True).count()
    assert 'id="rows-accepted">8<' in fragment


def _finished_fragment(fragment):
    """The progress fragment once it no longer asks to be polled again, else None."""
    return fragment if "hx-trigger" not in fragment else None
