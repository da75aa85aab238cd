"""The table of formats (apps/telemetry/ingest/formats.py) is what every channel offers:
each registered format's parser reads a real sample of tests/data/ and its detector
recognises it, and the upload forms, the API and the import commands offer exactly the
formats registered for them."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.urls import reverse

from apps.telemetry.forms import DETECT, GpuImportForm, RequestImportForm
from apps.telemetry.ingest import formats
from apps.telemetry.ingest.parsers import FileLines
from apps.telemetry.ingest.parsers._common import ReadOptions, merge_chunks
from apps.telemetry.ingest.parsers.detect import DETECTION_HEAD_BYTES, read_head
from apps.telemetry.management.commands import import_requests, import_telemetry

DATA = Path(__file__).resolve().parent.parent / "data"
SCRAPED_AT = datetime(2026, 1, 1, tzinfo=UTC)

# A real file of each registered format, and the column mapping it is read through.
SAMPLES = {
    ("gpu", "dcgm"): (DATA / "dcgm-exporter" / "scrapes" / "kops_aws_L4_driver580.prom", None),
    ("gpu", "nvidia-smi"): (
        DATA
        / "nvidia-smi"
        / "query_gpu_csv"
        / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv",
        None,
    ),
    ("gpu", "csv"): (
        DATA / "traces" / "alibaba-genai-2026" / "pod_gpu_duty_cycle_anon_head5000.csv",
        {"timestamp": "timestamp_anon", "device": "container_ip", "utilization_pct": "value"},
    ),
    ("requests", "azure-llm"): (
        DATA / "traces" / "azure-llm-2023" / "AzureLLMInferenceTrace_code.csv",
        None,
    ),
    ("requests", "csv"): (
        DATA / "traces" / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv",
        {
            "timestamp": "TIMESTAMP",
            "input_tokens": "ContextTokens",
            "output_tokens": "GeneratedTokens",
        },
    ),
}


def _ids(each) -> str:
    return f"{each.kind}-{each.name}"


def test_every_registered_format_has_a_sample_here():
    """A format added to the table needs a real sample above."""
    assert {(each.kind, each.name) for each in formats.FORMATS} == set(SAMPLES)


@pytest.mark.parametrize("each", formats.FORMATS, ids=_ids)
def test_each_formats_parser_reads_its_real_sample(each):
    path, columns = SAMPLES[each.kind, each.name]
    options = ReadOptions(columns=columns, scraped_at=SCRAPED_AT)
    result = merge_chunks(each.read(FileLines(path), options))
    assert result.rows, result.errors[:3]
    assert not result.errors, result.errors[:3]
    # Through the import's own entry point, by name, the same rows.
    chunks = formats.chunks(
        each.kind, path.read_text(), format=each.name, columns=columns, scraped_at=SCRAPED_AT
    )
    assert len(merge_chunks(chunks).rows) == len(result.rows)


@pytest.mark.parametrize("each", formats.FORMATS, ids=_ids)
def test_each_formats_detector_recognises_its_real_sample(each):
    path, _columns = SAMPLES[each.kind, each.name]
    with path.open("rb") as handle:
        head = read_head(handle)
    detected = formats.detect_format(head)
    if each.detected_last:
        # The catch-all recognises any CSV with a header no other format claims; its own
        # sample of request CSV is an Azure trace read through a mapping.
        assert detected.format in (each.name, *each.also_reads)
    else:
        assert detected.format == each.name, detected.seen
        assert detected.label == str(each.label)
    assert len(head) <= DETECTION_HEAD_BYTES


def test_detection_asks_the_catch_all_last():
    order = [name for name, _label, _detect in formats._detectors()]
    assert order == ["dcgm", "nvidia-smi", "azure-llm", "csv"]


def _offered(kind: str, channel: str) -> list[str]:
    return list(formats.names_of(kind, channel))


@pytest.mark.django_db
def test_the_upload_forms_offer_exactly_the_registered_formats():
    for form, kind in ((GpuImportForm(), "gpu"), (RequestImportForm(), "requests")):
        choices = [value for value, _label in form.fields["format"].choices]
        assert choices == [DETECT, *_offered(kind, formats.UPLOAD)]
        assert list(form.format_names) == _offered(kind, formats.UPLOAD)


def test_the_api_offers_exactly_the_registered_formats():
    from apps.telemetry.api import GpuIngestSerializer, RequestIngestSerializer

    for serializer, kind in ((GpuIngestSerializer, "gpu"), (RequestIngestSerializer, "requests")):
        assert list(serializer().fields["format"].choices) == _offered(kind, formats.API)


def test_the_import_commands_offer_exactly_the_registered_formats():
    for module, kind in ((import_telemetry, "gpu"), (import_requests, "requests")):
        parser = module.Command().create_parser("manage.py", module.__name__.rsplit(".", 1)[1])
        [action] = [action for action in parser._actions if "--format" in action.option_strings]
        assert list(action.choices) == _offered(kind, formats.COMMAND)


@pytest.mark.django_db
def test_the_upload_page_gives_the_command_line_with_the_registered_formats(client, make_user):
    client.force_login(make_user("lead"))
    for kind, command in (("gpu", "import_telemetry"), ("requests", "import_requests")):
        body = client.get(reverse("telemetry:import_create"), {"kind": kind}).content.decode()
        choices = "{" + ",".join(_offered(kind, formats.COMMAND)) + "}"
        assert f"manage.py {command} PATH" in body
        assert f"--format {choices}" in body


def test_only_dcgm_is_pulled_and_only_the_generic_csvs_need_a_mapping():
    assert _offered("gpu", formats.PULL) == ["dcgm"]
    assert _offered("requests", formats.PULL) == []
    assert [(each.kind, each.name) for each in formats.FORMATS if each.needs_columns] == [
        ("gpu", "csv"),
        ("requests", "csv"),
    ]
    assert [each.name for each in formats.FORMATS if each.needs_scrape_time] == ["dcgm"]


def test_an_unknown_format_is_refused_naming_the_registered_ones():
    with pytest.raises(
        formats.TelemetryFormatError, match=r"expected one of \('dcgm', 'nvidia-smi', 'csv'\)"
    ):
        formats.gpu_chunks("", format="prom")
    with pytest.raises(
        formats.TelemetryFormatError, match=r"expected one of \('azure-llm', 'csv'\)"
    ):
        formats.request_chunks("", format="dcgm")


@pytest.mark.parametrize(
    ("chosen", "detected", "contradicts"),
    [
        ("dcgm", "nvidia-smi", True),
        ("dcgm", "csv", True),
        ("nvidia-smi", "csv", False),
        ("nvidia-smi", "dcgm", True),
        ("csv", "nvidia-smi", False),
        ("csv", "azure-llm", False),
        ("csv", "dcgm", True),
        ("azure-llm", "csv", True),
        ("dcgm", None, False),
        ("dcgm", "dcgm", False),
    ],
)
def test_a_chosen_format_contradicts_a_detected_one_its_parser_cannot_read(
    chosen, detected, contradicts
):
    assert formats.contradicts(chosen, detected) is contradicts
