"""Imports whose numbers can be trusted: MIG GPUs stored as such, clocks never set refused,
samples outside a pool's service period or ahead of their arrival kept but said, and the
same content never imported twice."""

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.accounts.models import ApiToken
from apps.pools.models import EARLIEST_SERVICE_START
from apps.telemetry.ingest import importer, storage
from apps.telemetry.ingest.parsers import (
    EARLIEST_TIMESTAMP,
    parse_azure_llm,
    parse_dcgm,
    parse_gpu_csv,
    parse_nvidia_smi_csv,
    parse_request_csv,
)
from apps.telemetry.ingest.parsers.dcgm import METRIC_NAMES
from apps.telemetry.models import GpuDevice, GpuSample, ImportRun, PoolHourFlag
from apps.telemetry.pull import prometheus

DATA = Path(__file__).resolve().parent.parent / "data"
SMI = DATA / "nvidia-smi" / "query_gpu_csv"
H100_MIG = SMI / "linux-x86_64__nvidia-h100-mig__590.48.01__load.csv"
H200_MIG = SMI / "linux-x86_64__nvidia-h200-mig__590.48.01__idle.csv"
H100_WHOLE = SMI / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv"
SCRAPES = DATA / "dcgm-exporter" / "scrapes"
L4_SCRAPE = SCRAPES / "kops_aws_L4_driver580.prom"
T4_SCRAPE = SCRAPES / "ericsson_T4_loaded_driver590_nohelp.prom"
GPU_COLUMNS = {"timestamp": "time", "device": "gpu", "utilization_pct": "util"}
CLOCK_NOT_SET = "is before 2000-01-01: the node's clock is not set"


@pytest.fixture
def lead_client(client, make_user):
    client.force_login(make_user("lead"))
    return client


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def _csv(rows) -> str:
    return "time,gpu,util\n" + "".join(
        f"{moment.isoformat()},{gpu},{util}\n" for moment, gpu, util in rows
    )


def _import_csv(text, *, pool, received_at=None):
    result = parse_gpu_csv(text, columns=GPU_COLUMNS)
    assert not result.errors, result.errors
    return storage.import_gpu_samples(result, pool=pool, received_at=received_at)


# MIG mode from nvidia-smi


@pytest.mark.parametrize("path", [H100_MIG, H200_MIG], ids=["H100-MIG", "H200-MIG"])
def test_nvidia_smi_reads_mig_mode_from_the_real_captures(path):
    (row,) = parse_nvidia_smi_csv(path.read_text()).rows
    # The capture says mig.mode.current "Enabled" and utilization.gpu "[N/A]".
    assert row.mig_mode_enabled is True
    assert row.utilization_pct is None


def test_a_whole_gpu_is_not_in_mig_mode():
    (row,) = parse_nvidia_smi_csv(H100_WHOLE.read_text()).rows
    assert (row.mig_mode_enabled, row.utilization_pct) == (False, 100.0)


@pytest.mark.django_db
@pytest.mark.parametrize("path", [H100_MIG, H200_MIG], ids=["H100-MIG", "H200-MIG"])
def test_a_mig_gpu_is_stored_in_mig_mode_with_no_utilization(pool, path):
    run = ImportRun.objects.create(kind="gpu", format="nvidia-smi", source="command", pool=pool)
    summary = importer.run_import(run, path.read_text())
    assert (summary.accepted, summary.rejected) == (1, 0)
    device = GpuDevice.objects.get()
    assert device.mig_mode_enabled is True and device.pool == pool
    sample = GpuSample.objects.get()
    # Not measurable under MIG: NULL, never 0 % busy.
    assert sample.utilization_pct is None
    assert sample.memory_used_mib is not None  # the rest of the row is kept


@pytest.mark.django_db
def test_a_known_gpu_switched_to_mig_is_refreshed(pool):
    # The captures share one zeroed UUID: the same GPU, first whole, then in MIG mode.
    storage.import_gpu_samples(parse_nvidia_smi_csv(H100_WHOLE.read_text()), pool=pool)
    assert GpuDevice.objects.get().mig_mode_enabled is False
    storage.import_gpu_samples(parse_nvidia_smi_csv(H100_MIG.read_text()), pool=pool)
    device = GpuDevice.objects.get()
    assert device.mig_mode_enabled is True
    assert list(
        GpuSample.objects.order_by("timestamp").values_list("utilization_pct", flat=True)
    ) == [
        100.0,
        None,
    ]


def _slice_scrape(profile: str) -> str:
    return (
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0",UUID="GPU-a100",GPU_I_ID="2",'
        f'GPU_I_PROFILE="{profile}",Hostname="n1"}} 0.5\n'
    )


@pytest.mark.django_db
def test_a_slice_holds_the_compute_slices_of_its_profile(pool):
    scraped_at = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    storage.import_gpu_samples(
        parse_dcgm(_slice_scrape("3g.40gb"), scraped_at=scraped_at), pool=pool
    )
    device = GpuDevice.objects.get()
    assert (device.gpu_instance_id, device.mig_profile, device.mig_compute_slices) == (
        2,
        "3g.40gb",
        3,
    )
    # Re-profiled to 2g.20gb: the refreshed device holds 2 slices.
    later = scraped_at + timedelta(minutes=1)
    storage.import_gpu_samples(parse_dcgm(_slice_scrape("2g.20gb"), scraped_at=later), pool=pool)
    device.refresh_from_db()
    assert (device.mig_profile, device.mig_compute_slices) == ("2g.20gb", 2)


# Clocks never set


def test_the_parsers_and_the_models_agree_on_the_earliest_instant():
    assert EARLIEST_TIMESTAMP == EARLIEST_SERVICE_START == datetime(2000, 1, 1, tzinfo=UTC)


def test_nvidia_smi_refuses_a_1970_timestamp_with_its_line():
    lines = H100_WHOLE.read_text().splitlines()
    header, row = lines[0], lines[1]
    stamp = row.split(",", 1)[0]
    text = "\n".join([header, row, row.replace(stamp, "1970/01/01 00:00:05.000", 1)]) + "\n"
    result = parse_nvidia_smi_csv(text)
    assert len(result.rows) == 1
    assert [error.message for error in result.errors] == [
        f"line 3: timestamp 1970-01-01 00:00:05 {CLOCK_NOT_SET}"
    ]


def test_generic_csvs_refuse_timestamps_before_2000_with_their_line():
    text = (
        "time,gpu,util\n2026-11-30T10:00:00Z,GPU-a,50\n5,GPU-a,50\n1999-12-31T23:59:59Z,GPU-a,50\n"
    )
    result = parse_gpu_csv(text, columns=GPU_COLUMNS)
    assert [row.line_number for row in result.rows] == [2]
    assert [error.message for error in result.errors] == [
        f"line 3: timestamp 1970-01-01 00:00:05 {CLOCK_NOT_SET}",
        f"line 4: timestamp 1999-12-31 23:59:59 {CLOCK_NOT_SET}",
    ]
    requests = parse_request_csv(
        "ts,in,out\n2000-01-01T00:00:00Z,10,5\n0,10,5\n",
        columns={"timestamp": "ts", "input_tokens": "in", "output_tokens": "out"},
    )
    assert [row.line_number for row in requests.rows] == [2]  # 2000-01-01 itself is fine
    assert [error.message for error in requests.errors] == [
        f"line 3: timestamp 1970-01-01 00:00:00 {CLOCK_NOT_SET}"
    ]


def test_an_azure_trace_line_from_1970_is_refused():
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n1970-01-01 00:00:07.0000000,10,5\r\n"
    result = parse_azure_llm(text)
    assert result.rows == []
    assert [error.message for error in result.errors] == [
        f"line 2: timestamp 1970-01-01 00:00:07 {CLOCK_NOT_SET}"
    ]


def test_a_dcgm_scrape_time_before_2000_refuses_the_lines_it_stamps():
    text = L4_SCRAPE.read_text()
    first_line = next(
        number
        for number, line in enumerate(text.split("\n"), 1)
        if line.split("{", 1)[0] in METRIC_NAMES  # the first line of a stored metric
    )
    result = parse_dcgm(text, scraped_at=datetime(1970, 1, 1, 0, 0, 3, tzinfo=UTC))
    assert result.rows == []
    assert [error.message for error in result.errors] == [
        f"line {first_line}: scrape time 1970-01-01 00:00:03 {CLOCK_NOT_SET}"
    ]
    # A line with its own timestamp does not take the scrape time.
    stamped = _slice_scrape("1g.10gb").rstrip("\n") + " 1764547200000\n"
    result = parse_dcgm(stamped, scraped_at=datetime(1970, 1, 1, tzinfo=UTC))
    assert [row.timestamp for row in result.rows] == [datetime(2025, 12, 1, tzinfo=UTC)]


def test_a_prometheus_point_before_2000_is_refused():
    data = {
        "resultType": "matrix",
        "result": [
            {
                "metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-x"},
                "values": [[5, "40"], [1_764_547_200, "50"]],
            }
        ],
    }
    result = prometheus.rows_from_prometheus([("DCGM_FI_DEV_GPU_UTIL", data)])
    assert [row.utilization_pct for row in result.rows] == [50.0]
    assert [error.message for error in result.errors] == [
        'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-x"} at 1970-01-01 00:00:05: before 2000-01-01 (is the '
        "clock of the node or of the Prometheus server set?)"
    ]


@pytest.fixture
def ops_bearer(make_user):
    _token, secret = ApiToken.issue(
        user=make_user("ops"), description="agent", lifetime=timedelta(days=1), read_only=False
    )
    return {"Authorization": f"Bearer {secret}"}


@pytest.mark.django_db
def test_a_push_from_a_node_whose_clock_is_not_set_is_a_422_naming_the_line(
    client, ops_bearer, pool
):
    payload = {
        "format": "csv",
        "pool": pool.slug,
        "text": "t,g,u\n2026-11-30T10:00:00Z,GPU-a,50\n1970-01-01T00:00:09Z,GPU-a,50\n",
        "columns": {"timestamp": "t", "device": "g", "utilization_pct": "u"},
    }
    response = client.post(
        "/api/v1/telemetry/gpu/", payload, content_type="application/json", headers=ops_bearer
    )
    assert response.status_code == 422
    assert response.json()["errors"] == [
        {"line": 3, "message": f"line 3: timestamp 1970-01-01 00:00:09 {CLOCK_NOT_SET}"}
    ]
    assert not GpuSample.objects.exists()


# Outside the service period


@pytest.mark.django_db
def test_samples_outside_the_service_period_are_kept_and_counted(pool):
    pool.in_service_from = datetime(2026, 11, 30, 14, 2, tzinfo=UTC)
    pool.in_service_until = datetime(2026, 11, 30, 16, 0, tzinfo=UTC)
    pool.save()
    start = pool.in_service_from
    # Counted by the hour, as the rollup and the reports count them: the 14:00 hour is
    # overlapped by the period, so it is in service whole.
    rows = [
        (start - timedelta(minutes=30), "GPU-a", 10),  # 13:32, before
        (start - timedelta(seconds=1), "GPU-b", 10),  # 14:01:59, in the 14:00 hour: in
        (start, "GPU-a", 50),
        (start + timedelta(minutes=40), "GPU-b", 50),
        (pool.in_service_until - timedelta(seconds=1), "GPU-a", 50),
        (pool.in_service_until, "GPU-a", 90),  # at the end: out
    ]
    summary = _import_csv(_csv(rows), pool=pool)
    assert summary.accepted == 6 == GpuSample.objects.count()  # all kept
    assert summary.warnings == [
        f"1 sample before pool {pool.name} entered service (2026-11-30 14:02 UTC): kept, not "
        "charged; change the pool's service period to count them.",
        f"1 sample at or after pool {pool.name} left service (2026-11-30 16:00 UTC): kept, not "
        "charged; change the pool's service period to count them.",
    ]


@pytest.mark.django_db
def test_samples_inside_the_service_period_say_nothing(pool):
    # The fixture's pool is in service from 2022 on.
    summary = _import_csv(_csv([(datetime(2026, 11, 30, 10, tzinfo=UTC), "GPU-a", 50)]), pool=pool)
    assert summary.accepted == 1 and summary.warnings == []


@pytest.mark.django_db
def test_the_import_page_and_the_api_show_the_warnings(lead_client, client, ops_bearer, pool):
    pool.in_service_from = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    pool.save()
    payload = {
        "format": "csv",
        "pool": pool.slug,
        "text": _csv([(datetime(2026, 11, 30, 11, 0, tzinfo=UTC), "GPU-a", 50)]).replace(
            "time,gpu,util", "t,g,u"
        ),
        "columns": {"timestamp": "t", "device": "g", "utilization_pct": "u"},
    }
    response = client.post(
        "/api/v1/telemetry/gpu/", payload, content_type="application/json", headers=ops_bearer
    )
    assert response.status_code == 201, response.content
    sentence = (
        f"1 sample before pool {pool.name} entered service (2026-11-30 12:00 UTC): kept, not "
        "charged; change the pool's service period to count them."
    )
    assert response.json()["warnings"] == [sentence]
    run = ImportRun.objects.get()
    assert run.warnings == [sentence]
    page = lead_client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk}))
    warnings = page.content.decode().split('id="import-warnings"', 1)[1].split("</div>", 1)[0]
    assert f"<li>{sentence}</li>".replace("'", "&#x27;") in warnings


@pytest.mark.django_db
def test_assigning_gpus_says_how_many_samples_fall_outside_the_service_period(lead_client, pool):
    pool.in_service_from = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    pool.save()
    rows = [
        (datetime(2026, 11, 30, 11, 0, tzinfo=UTC), "GPU-x", 40),
        (datetime(2026, 11, 30, 11, 30, tzinfo=UTC), "GPU-y", 40),
        (datetime(2026, 11, 30, 12, 30, tzinfo=UTC), "GPU-x", 80),
    ]
    summary = _import_csv(_csv(rows), pool=None)
    assert summary.unassigned_devices == 2 and summary.warnings == []  # no pool yet
    devices = list(GpuDevice.objects.values_list("pk", flat=True))
    response = lead_client.post(
        reverse("telemetry:device_assign"), {"pool": pool.pk, "devices": devices}, follow=True
    )
    body = response.content.decode().replace("&#x27;", "'")
    assert f"2 GPUs assigned to {pool}; 1 of their 3 samples count." in body
    assert (
        f"2 samples before pool {pool.name} entered service (2026-11-30 12:00 UTC): kept, not "
        "charged; change the pool's service period to count them."
    ) in body


# Clock skew


@pytest.mark.django_db
def test_samples_ahead_of_their_arrival_flag_their_pool_hours(pool):
    arrival = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
    rows = [
        (arrival + timedelta(minutes=3), "GPU-a", 50),  # within 5 min: fine
        (arrival + timedelta(minutes=5), "GPU-a", 50),  # exactly 5 min: fine
        (arrival + timedelta(minutes=10), "GPU-a", 50),
        (arrival + timedelta(minutes=42), "GPU-b", 50),
        (arrival + timedelta(minutes=42), "GPU-a", 50),
        (arrival + timedelta(minutes=75), "GPU-b", 50),  # the next hour
    ]
    summary = _import_csv(_csv(rows), pool=pool, received_at=arrival)
    at = f"{arrival:%Y-%m-%d %H:%M} UTC"
    flags = list(PoolHourFlag.objects.values_list("hour", "kind", "samples", "gpus", "detail"))
    assert flags == [
        (arrival, "clock_skew", 3, 2, f"3 samples up to 42 min ahead of their arrival at {at}"),
        (
            arrival + timedelta(hours=1),
            "clock_skew",
            1,
            1,
            f"1 sample up to 75 min ahead of their arrival at {at}",
        ),
    ]
    assert summary.warnings == [
        f"4 samples of pool {pool.name} dated up to 75 min ahead of their arrival at {at}: kept, "
        "their hours flagged; check the node's clock."
    ]
    # The same rows again rewrite the flags rather than add to them.
    _import_csv(_csv(rows), pool=pool, received_at=arrival)
    assert list(PoolHourFlag.objects.values_list("samples", flat=True)) == [3, 1]


@pytest.mark.django_db
def test_a_command_line_import_is_checked_against_its_run(pool):
    run = ImportRun.objects.create(kind="gpu", format="csv", source="command", pool=pool)
    ahead = run.created_at + timedelta(minutes=20, seconds=10)
    importer.run_import(run, _csv([(ahead, "GPU-a", 50)]), columns=GPU_COLUMNS)
    run.refresh_from_db()
    assert run.warnings == [
        f"1 sample of pool {pool.name} dated up to 20 min ahead of their arrival at "
        f"{run.created_at:%Y-%m-%d %H:%M} UTC: kept, their hours flagged; check the node's clock."
    ]
    flag = PoolHourFlag.objects.get()
    assert (flag.pool, flag.kind, flag.samples, flag.gpus) == (pool, "clock_skew", 1, 1)
    assert run.content_sha256 == hashlib.sha256(_csv([(ahead, "GPU-a", 50)]).encode()).hexdigest()


# Uploads are idempotent


def _upload(client, path_or_bytes, name, **fields):
    content = path_or_bytes.read_bytes() if isinstance(path_or_bytes, Path) else path_or_bytes
    data = {"kind": "gpu", "time_zone": "UTC", "file": SimpleUploadedFile(name, content), **fields}
    return client.post(reverse("telemetry:import_create"), data)


@pytest.mark.django_db
def test_a_dcgm_upload_needs_a_scrape_time_in_range(lead_client, pool):
    missing = _upload(lead_client, L4_SCRAPE, L4_SCRAPE.name, format="dcgm")
    assert "needs its scrape time" in missing.context["form"].errors["scraped_at"][0]
    too_early = _upload(
        lead_client, L4_SCRAPE, L4_SCRAPE.name, format="dcgm", scraped_at="1970-01-01T00:00"
    )
    assert too_early.context["form"].errors["scraped_at"] == [
        "Scrape time 1970-01-01 00:00 UTC is before 2000-01-01: the node's clock was not set; "
        "enter when the scrape was really taken."
    ]
    garbled = _upload(lead_client, L4_SCRAPE, L4_SCRAPE.name, format="dcgm", scraped_at="yesterday")
    assert "“yesterday” is not a date and time" in garbled.context["form"].errors["scraped_at"][0]
    # Other formats carry their own timestamps: the field is not needed there.
    other = _upload(lead_client, H100_WHOLE, H100_WHOLE.name, format="nvidia-smi")
    assert other.status_code == 302
    assert ImportRun.objects.get().scraped_at is None


@pytest.mark.django_db
def test_the_scrape_time_is_read_in_the_forms_time_zone(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload(
            lead_client,
            T4_SCRAPE,
            T4_SCRAPE.name,
            format="dcgm",
            pool=pool.pk,
            time_zone="Asia/Shanghai",
            scraped_at="2026-11-30T18:15:30",
        )
    assert response.status_code == 302
    run = ImportRun.objects.get()
    # 18:15:30 in Shanghai (UTC+8) is 10:15:30 UTC.
    expected = datetime(2026, 11, 30, 10, 15, 30, tzinfo=UTC)
    assert run.status == "succeeded", run.message
    assert run.scraped_at == expected
    assert set(GpuSample.objects.values_list("timestamp", flat=True)) == {expected}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "scrape",
    [
        SCRAPES / "aicr_8xH100_k8s_podlabels_driver580_sampled.prom",
        T4_SCRAPE,
        L4_SCRAPE,
        SCRAPES / "upcloud_L40S_driver595.prom",
        SCRAPES / "vks_vGPU_GRID-A100-40C_driver580.prom",
    ],
    ids=lambda path: path.stem,
)
def test_the_same_dcgm_scrape_uploaded_twice_adds_nothing(
    lead_client, pool, eager_celery, django_capture_on_commit_callbacks, scrape
):
    with django_capture_on_commit_callbacks(execute=True):
        first = _upload(
            lead_client,
            scrape,
            scrape.name,
            format="dcgm",
            pool=pool.pk,
            scraped_at="2026-11-30T10:00",
        )
    assert first.status_code == 302
    run = ImportRun.objects.get()
    assert run.status == "succeeded", run.message
    samples = GpuSample.objects.count()
    assert samples == run.rows_accepted > 0
    # A minute later by the clock on the form, the same bytes: refused, nothing added.
    with django_capture_on_commit_callbacks(execute=True):
        again = _upload(
            lead_client,
            scrape,
            f"copy-{scrape.name}",
            format="dcgm",
            pool=pool.pk,
            scraped_at="2026-11-30T10:01",
        )
    assert again.status_code == 200
    assert (
        again.context["form"]
        .errors["file"][0]
        .startswith(
            f"This file was already imported on {run.created_at:%Y-%m-%d %H:%M} UTC as import "
            f"#{run.pk}: nothing added."
        )
    )
    assert GpuSample.objects.count() == samples and ImportRun.objects.count() == 1
