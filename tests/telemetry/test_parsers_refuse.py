"""Parsers refuse rather than guess: a file holding two formats is refused at the line where
the second begins, a number written with an exponent is refused like any malformed number
(with its line and column), and a header with no data rows is refused with that sentence.
Each refusal reaches the person the same way through the command, the API and the upload."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.telemetry.ingest.parsers import (
    TelemetryFormatError,
    parse_azure_llm,
    parse_dcgm,
    parse_gpu_csv,
    parse_nvidia_smi_csv,
    parse_request_csv,
)
from apps.telemetry.models import GpuSample, ImportRun, RequestSample
from tests.telemetry.helpers import import_csv_command

DATA = Path(__file__).resolve().parent.parent / "data"
SCRAPE = DATA / "dcgm-exporter" / "scrapes" / "kops_aws_L4_driver580.prom"
NVIDIA_SMI = (
    DATA
    / "nvidia-smi"
    / "query_gpu_csv"
    / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv"
)
SCRAPED_AT = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 11, 2, tzinfo=UTC)
GPU_COLUMNS = {"timestamp": "time", "device": "gpu", "utilization_pct": "util"}
REQUEST_COLUMNS = {"timestamp": "ts", "input_tokens": "in", "output_tokens": "out"}
NO_DATA_ROWS = "the file has a header but no data rows: nothing to import"


def _scrape_then_nvidia_smi() -> tuple[str, int]:
    """A dcgm scrape with an nvidia-smi CSV appended, and the line the CSV begins on."""
    scrape = SCRAPE.read_text()
    assert scrape.endswith("\n")
    return scrape + NVIDIA_SMI.read_text(), scrape.count("\n") + 1


# Two formats in one file


def test_an_nvidia_smi_csv_appended_to_a_scrape_is_refused_where_it_begins():
    text, csv_line = _scrape_then_nvidia_smi()
    with pytest.raises(TelemetryFormatError) as refused:
        parse_dcgm(text, scraped_at=SCRAPED_AT)
    message = str(refused.value)
    assert message.startswith(f"line {csv_line}: “timestamp, driver_version")
    assert "is not Prometheus text: this file holds a dcgm-exporter scrape and another format" in (
        message
    )


def test_a_scrape_after_another_format_is_refused_at_that_formats_first_line():
    text = "time,gpu,util\n2026-11-01T10:00:00Z,GPU-a,50\n" + SCRAPE.read_text()
    with pytest.raises(TelemetryFormatError, match=r"^line 1: “time,gpu,util” is not Prometheus"):
        parse_dcgm(text, scraped_at=SCRAPED_AT)


def test_unlabelled_metrics_of_other_exporters_are_still_ignored():
    scrape = SCRAPE.read_text()
    extra = (
        "# TYPE go_goroutines gauge\ngo_goroutines 12\n"
        "process_start_time_seconds 1.7e9 1700000000000\r\n"
    )
    alone = parse_dcgm(scrape, scraped_at=SCRAPED_AT)
    mixed = parse_dcgm(extra + scrape, scraped_at=SCRAPED_AT)
    assert len(mixed.rows) == len(alone.rows) and not mixed.errors


def test_text_that_is_no_scrape_at_all_is_still_said_to_hold_no_dcgm_metrics():
    with pytest.raises(TelemetryFormatError, match="no dcgm-exporter GPU metrics found"):
        parse_dcgm(NVIDIA_SMI.read_text(), scraped_at=SCRAPED_AT)


# Exponents are never read as numbers


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("2026-11-01T10:00:00Z,GPU-a,5e1", "line 2: utilization_pct '5e1' is not a number"),
        ("2026-11-01T10:00:00Z,GPU-a,1E1", "line 2: utilization_pct '1E1' is not a number"),
        ("1.7e9,GPU-a,50", "line 2: timestamp '1.7e9' is neither ISO 8601 nor unix seconds"),
    ],
)
def test_a_generic_gpu_csv_refuses_exponents_with_line_and_column(line, message):
    result = parse_gpu_csv(f"time,gpu,util\n{line}\n", columns=GPU_COLUMNS, now=NOW)
    assert [str(error.message) for error in result.errors] == [message]
    assert result.rows == []


def test_a_generic_csvs_optional_columns_refuse_exponents_too():
    result = parse_gpu_csv(
        "time,gpu,util,mem\n2026-11-01T10:00:00Z,GPU-a,50,1E3\n",
        columns={**GPU_COLUMNS, "memory_used_mib": "mem"},
        now=NOW,
    )
    assert [str(error.message) for error in result.errors] == [
        "line 2: memory_used_mib '1E3' is not a number"
    ]


def test_a_generic_request_csv_refuses_exponents_in_counts_and_latencies():
    text = "ts,in,out,lat\n2026-11-01T10:00:00Z,6.3e1,10,5\n2026-11-01T10:00:01Z,63,10,1e2\n"
    result = parse_request_csv(text, columns={**REQUEST_COLUMNS, "latency_ms": "lat"}, now=NOW)
    assert [str(error.message) for error in result.errors] == [
        "line 2: input_tokens '6.3e1' is not a number",
        "line 3: latency_ms '1e2' is not a number",
    ]


def test_nvidia_smi_refuses_an_exponent_in_a_reading():
    lines = NVIDIA_SMI.read_text().splitlines()
    header = [cell.strip() for cell in lines[0].split(",")]
    cells = lines[1].split(", ")
    cells[header.index("utilization.gpu [%]")] = "5e1 %"
    result = parse_nvidia_smi_csv("\n".join([lines[0], ", ".join(cells)]) + "\n", now=NOW)
    assert [str(error.message) for error in result.errors] == [
        "line 2: utilization.gpu '5e1 %' is not a number"
    ]


def test_plain_numbers_and_missing_values_are_read_as_before():
    text = "time,gpu,util\n2026-11-01T10:00:00Z,GPU-a,50.5\n2026-11-01T10:00:00Z,GPU-b,N/A\n"
    result = parse_gpu_csv(text, columns=GPU_COLUMNS, now=NOW)
    assert [row.utilization_pct for row in result.rows] == [50.5, None] and not result.errors


# A header without data rows


@pytest.mark.parametrize(
    "parse",
    [
        lambda: parse_gpu_csv("time,gpu,util\n", columns=GPU_COLUMNS),
        lambda: parse_gpu_csv("time,gpu,util\n\n\n", columns=GPU_COLUMNS),
        lambda: parse_request_csv("ts,in,out\r\n", columns=REQUEST_COLUMNS),
        lambda: parse_nvidia_smi_csv(NVIDIA_SMI.read_text().splitlines()[0] + "\n"),
        lambda: parse_azure_llm("TIMESTAMP,ContextTokens,GeneratedTokens\r\n"),
        lambda: parse_azure_llm("TIMESTAMP,ContextTokens,GeneratedTokens"),
    ],
    ids=["gpu-csv", "gpu-csv-blank-lines", "request-csv", "nvidia-smi", "azure", "azure-no-end"],
)
def test_a_header_without_data_rows_is_refused_with_that_sentence(parse):
    with pytest.raises(TelemetryFormatError, match=f"^{NO_DATA_ROWS}$"):
        parse()


def test_a_header_whose_rows_are_all_bad_is_a_file_of_bad_rows_not_an_empty_one():
    result = parse_gpu_csv("time,gpu,util\nnot a time,GPU-a,50\n", columns=GPU_COLUMNS)
    assert len(result.errors) == 1 and result.rows == []


# Every channel says so


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def bearer(make_user):
    from datetime import timedelta

    from apps.accounts.models import ApiToken

    _, plaintext = ApiToken.issue(
        user=make_user("ops"), description="agent", lifetime=timedelta(days=1), read_only=False
    )
    return {"Authorization": f"Bearer {plaintext}"}


HEADER_ONLY = "time,gpu,util\n"
WITH_EXPONENT = "time,gpu,util\n2026-11-01T10:00:00Z,GPU-a,5e1\n"


@pytest.mark.django_db
def test_the_command_says_each_refusal(pool, tmp_path):
    header_only = tmp_path / "header.csv"
    header_only.write_text(HEADER_ONLY)
    with pytest.raises(CommandError, match=NO_DATA_ROWS):
        import_csv_command(header_only, pool)
    exponent = tmp_path / "exponent.csv"
    exponent.write_text(WITH_EXPONENT)
    with pytest.raises(CommandError, match="line 2: utilization_pct '5e1' is not a number"):
        import_csv_command(exponent, pool)
    mixed = tmp_path / "mixed.prom"
    text, csv_line = _scrape_then_nvidia_smi()
    mixed.write_text(text)
    with pytest.raises(CommandError, match=f"line {csv_line}: “timestamp, driver_version"):
        call_command(
            "import_telemetry", str(mixed), "--format", "dcgm", "--scraped-at", "2026-01-01T00:00Z"
        )
    assert GpuSample.objects.count() == 0
    assert list(ImportRun.objects.values_list("status", flat=True)) == ["rejected"] * 3


@pytest.mark.django_db
def test_the_api_says_each_refusal(client, bearer, pool, workload):
    def post(kind, body):
        return client.post(
            f"/api/v1/telemetry/{kind}/", body, content_type="application/json", headers=bearer
        )

    response = post(
        "gpu", {"format": "csv", "pool": pool.slug, "text": HEADER_ONLY, "columns": GPU_COLUMNS}
    )
    assert response.status_code == 400, response.content
    assert response.json() == {"text": [NO_DATA_ROWS]}
    response = post(
        "requests",
        {
            "format": "azure-llm",
            "workload": workload.slug,
            "text": "TIMESTAMP,ContextTokens,GeneratedTokens\n",
        },
    )
    assert response.status_code == 400 and response.json() == {"text": [NO_DATA_ROWS]}
    text, csv_line = _scrape_then_nvidia_smi()
    response = post(
        "gpu",
        {"format": "dcgm", "pool": pool.slug, "text": text, "scraped_at": "2026-01-01T00:00:00Z"},
    )
    assert response.status_code == 400
    [message] = response.json()["text"]
    assert message.startswith(f"line {csv_line}: “timestamp, driver_version")
    response = post(
        "gpu", {"format": "csv", "pool": pool.slug, "text": WITH_EXPONENT, "columns": GPU_COLUMNS}
    )
    assert response.json()["status"] == "rejected", response.content
    assert response.json()["errors"] == [
        {"line": 2, "message": "line 2: utilization_pct '5e1' is not a number"}
    ]
    assert GpuSample.objects.count() == RequestSample.objects.count() == 0


@pytest.mark.django_db
def test_the_upload_says_each_refusal(
    client, make_user, pool, django_capture_on_commit_callbacks, eager_celery
):
    client.force_login(make_user("lead"))
    text, csv_line = _scrape_then_nvidia_smi()
    cases = [
        (HEADER_ONLY, "csv", NO_DATA_ROWS),
        (WITH_EXPONENT, "csv", "line 2: utilization_pct &#x27;5e1&#x27; is not a number"),
        (text, "dcgm", f"line {csv_line}: “timestamp, driver_version"),
    ]
    for number, (content, format, said) in enumerate(cases):
        data = {
            "kind": "gpu",
            "time_zone": "UTC",
            "format": format,
            "pool": pool.pk,
            "columns": "timestamp=time,device=gpu,utilization_pct=util" if format == "csv" else "",
            "scraped_at": "2026-01-01T00:00" if format == "dcgm" else "",
            "file": SimpleUploadedFile(f"file{number}.txt", content.encode()),
        }
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(reverse("telemetry:import_create"), data)
        assert response.status_code == 302, response.content.decode()[:3000]
        run = ImportRun.objects.latest("pk")
        assert run.status == ImportRun.Status.REJECTED, run.message
        page = client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk}))
        assert said in page.content.decode(), run.message
    assert GpuSample.objects.count() == 0
