"""Format detection (apps/telemetry/ingest/parsers/detect.py and each format's detect)
on every real sample in tests/data/, each detected as the format it really is, also with
a byte-order mark and Windows line ends, and on the files that are none of them: what was
seen is said in words."""

from pathlib import Path

import pytest

from apps.telemetry.ingest.formats import FORMAT_LABELS, detect_format
from apps.telemetry.ingest.parsers import parse_azure_llm, parse_dcgm, parse_nvidia_smi_csv
from apps.telemetry.ingest.parsers.detect import DETECTION_HEAD_BYTES, read_head

DATA = Path(__file__).resolve().parent.parent / "data"

# Every file under tests/data/ and the format it is in (None: none that gpufleet imports).
TRUE_FORMATS = {
    **{path: "dcgm" for path in (DATA / "dcgm-exporter").rglob("*.prom")},
    **{path: "nvidia-smi" for path in (DATA / "nvidia-smi").rglob("*.csv")},
    **{path: "azure-llm" for path in (DATA / "traces" / "azure-llm-2023").glob("*.csv")},
    DATA / "traces" / "alibaba-genai-2026" / "pod_gpu_duty_cycle_anon_head5000.csv": "csv",
    **{path: "csv" for path in (DATA / "gpu-specs").glob("*.csv")},
    **{path: None for path in (DATA / "prometheus-api").glob("*.json")},
    DATA / "traces" / "alibaba-genai-2026" / "README_GenTD26.md": None,
    DATA / "SOURCES.md": None,
    # Not telemetry: benchmark results (tests/pilots), ping and mtr output
    # (tests/procurement) and training event logs (tests/training), each read by its own
    # importer; the telemetry upload must not take them for one of its formats.
    **{path: None for path in (DATA / "benchmarks").glob("*.json")},
    **{path: None for path in (DATA / "benchmarks").glob("*.txt")},
    DATA / "benchmarks" / "genai_perf_profile_export_genai_perf_cloudai_ai_dynamo.csv": "csv",
    **{path: None for path in (DATA / "network-rtt").glob("*.txt")},
    **{path: None for path in (DATA / "goodput-measure").glob("*.jsonl")},
    # Cloud bills in FOCUS (tests/bills), read by the bill import: to the telemetry upload
    # a CSV like any other, which asks for its column mapping.
    **{path: "csv" for path in (DATA / "focus").glob("*.csv")},
    DATA / "focus" / "README.md": None,
    # Slurm accounting (sacct --parsable2, tests/slurm), read by the Slurm import: the
    # telemetry upload must not take it for one of its formats.
    **{path: None for path in (DATA / "slurm").glob("*")},
    # A gzipped pg_dump (tests/core/test_squashed_migrations.py): no telemetry.
    DATA / "migrations" / "before-squash.sql.gz": None,
}


def _ids(value) -> str:
    return str(value.relative_to(DATA)) if isinstance(value, Path) else str(value)


def test_every_real_sample_has_an_expected_format():
    """A sample added to tests/data/ must be added above too."""
    files = {path for path in DATA.rglob("*") if path.is_file()}
    assert files == set(TRUE_FORMATS)
    assert sum(1 for kind in TRUE_FORMATS.values() if kind == "dcgm") == 6
    assert sum(1 for kind in TRUE_FORMATS.values() if kind == "nvidia-smi") == 20


@pytest.mark.parametrize(("path", "expected"), sorted(TRUE_FORMATS.items()), ids=_ids)
def test_each_real_sample_is_detected_as_its_true_format(path, expected):
    with path.open("rb") as handle:
        head = read_head(handle)
        assert handle.tell() == 0  # the upload is read again from its start
    assert len(head) <= DETECTION_HEAD_BYTES
    detection = detect_format(head)
    assert detection.format == expected, detection.seen
    # As the upload arrives from Windows: a byte-order mark, CRLF line ends.
    windows = b"\xef\xbb\xbf" + path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    assert detect_format(windows[:DETECTION_HEAD_BYTES]).format == expected


@pytest.mark.parametrize(
    "path", [path for path, kind in TRUE_FORMATS.items() if kind == "nvidia-smi"], ids=_ids
)
def test_nvidia_smi_headers_are_read_whole_and_parse(path):
    """The whole header line fits in the head (up to 7.6 kB, driver 610), so a mapping
    could be checked against it; the parser agrees with the detection."""
    detection = detect_format(read_head(path.open("rb")))
    header = path.read_text(encoding="utf-8-sig").splitlines()[0]
    assert detection.headers == tuple(cell.strip() for cell in header.split(","))
    assert "utilization.gpu [%]" in detection.headers
    assert detection.seen.startswith("nvidia-smi query fields (timestamp, ")
    assert parse_nvidia_smi_csv(path.read_text()).rows


def test_dcgm_is_recognised_without_help_lines_and_by_its_first_metric():
    no_help = DATA / "dcgm-exporter" / "scrapes" / "ericsson_T4_loaded_driver590_nohelp.prom"
    detection = detect_format(no_help.read_bytes())
    assert detection.format == "dcgm"
    assert detection.seen.startswith("dcgm-exporter metrics (DCGM_FI_DEV_SM_CLOCK{")
    with_help = DATA / "dcgm-exporter" / "scrapes" / "kops_aws_L4_driver580.prom"
    assert detect_format(with_help.read_bytes()).seen == (
        "dcgm-exporter metrics (# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).)"
    )
    # dcgm-exporter's 1.x-compatibility names.
    old = b'dcgm_gpu_utilization{gpu="0",uuid="GPU-a"} 40\n'
    assert detect_format(old).format == "dcgm"
    assert parse_dcgm(old.decode(), scraped_at=_some_time()).rows


def test_the_azure_trace_is_detected_and_parses():
    path = DATA / "traces" / "azure-llm-2023" / "AzureLLMInferenceTrace_code.csv"
    detection = detect_format(read_head(path.open("rb")))
    assert (detection.format, detection.label) == ("azure-llm", "Azure LLM inference trace")
    assert parse_azure_llm(path.read_text()).rows


def test_a_generic_csv_keeps_its_headers_for_the_mapping():
    detection = detect_format(
        b"\xef\xbb\xbftime,gpu,host,util\r\n2026-11-01T10:00:00,GPU-a,n,5\r\n"
    )
    assert detection.format == "csv" and detection.label == "generic CSV"
    assert detection.headers == ("time", "gpu", "host", "util")
    assert detection.seen == "a CSV with the headers time, gpu, host, util (4 columns)"


@pytest.mark.parametrize(
    ("content", "seen"),
    [
        (b"", "an empty file"),
        (b"\xef\xbb\xbf", "an empty file"),
        (b"\r\n\r\n  \n", "only blank lines"),
        (b"hello world\n", "a first line “hello world” that is not a CSV header"),
        (b"1,2,3\n4,5,6\n", "a CSV without a header line (its first line holds values: “1,2,3”)"),
        (
            b"2026/01/09 13:40:12.345, NVIDIA H100 80GB HBM3, GPU-a, 100 %\n",
            "nvidia-smi output without its header line (“2026/01/09 13:40:12.345, NVIDIA H100 "
            "80GB HBM3, GPU-a, 100 %”; --format=csv,noheader?)",
        ),
        (
            b"# HELP node_load1 1m load average.\n# TYPE node_load1 gauge\nnode_load1 0.21\n",
            "Prometheus metrics without DCGM_ names, starting “# HELP node_load1 1m load average.”",
        ),
        (b'{"status": "success"}', 'JSON, starting “{"status": "success"}”'),
        (b"<html><body>502</body></html>", "HTML or XML, starting “<html><body>502</body></html>”"),
        (b"\x1f\x8b\x08\x00rest", "a gzip-compressed file (decompress it first)"),
        (b"PK\x03\x04rest", "a ZIP archive (an XLSX workbook? export it as CSV)"),
        (b"time,gpu\x00\n", "binary data (a NUL byte in its first bytes)"),
        (b"time,gpu\n\xff\xfe,1\n", "bytes that are not UTF-8 text (at byte 9)"),
    ],
    ids=[
        "empty",
        "bom-only",
        "blank-lines",
        "one-column",
        "no-header",
        "nvidia-smi-noheader",
        "other-exporter",
        "json",
        "html",
        "gzip",
        "zip",
        "nul",
        "latin-1",
    ],
)
def test_files_of_no_known_format_say_what_they_hold(content, seen):
    detection = detect_format(content)
    assert (detection.format, detection.seen) == (None, seen)
    assert detection.label == "unknown"


def test_a_csv_that_is_neither_dcgm_nor_nvidia_smi_is_a_generic_csv():
    """Dotted names that nvidia-smi does not use, and a lone nvidia-smi-like column, do
    not make a header nvidia-smi's; "timestamp, uuid" with one nvidia-smi field does."""
    for header in (b"timestamp,gpu.uuid,util\n", b"name,price,utilization.gpu\n"):
        assert detect_format(header).format == "csv", header
    assert detect_format(b"timestamp, uuid, utilization.gpu [%]\n").format == "nvidia-smi"
    assert detect_format(b"timestamp, uuid, utilization.gpu\n").format == "nvidia-smi"  # nounits


def test_only_the_head_is_read_and_a_line_cut_there_is_not_taken_whole():
    """A long first line cut at the head's end: its last cell is left out, and the headers
    (which a mapping is checked against) are not claimed."""
    long_header = b"timestamp, uuid, utilization.gpu [%], " + b", ".join(
        b"field.number%d" % index for index in range(3000)
    )
    assert len(long_header) > DETECTION_HEAD_BYTES
    detection = detect_format(long_header[:DETECTION_HEAD_BYTES])
    assert detection.format == "nvidia-smi" and detection.headers == ()
    # A multi-byte character split at the head's end is not an encoding error.
    text = ("time,gpu,ü\n" * 2000).encode()
    cut = text[: text.index("ü".encode()) + 1]
    assert detect_format(cut, whole_file=False).format == "csv"
    assert set(FORMAT_LABELS) == {"dcgm", "nvidia-smi", "csv", "azure-llm"}


def _some_time():
    from datetime import UTC, datetime, timedelta

    return datetime.now(UTC) - timedelta(hours=1)
