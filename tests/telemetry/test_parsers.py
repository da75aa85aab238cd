"""Telemetry parsers against the real sample files in tests/data (no database).

Expected values are read off the files by hand (the comment names the line) or counted from
the raw text by a separate, simpler method, never taken from the parser under test.
Scrape features that no real sample carries (MIG labels, the "not supported" placeholder,
old label names, escapes) are exercised with small synthetic scrapes shaped like
dcgm-exporter's output; they are marked as synthetic where they appear.
"""

import dataclasses
import gc
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from apps.telemetry.ingest.parsers import (
    DeviceKey,
    GpuSampleRow,
    RequestRow,
    TelemetryFormatError,
    has_any_metric,
    parse_azure_llm,
    parse_dcgm,
    parse_gpu_csv,
    parse_nvidia_smi_csv,
    parse_request_csv,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = REPO_ROOT / "tests" / "data"
SCRAPES = sorted((DATA / "dcgm-exporter" / "scrapes").glob("*.prom"))
NVIDIA_SMI_CSVS = sorted((DATA / "nvidia-smi" / "query_gpu_csv").glob("*.csv"))
AZURE_TRACES = sorted((DATA / "traces" / "azure-llm-2023").glob("*.csv"))
ALIBABA_SLICE = DATA / "traces" / "alibaba-genai-2026" / "pod_gpu_duty_cycle_anon_head5000.csv"
ALIBABA_MAPPING = {
    "timestamp": "timestamp_anon",
    "device": "container_ip",
    "utilization_pct": "value",
}

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SCRAPED_AT = datetime(2026, 11, 29, 11, 59, 45, tzinfo=UTC)
MASKED_UUID = "GPU-00000000-0000-0000-0000-000000000000"  # nvidia_gpu_exporter masks UUIDs


def read(path: Path) -> str:
    """The file's text with its line ends as they are (CRLF stays CRLF)."""
    with path.open(encoding="utf-8", newline="") as text_file:
        return text_file.read()


def scrape(name: str) -> str:
    return read(DATA / "dcgm-exporter" / "scrapes" / name)


def dcgm(text: str, **kwargs):
    kwargs.setdefault("scraped_at", SCRAPED_AT)
    kwargs.setdefault("now", NOW)
    return parse_dcgm(text, **kwargs)


def by_uuid(rows) -> dict[str, GpuSampleRow]:
    return {row.device.uuid: row for row in rows}


def only_row(result) -> GpuSampleRow:
    assert result.errors == []
    assert len(result.rows) == 1
    return result.rows[0]


def distinct_devices(text: str) -> set[tuple[str, str]]:
    """(UUID, GPU_I_ID) pairs of the metric lines, counted by regex over the raw text."""
    devices = set()
    for line in text.splitlines():
        if line.startswith("#") or "{" not in line:
            continue
        uuid = re.search(r'\b(?:UUID|uuid)="([^"]*)"', line)
        instance = re.search(r'\bGPU_I_ID="([^"]*)"', line)
        devices.add((uuid.group(1), instance.group(1) if instance else ""))
    return devices


# --- dcgm-exporter: the real scrapes -------------------------------------------------------


@pytest.mark.parametrize("path", SCRAPES, ids=lambda path: path.stem)
def test_every_scrape_parses_into_one_row_per_gpu(path):
    text = read(path)
    result = dcgm(text)

    assert result.errors == []
    assert len(result.rows) == len(distinct_devices(text))
    assert {row.device for row in result.rows} == {
        DeviceKey(uuid, int(instance) if instance else None)
        for uuid, instance in distinct_devices(text)
    }
    for row in result.rows:
        assert row.timestamp == SCRAPED_AT
        assert row.hostname and row.model_name and row.driver_version
        assert row.utilization_pct is not None


def test_scrape_gpu_count_of_the_8xh100_node():
    rows = dcgm(scrape("aicr_8xH100_k8s_podlabels_driver580_sampled.prom")).rows
    assert len(rows) == 8
    assert sorted(row.gpu_index for row in rows) == list(range(8))


def test_scrape_values_8xh100_with_pod_labels():
    rows = by_uuid(dcgm(scrape("aicr_8xH100_k8s_podlabels_driver580_sampled.prom")).rows)
    gpu0 = rows["GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005"]
    # line 1: DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-c4529c8d-…",…,container="main",
    #         namespace="dynamo-workload",pod="vllm-agg-0-vllmdecodeworker-s65j5",pod_uid=""} 30
    assert gpu0.line_number == 1
    assert gpu0.temperature_c == 30.0
    assert (gpu0.pod, gpu0.namespace, gpu0.container) == (
        "vllm-agg-0-vllmdecodeworker-s65j5",
        "dynamo-workload",
        "main",
    )
    # line 9: DCGM_FI_DEV_POWER_USAGE{gpu="0",…} 113.611000 → 113.611
    assert gpu0.power_w == pytest.approx(113.611)
    assert gpu0.hostname == "gpu-node-1"
    assert gpu0.model_name == "NVIDIA H100 80GB HBM3"
    assert gpu0.driver_version == "580.105.08"
    # line 20: DCGM_FI_DEV_GPU_UTIL{gpu="3",UUID="GPU-a65a773d-…",…} 0 → 0.0 (no PROF metric)
    gpu3 = rows["GPU-a65a773d-52bb-bcc1-a8ee-f78c3faa2e2d"]
    assert gpu3.utilization_pct == 0.0
    assert (gpu3.pod, gpu3.namespace, gpu3.container) == ("", "", "")
    # line 6: DCGM_FI_DEV_GPU_TEMP{gpu="5",…} 26
    assert rows["GPU-39e28159-8c62-ee71-64db-b748edd61e15"].temperature_c == 26.0
    # this sampled scrape has no framebuffer or energy lines at all
    assert gpu0.memory_used_mib is None and gpu0.energy_mj is None


def test_scrape_values_t4_without_help_lines():
    row = only_row(dcgm(scrape("ericsson_T4_loaded_driver590_nohelp.prom")))
    assert row.line_number == 3  # line 3: DCGM_FI_DEV_MEMORY_TEMP{…} 0, the first stored metric
    assert row.device == DeviceKey("GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469a")
    assert (row.hostname, row.model_name, row.gpu_index) == ("cp-bm14r7", "Tesla T4", 0)
    # line 16: DCGM_FI_PROF_GR_ENGINE_ACTIVE{…} 0.156205 → 15.6205, preferred over
    # line 8: DCGM_FI_DEV_GPU_UTIL{…} 91
    assert row.utilization_pct == pytest.approx(15.6205)
    assert row.memory_used_mib == 5120.0  # line 13: DCGM_FI_DEV_FB_USED{…} 5120
    assert row.memory_free_mib == 9791.0  # line 12: DCGM_FI_DEV_FB_FREE{…} 9791
    assert row.memory_reserved_mib == 447.0  # line 14: DCGM_FI_DEV_FB_RESERVED{…} 447
    assert row.power_w == pytest.approx(68.244)  # line 5: …POWER_USAGE{…} 68.244000
    assert row.energy_mj == 15152422938.0  # line 6: …TOTAL_ENERGY_CONSUMPTION{…} 15152422938
    assert row.temperature_c == 74.0  # line 4: DCGM_FI_DEV_GPU_TEMP{…} 74
    assert row.memory_temperature_c == 0.0


def test_scrape_values_l4_and_l40s():
    l4 = only_row(dcgm(scrape("kops_aws_L4_driver580.prom")))
    assert l4.hostname == "i-030791dc5a37cd257"
    assert l4.memory_free_mib == 22563.0  # line 36: DCGM_FI_DEV_FB_FREE{…} 22563
    assert l4.energy_mj == 4742776.0  # line 18: …TOTAL_ENERGY_CONSUMPTION{…} 4742776
    assert l4.power_w == pytest.approx(16.365)  # line 15: …POWER_USAGE{…} 16.365000
    assert l4.utilization_pct == 0.0  # line 57: …GR_ENGINE_ACTIVE{…} 0.000000

    l40s = only_row(dcgm(scrape("upcloud_L40S_driver595.prom")))
    assert l40s.driver_version == "595.58.03"
    assert l40s.memory_reserved_mib == 608.0  # line 42: DCGM_FI_DEV_FB_RESERVED{…} 608
    assert l40s.energy_mj == 5551899580.0  # line 18: …TOTAL_ENERGY_CONSUMPTION{…} 5551899580
    assert l40s.temperature_c == 32.0  # line 12: DCGM_FI_DEV_GPU_TEMP{…} 32


def test_scrape_vgpu_has_only_some_metrics():
    row = only_row(dcgm(scrape("vks_vGPU_GRID-A100-40C_driver580.prom")))
    assert row.model_name == "GRID A100-40C"
    assert row.utilization_pct == 0.0  # line 12: DCGM_FI_DEV_GPU_UTIL{…} 0
    assert row.memory_reserved_mib == 3220.0  # line 30: DCGM_FI_DEV_FB_RESERVED{…} 3220
    # a vGPU reports no power, energy or GPU temperature
    assert (row.power_w, row.energy_mj, row.temperature_c) == (None, None, None)


def test_scrape_with_and_without_help_lines_gives_the_same_rows():
    text = scrape("kops_aws_L4_driver580.prom")
    without_help = "\n".join(line for line in text.split("\n") if not line.startswith("#"))
    with_help_row = only_row(dcgm(text))
    without_help_row = only_row(dcgm(without_help))
    assert (with_help_row.line_number, without_help_row.line_number) == (9, 3)
    assert dataclasses.replace(without_help_row, line_number=9) == with_help_row


def test_scrape_with_crlf_line_ends_parses_the_same():
    text = scrape("upcloud_L40S_driver595.prom")
    assert dcgm(text.replace("\n", "\r\n")).rows == dcgm(text).rows


@pytest.mark.parametrize("path", SCRAPES, ids=lambda path: path.stem)
def test_scrape_values_match_prometheus_client(path):
    """Cross-check: every stored metric as prometheus_client's own parser reads it."""
    prometheus_parser = pytest.importorskip("prometheus_client.parser")
    text = read(path)
    rows = {row.device: row for row in dcgm(text).rows}
    field_of = {
        "DCGM_FI_DEV_FB_USED": "memory_used_mib",
        "DCGM_FI_DEV_FB_FREE": "memory_free_mib",
        "DCGM_FI_DEV_FB_RESERVED": "memory_reserved_mib",
        "DCGM_FI_DEV_POWER_USAGE": "power_w",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "energy_mj",
        "DCGM_FI_DEV_GPU_TEMP": "temperature_c",
        "DCGM_FI_DEV_MEMORY_TEMP": "memory_temperature_c",
    }
    checked = 0
    for family in prometheus_parser.text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            row = rows[DeviceKey(labels["UUID"])]
            assert row.hostname == labels["Hostname"]
            assert row.gpu_index == int(labels["gpu"])
            assert row.pod == labels.get("pod", "")
            if sample.name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
                assert row.utilization_pct == pytest.approx(sample.value * 100)
            elif sample.name == "DCGM_FI_DEV_GPU_UTIL":
                if "DCGM_FI_PROF_GR_ENGINE_ACTIVE" not in text:
                    assert row.utilization_pct == sample.value
            elif sample.name in field_of:
                assert getattr(row, field_of[sample.name]) == sample.value
            else:
                continue
            checked += 1
    assert checked >= len(rows) * 3


# --- dcgm-exporter: features no real sample carries (synthetic scrapes) --------------------

# Synthetic, shaped like dcgm-exporter's MIG output: GPU_I_PROFILE/GPU_I_ID after modelName,
# per-slice PROF and FB metrics, no DCGM_FI_DEV_GPU_UTIL per slice, newest `hostname` label.
GPU_LABELS = 'gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3"'
SLICE_1 = f'{GPU_LABELS},GPU_I_PROFILE="3g.40gb",GPU_I_ID="1",hostname="mig-node"'
SLICE_9 = f'{GPU_LABELS},GPU_I_PROFILE="1g.10gb",GPU_I_ID="9",hostname="mig-node"'
SLICE_13 = f'{GPU_LABELS},GPU_I_PROFILE="1g.20gb",GPU_I_ID="13",hostname="mig-node"'
WHOLE_GPU = f'{GPU_LABELS},hostname="mig-node"'
MIG_SCRAPE = f"""\
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{{{WHOLE_GPU}}} 41
DCGM_FI_DEV_GPU_UTIL{{{WHOLE_GPU}}} 9223372036854775794
DCGM_FI_DEV_FB_USED{{{SLICE_1}}} 20480
DCGM_FI_DEV_FB_USED{{{SLICE_9}}} 512
DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{SLICE_1}}} 0.81
DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{SLICE_9}}} 140737488355330
DCGM_FI_DEV_POWER_USAGE{{{SLICE_13}}} 9223372036854775794
"""


def test_mig_slices_have_instance_ids_and_no_gpu_util():
    result = dcgm(MIG_SCRAPE)
    assert result.errors == []
    rows = {row.device: row for row in result.rows}
    assert set(rows) == {
        DeviceKey("GPU-aaaa"),
        DeviceKey("GPU-aaaa", 1),
        DeviceKey("GPU-aaaa", 9),
        DeviceKey("GPU-aaaa", 13),
    }
    whole_gpu = rows[DeviceKey("GPU-aaaa")]
    assert whole_gpu.mig_profile == "" and whole_gpu.hostname == "mig-node"
    # line 4: GPU_UTIL is the "not supported" placeholder → missing, not an error
    assert whole_gpu.utilization_pct is None and whole_gpu.temperature_c == 41.0

    slice_1 = rows[DeviceKey("GPU-aaaa", 1)]
    assert (slice_1.mig_profile, slice_1.line_number) == ("3g.40gb", 5)
    assert slice_1.utilization_pct == pytest.approx(81.0)  # line 7: …GR_ENGINE_ACTIVE 0.81
    assert slice_1.memory_used_mib == 20480.0

    # line 8: GR_ENGINE_ACTIVE is DCGM_FP64_NOT_SUPPORTED (2^47 + 2) → no utilization
    slice_9 = rows[DeviceKey("GPU-aaaa", 9)]
    assert slice_9.utilization_pct is None and slice_9.memory_used_mib == 512.0
    assert has_any_metric(slice_9)

    # line 9: a slice whose only reading is the placeholder is still returned, and detectable
    slice_13 = rows[DeviceKey("GPU-aaaa", 13)]
    assert slice_13.power_w is None and not has_any_metric(slice_13)


# Synthetic, in dcgm-exporter 1.x style: old metric names with uuid/pod_name/pod_namespace/
# container_name labels, lowercase hostname; label values with escapes, a "}" and a ",".
OLD_LABELS = (
    'gpu="1",uuid="GPU-bbbb",pod_name="train-0",pod_namespace="ml",container_name="main",'
    'hostname="old-node"'
)
ESCAPED_LABELS = r'gpu="2",UUID="GPU-cccc",Hostname="esc",pod="a\"b\\c\nd",namespace="x}y,z"'
OLD_STYLE_SCRAPE = f"""
dcgm_gpu_utilization{{{OLD_LABELS}}} 87
dcgm_fb_used{{{OLD_LABELS}}} 1024
dcgm_power_usage{{{OLD_LABELS}}} 250.5
DCGM_FI_DEV_GPU_UTIL{{{ESCAPED_LABELS},container=""}} 12
"""


def test_old_label_names_and_escaped_label_values():
    result = dcgm(OLD_STYLE_SCRAPE)
    assert result.errors == []
    rows = by_uuid(result.rows)
    old = rows["GPU-bbbb"]
    # line 2: dcgm_gpu_utilization{gpu="1",uuid="GPU-bbbb",…} 87 → 87.0
    assert (old.utilization_pct, old.memory_used_mib, old.power_w) == (87.0, 1024.0, 250.5)
    assert (old.pod, old.namespace, old.container, old.hostname) == (
        "train-0",
        "ml",
        "main",
        "old-node",
    )
    assert old.gpu_index == 1
    escaped = rows["GPU-cccc"]
    assert escaped.pod == 'a"b\\c\nd'
    assert escaped.namespace == "x}y,z"
    assert escaped.utilization_pct == 12.0


def test_line_timestamps_override_scraped_at_and_split_samples():
    labels = '{gpu="0",UUID="GPU-dddd",Hostname="h"}'
    first_ms, second_ms = 1_764_400_000_000, 1_764_400_015_000
    text = (
        f"DCGM_FI_DEV_GPU_UTIL{labels} 10 {first_ms}\n"
        f"DCGM_FI_DEV_FB_USED{labels} 100 {first_ms}\n"
        f"DCGM_FI_DEV_GPU_UTIL{labels} 20 {second_ms}\n"
        f"DCGM_FI_DEV_FB_USED{labels} 200\n"
    )
    rows = dcgm(text).rows
    assert [(row.timestamp, row.utilization_pct, row.memory_used_mib) for row in rows] == [
        (datetime(2025, 11, 29, 7, 6, 40, tzinfo=UTC), 10.0, 100.0),
        (datetime(2025, 11, 29, 7, 6, 55, tzinfo=UTC), 20.0, None),
        (SCRAPED_AT, None, 200.0),
    ]
    assert [row.line_number for row in rows] == [1, 3, 4]


def test_dcgm_utilization_out_of_range_is_a_row_error():
    text = scrape("ericsson_T4_loaded_driver590_nohelp.prom").replace("} 91\n", "} 140\n")
    result = dcgm(text)
    assert result.rows == []
    [error] = result.errors
    assert error.line_number == 8
    assert error.message == "line 8: DCGM_FI_DEV_GPU_UTIL '140' is outside 0–100"


def test_dcgm_unparseable_value_is_a_row_error():
    text = scrape("ericsson_T4_loaded_driver590_nohelp.prom").replace("} 5120\n", "} abc\n")
    result = dcgm(text)
    assert result.rows == []
    assert [error.message for error in result.errors] == [
        "line 13: DCGM_FI_DEV_FB_USED 'abc' is not a number"
    ]


def test_dcgm_only_the_bad_gpu_is_rejected():
    text = scrape("aicr_8xH100_k8s_podlabels_driver580_sampled.prom")
    lines = text.split("\n")
    lines[19] = lines[19].rsplit(" ", 1)[0] + " 1e9"  # line 20: GPU_UTIL of gpu="3"
    result = dcgm("\n".join(lines))
    assert [error.line_number for error in result.errors] == [20]
    assert "outside 0–100" in result.errors[0].message
    assert len(result.rows) == 7
    assert "GPU-a65a773d-52bb-bcc1-a8ee-f78c3faa2e2d" not in by_uuid(result.rows)


def test_dcgm_timestamp_a_week_ahead_is_a_row_error():
    result = dcgm(scrape("kops_aws_L4_driver580.prom"), scraped_at=NOW + timedelta(days=7))
    assert result.rows == []
    [error] = result.errors
    assert error.line_number == 9
    assert error.message.startswith("line 9: timestamp 2026-12-06T12:00:00+00:00 is more than")
    assert "1 day in the future" in error.message


def test_dcgm_line_timestamp_in_seconds_is_a_row_error():
    text = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-eeee"} 5 1764400000\n'
    [error] = dcgm(text).errors
    assert error.message == (
        "line 1: DCGM_FI_DEV_GPU_UTIL timestamp '1764400000' is before 2000: "
        "seconds instead of milliseconds?"
    )


def test_dcgm_metric_without_uuid_and_contradicting_duplicates_are_row_errors():
    text = (
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 5\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-ffff",pod="p1"} 5\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-ffff",pod="p2"} 5\n'
        'DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-ffff",pod="p1"} 10\n'
        'DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-ffff",pod="p2"} 11\n'
    )
    result = dcgm(text)
    assert result.rows == []
    assert [error.message for error in result.errors] == [
        "line 1: DCGM_FI_DEV_GPU_UTIL has no UUID label (nor the old uuid), so the GPU "
        "cannot be identified",
        "line 5: DCGM_FI_DEV_FB_USED '11' contradicts 10 reported for the same GPU and time "
        "from line 2 on",
    ]


@pytest.mark.parametrize(
    "text",
    ["", "   \n", NVIDIA_SMI_CSVS[0].read_text(), '{"status": "success", "data": {}}'],
    ids=["empty", "blank", "nvidia-smi-csv", "json"],
)
def test_dcgm_refuses_text_that_is_no_scrape(text):
    with pytest.raises(TelemetryFormatError, match="empty|no dcgm-exporter GPU metrics"):
        dcgm(text)


def test_dcgm_requires_timezone_aware_times():
    with pytest.raises(ValueError, match="scraped_at must be a timezone-aware"):
        parse_dcgm(scrape("kops_aws_L4_driver580.prom"), scraped_at=datetime(2026, 1, 1))


# --- nvidia-smi --query-gpu CSV -------------------------------------------------------------


@pytest.mark.parametrize("path", NVIDIA_SMI_CSVS, ids=lambda path: path.stem)
def test_every_nvidia_smi_capture_parses(path):
    text = read(path)
    data_lines = [line for line in text.splitlines()[1:] if line.strip()]
    result = parse_nvidia_smi_csv(text, now=NOW)

    assert result.errors == []
    assert len(result.rows) == len(data_lines) == 1
    row = result.rows[0]
    cells = dict(zip(text.splitlines()[0].split(", "), data_lines[0].split(", "), strict=True))
    assert row.device == DeviceKey(MASKED_UUID)
    assert row.timestamp == datetime.strptime(cells["timestamp"], "%Y/%m/%d %H:%M:%S.%f").replace(
        tzinfo=UTC
    )
    # units stripped: "8 %" → 8.0, "819 MiB" → 819.0, "111.50 W" → 111.5
    utilization = cells["utilization.gpu [%]"]
    if utilization == "[N/A]":
        assert row.utilization_pct is None
    else:
        assert row.utilization_pct == float(utilization.removesuffix(" %"))
    assert row.memory_used_mib == float(cells["memory.used [MiB]"].removesuffix(" MiB"))
    assert row.power_w == float(cells["power.draw [W]"].removesuffix(" W"))
    assert row.model_name == cells["name"] and row.driver_version == cells["driver_version"]
    assert row.hostname == ""  # the hostname column is "[N/A]" in every capture


def test_nvidia_smi_h100_under_load_values():
    path = (
        DATA / "nvidia-smi/query_gpu_csv/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv"
    )
    row = only_row(parse_nvidia_smi_csv(read(path), now=NOW))
    # line 2: 2026/07/14 08:12:53.353, 590.48.01, …, NVIDIA H100 80GB HBM3, …, 100 %, …,
    #         19818 MiB (used), 61263 MiB (free), 479 MiB (reserved), 631.95 W, 59 (°C), 54
    assert row.line_number == 2
    assert row.timestamp == datetime(2026, 7, 14, 8, 12, 53, 353000, tzinfo=UTC)
    assert (row.model_name, row.driver_version, row.gpu_index) == (
        "NVIDIA H100 80GB HBM3",
        "590.48.01",
        0,
    )
    assert row.utilization_pct == 100.0
    assert (row.memory_used_mib, row.memory_free_mib, row.memory_reserved_mib) == (
        19818.0,
        61263.0,
        479.0,
    )
    assert row.power_w == 631.95
    assert (row.temperature_c, row.memory_temperature_c) == (59.0, 54.0)


def test_nvidia_smi_mig_utilization_is_missing():
    path = DATA / "nvidia-smi/query_gpu_csv/linux-x86_64__nvidia-h100-mig__590.48.01__load.csv"
    row = only_row(parse_nvidia_smi_csv(read(path), now=NOW))
    # utilization.gpu [%] is "[N/A]" under MIG; memory.used "11125 MiB", power.draw "433.78 W"
    assert row.utilization_pct is None
    assert row.device.gpu_instance_id is None
    assert (row.memory_used_mib, row.power_w) == (11125.0, 433.78)
    assert has_any_metric(row)


def test_nvidia_smi_windows_and_geforce_quirks():
    path = (
        DATA
        / "nvidia-smi/query_gpu_csv/windows-x86_64__nvidia-geforce-rtx-2080-super__591.86__idle.csv"
    )
    row = only_row(parse_nvidia_smi_csv(read(path), now=NOW))
    # temperature.memory is "N/A" without brackets on GeForce; power.draw "38.92 W"
    assert row.memory_temperature_c is None
    assert (row.temperature_c, row.power_w, row.utilization_pct) == (40.0, 38.92, 0.0)


def test_nvidia_smi_l40s_labels_are_parsed_as_they_are():
    """The capture's idle/load labels look swapped (README): rows say what the file says."""
    folder = DATA / "nvidia-smi/query_gpu_csv"
    idle = only_row(
        parse_nvidia_smi_csv(read(folder / "linux-x86_64__nvidia-l40s__595.80__idle.csv"), now=NOW)
    )
    load = only_row(
        parse_nvidia_smi_csv(read(folder / "linux-x86_64__nvidia-l40s__595.80__load.csv"), now=NOW)
    )
    assert (idle.utilization_pct, idle.power_w) == (100.0, 144.97)
    assert (load.utilization_pct, load.power_w) == (9.0, 110.23)


def test_nvidia_smi_crlf_and_time_zone():
    path = DATA / "nvidia-smi/query_gpu_csv/linux-x86_64__nvidia-h200__590.48.01__load.csv"
    text = read(path)
    assert "\r\n" not in text
    lf_row = only_row(parse_nvidia_smi_csv(text, now=NOW))
    crlf_row = only_row(parse_nvidia_smi_csv(text.replace("\n", "\r\n"), now=NOW))
    assert crlf_row == lf_row
    # 2026/07/03 22:11:09.763 on a host in Berlin (CEST, UTC+2)
    berlin = only_row(parse_nvidia_smi_csv(text, tz=ZoneInfo("Europe/Berlin"), now=NOW))
    assert berlin.timestamp == datetime(2026, 7, 3, 20, 11, 9, 763000, tzinfo=UTC)


NVIDIA_SMI_SMALL = (
    "timestamp, name, uuid, index, utilization.gpu [%], memory.used [MiB], power.draw [W]\r\n"
    "2026/01/09 13:40:12.345, NVIDIA H100, GPU-1111, 0, 87 %, 1024 MiB, 300.5 W\r\n"
    "2026/01/09 13:40:12.346, NVIDIA H100, GPU-2222, 1, 140 %, 1024 MiB, 300.5 W\r\n"
    "2026/01/09 13:40:12.347, NVIDIA H100, GPU-3333, 2, 5 %, abc MiB, 300.5 W\r\n"
    "2026/11/22 12:00:00.000, NVIDIA H100, GPU-4444, 3, 5 %, 1024 MiB, 300.5 W\r\n"
    "2026/13/09 13:40:12.347, NVIDIA H100, GPU-5555, 4, 5 %, 1024 MiB, 300.5 W\r\n"
    "2026/01/09 13:40:12.347, NVIDIA H100, GPU-6666, 5, 5 %\r\n"
)


def test_nvidia_smi_bad_rows_name_line_and_reason():
    now = datetime(2026, 11, 15, tzinfo=UTC)
    result = parse_nvidia_smi_csv(NVIDIA_SMI_SMALL, now=now)
    assert [row.device.uuid for row in result.rows] == ["GPU-1111"]
    assert result.rows[0].utilization_pct == 87.0
    assert [error.message for error in result.errors] == [
        "line 3: utilization.gpu '140 %' is outside 0–100",
        "line 4: memory.used 'abc MiB' is not a number",
        "line 5: timestamp 2026-11-22T12:00:00+00:00 is more than 1 day in the future "
        "(now is 2026-11-15T00:00:00+00:00)",
        "line 6: timestamp '2026/13/09 13:40:12.347' is not like 2026/01/09 13:40:12.345",
        "line 7: 5 cells where the header has 7",
    ]


@pytest.mark.parametrize("missing", ["uuid", "timestamp"])
def test_nvidia_smi_without_required_column_is_refused(missing):
    header, *rows = NVIDIA_SMI_SMALL.split("\r\n")
    columns = header.split(", ")
    kept = [index for index, name in enumerate(columns) if name != missing]
    text = "\n".join(
        ", ".join(line.split(", ")[index] for index in kept) for line in [header, rows[0]]
    )
    with pytest.raises(TelemetryFormatError, match=f"no '{missing}' column"):
        parse_nvidia_smi_csv(text, now=NOW)


@pytest.mark.parametrize(
    "text",
    [
        "",
        (DATA / "dcgm-exporter/scrapes/ericsson_T4_loaded_driver590_nohelp.prom").read_text(),
        "\x00\x01binary\x02",
    ],
    ids=["empty", "dcgm-scrape", "binary"],
)
def test_nvidia_smi_refuses_non_csv(text):
    with pytest.raises(TelemetryFormatError):
        parse_nvidia_smi_csv(text, now=NOW)


# --- Azure LLM inference traces -------------------------------------------------------------


@pytest.mark.parametrize("path", AZURE_TRACES, ids=lambda path: path.stem)
def test_azure_trace_has_one_row_per_line(path):
    text = read(path)
    assert "\r\n" in text and not text.endswith("\n")  # CRLF, no final newline
    line_count = text.count("\r\n") + 1
    result = parse_azure_llm(text, now=NOW)
    assert result.errors == []
    assert len(result.rows) == line_count - 1
    assert result.rows[-1].line_number == line_count
    first_line = text.split("\r\n")[1]
    stamp, context_tokens, generated_tokens = first_line.split(",")
    first = result.rows[0]
    assert first.line_number == 2
    assert (first.input_tokens, first.output_tokens) == (int(context_tokens), int(generated_tokens))
    assert first.timestamp.isoformat(sep=" ").startswith(stamp[:26])
    assert (first.count, first.latency_ms, first.status) == (1, None, "")


def test_azure_conversation_trace_first_row():
    result = parse_azure_llm(read(DATA / "traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"))
    # line 2: 2023-11-16 18:15:46.6805900,374,44 (7-digit fraction, no zone → UTC)
    assert result.rows[0] == RequestRow(
        line_number=2,
        timestamp=datetime(2023, 11, 16, 18, 15, 46, 680590, tzinfo=UTC),
        input_tokens=374,
        output_tokens=44,
    )
    # last line 19367: 2023-11-16 19:14:08.4025270,197,183
    assert result.rows[-1].timestamp == datetime(2023, 11, 16, 19, 14, 8, 402527, tzinfo=UTC)
    assert (result.rows[-1].input_tokens, result.rows[-1].output_tokens) == (197, 183)


def test_azure_trace_through_the_generic_request_mapping_gives_the_same_rows():
    text = read(DATA / "traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv")
    generic = parse_request_csv(
        text,
        columns={
            "timestamp": "TIMESTAMP",
            "input_tokens": "ContextTokens",
            "output_tokens": "GeneratedTokens",
        },
        now=NOW,
    )
    assert generic.errors == []
    assert generic.rows == parse_azure_llm(text, now=NOW).rows


def test_azure_bad_rows_and_bad_header():
    text = (
        "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
        "2023-11-16 18:15:46.6805900,374,44\r\n"
        "2023-11-16 18:15:47.0000000,abc,44\r\n"
        "2023-11-16 18:15:48.0000000,374,-1\r\n"
        "2023-11-16 25:15:48.0000000,374,1\r\n"
        "2026-12-06 12:00:00.0000000,374,1\r\n"
        "2023-11-16 18:15:49.0000000,374"
    )
    result = parse_azure_llm(text, now=NOW)
    assert len(result.rows) == 1
    assert [error.message for error in result.errors] == [
        "line 3: ContextTokens 'abc' is not a whole number",
        "line 4: GeneratedTokens '-1' is negative",
        "line 5: TIMESTAMP '2023-11-16 25:15:48.0000000' is not like 2023-11-16 18:15:46.6805900",
        "line 6: timestamp 2026-12-06T12:00:00+00:00 is more than 1 day in the future "
        "(now is 2026-11-29T12:00:00+00:00)",
        "line 7: 2 cells where 3 are expected",
    ]
    with pytest.raises(TelemetryFormatError, match="expected the Azure LLM trace header"):
        parse_azure_llm(read(ALIBABA_SLICE), now=NOW)


# --- generic CSV: Alibaba GenTD26 pod GPU duty cycle ----------------------------------------


def test_alibaba_duty_cycle_slice_through_a_mapping():
    text = read(ALIBABA_SLICE)
    result = parse_gpu_csv(text, columns=ALIBABA_MAPPING, now=NOW)
    assert result.errors == []
    data_lines = text.splitlines()[1:]
    assert len(result.rows) == len(data_lines) == 5000
    assert len({row.device for row in result.rows}) == len(
        {line.split(",")[2] for line in data_lines}
    )
    # line 2: 0.0,1662858720.0,23b8eba99c14e73d454503a55ae96989 (shifted unix seconds)
    first = result.rows[0]
    assert first.device == DeviceKey("23b8eba99c14e73d454503a55ae96989")
    assert first.timestamp == datetime(2022, 9, 11, 1, 12, tzinfo=UTC)
    assert first.utilization_pct == 0.0
    # line 1266: 82.9,1662859347.0,086b31f81b1cf0f15e43fe568e3fb8e4 (percent, not a ratio)
    busy = next(row for row in result.rows if row.line_number == 1266)
    assert busy.utilization_pct == 82.9
    assert busy.timestamp == datetime(2022, 9, 11, 1, 22, 27, tzinfo=UTC)
    assert busy.device.uuid == "086b31f81b1cf0f15e43fe568e3fb8e4"
    assert max(row.utilization_pct for row in result.rows) > 1  # percent scale


GENERIC_GPU_CSV = (
    "time,gpu,util,mem,watts,host\n"
    "2026-01-09T13:40:12Z,GPU-1,87,1024,300.5,node-a\n"
    "2026-01-09 14:40:12,GPU-2,50.5,,N/A,node-b\n"
    "1767966012,GPU-3,140,1,1,node-c\n"
    "1767966012.5,GPU-4,abc,1,1,node-d\n"
    "2026-12-06T12:00:00+00:00,GPU-5,1,1,1,node-e\n"
    "1767966012000,GPU-6,1,1,1,node-f\n"
    "yesterday,GPU-7,1,1,1,node-g\n"
    "2026-01-09T13:40:12Z,,1,1,1,node-h\n"
)
GENERIC_GPU_MAPPING = {
    "timestamp": "time",
    "device": "gpu",
    "utilization_pct": "util",
    "memory_used_mib": "mem",
    "power_w": "watts",
    "hostname": "host",
}


def test_generic_gpu_csv_values_and_row_errors():
    result = parse_gpu_csv(
        GENERIC_GPU_CSV, columns=GENERIC_GPU_MAPPING, tz=ZoneInfo("Europe/Berlin"), now=NOW
    )
    assert [(row.device.uuid, row.timestamp, row.utilization_pct) for row in result.rows] == [
        ("GPU-1", datetime(2026, 1, 9, 13, 40, 12, tzinfo=UTC), 87.0),
        # naive ISO time read in Berlin (CET, UTC+1)
        ("GPU-2", datetime(2026, 1, 9, 13, 40, 12, tzinfo=UTC), 50.5),
    ]
    assert (result.rows[0].memory_used_mib, result.rows[0].power_w) == (1024.0, 300.5)
    assert (result.rows[1].memory_used_mib, result.rows[1].power_w) == (None, None)
    assert result.rows[1].hostname == "node-b"
    assert [error.message for error in result.errors] == [
        "line 4: utilization_pct '140' is outside 0–100",
        "line 5: utilization_pct 'abc' is not a number",
        "line 6: timestamp 2026-12-06T12:00:00+00:00 is more than 1 day in the future "
        "(now is 2026-11-29T12:00:00+00:00)",
        "line 7: timestamp '1767966012000' is out of range (milliseconds? unix seconds expected)",
        "line 8: timestamp 'yesterday' is neither ISO 8601 nor unix seconds",
        "line 9: device is empty",
    ]


def test_generic_unix_seconds_int_and_float():
    text = "t,d,u\n1767966012,GPU-1,1\n1767966012.25,GPU-1,2\n"
    rows = parse_gpu_csv(
        text, columns={"timestamp": "t", "device": "d", "utilization_pct": "u"}
    ).rows
    assert [row.timestamp for row in rows] == [
        datetime(2026, 1, 9, 13, 40, 12, tzinfo=UTC),
        datetime(2026, 1, 9, 13, 40, 12, 250000, tzinfo=UTC),
    ]


def test_generic_mapping_naming_a_missing_header_is_refused():
    mapping = {**ALIBABA_MAPPING, "device": "pod_name"}
    with pytest.raises(TelemetryFormatError) as raised:
        parse_gpu_csv(read(ALIBABA_SLICE), columns=mapping, now=NOW)
    message = str(raised.value)
    assert "device='pod_name'" in message
    assert "headers found: 'value', 'timestamp_anon', 'container_ip'" in message


def test_generic_mapping_with_an_unknown_or_missing_field_is_refused():
    with pytest.raises(TelemetryFormatError) as raised:
        parse_gpu_csv(read(ALIBABA_SLICE), columns={**ALIBABA_MAPPING, "gpu_util": "value"})
    assert "unknown field(s) in the column mapping: 'gpu_util'" in str(raised.value)
    assert "known fields: timestamp, device, utilization_pct, memory_used_mib, power_w" in str(
        raised.value
    )
    with pytest.raises(TelemetryFormatError, match="the column mapping lacks 'device'"):
        parse_gpu_csv(read(ALIBABA_SLICE), columns={"timestamp": "t", "utilization_pct": "u"})


@pytest.mark.parametrize(
    "path",
    [
        DATA / "dcgm-exporter/scrapes/kops_aws_L4_driver580.prom",
        DATA / "traces/alibaba-genai-2026/README_GenTD26.md",
    ],
    ids=lambda path: path.suffix,
)
def test_generic_refuses_a_file_that_is_not_the_mapped_csv(path):
    with pytest.raises(TelemetryFormatError, match="headers found"):
        parse_gpu_csv(read(path), columns=ALIBABA_MAPPING, now=NOW)


def test_generic_request_csv_with_optional_fields():
    text = (
        "ts,in,out,ms,state,n\n"
        "2026-01-09T13:40:12Z,100,20,350.5,ok,3\n"
        "2026-01-09T13:40:13Z,100,20,,error,\n"
        "2026-01-09T13:40:14Z,63.0,x,-5,ok,1\n"
    )
    mapping = {
        "timestamp": "ts",
        "input_tokens": "in",
        "output_tokens": "out",
        "latency_ms": "ms",
        "status": "state",
        "count": "n",
    }
    result = parse_request_csv(text, columns=mapping, now=NOW)
    assert result.rows == [
        RequestRow(2, datetime(2026, 1, 9, 13, 40, 12, tzinfo=UTC), 100, 20, 350.5, "ok", 3),
        RequestRow(3, datetime(2026, 1, 9, 13, 40, 13, tzinfo=UTC), 100, 20, None, "error", 1),
    ]
    assert [error.message for error in result.errors] == [
        "line 4: output_tokens 'x' is not a number",
        "line 4: latency_ms '-5' is negative",
    ]


# --- package properties ---------------------------------------------------------------------


def test_parsers_import_no_django():
    code = (
        "import sys, apps.telemetry.ingest.parsers; "
        "leaked = sorted(m for m in sys.modules if m.split('.')[0] == 'django'); "
        "print(leaked); sys.exit(1 if leaked else 0)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_parsing_leaves_the_garbage_collector_as_it_found_it():
    text = scrape("kops_aws_L4_driver580.prom")
    assert gc.isenabled()
    dcgm(text)
    assert gc.isenabled()
    gc.disable()
    try:
        dcgm(text)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_fast_row_constructor_builds_the_row_the_dataclass_builds():
    import dataclasses

    from apps.telemetry.ingest.parsers.rows import DeviceKey, GpuSampleRow, gpu_sample_row

    values = {
        "line_number": 7,
        "device": DeviceKey("GPU-a", 3),
        "timestamp": datetime(2026, 11, 1, 10, tzinfo=UTC),
        "hostname": "node-1",
        "utilization_pct": 42.5,
        "power_w": 301.0,
    }
    fast, slow = gpu_sample_row(**values), GpuSampleRow(**values)
    assert fast == slow and hash(fast) == hash(slow)
    # Every field is there, the defaults included, and the row stays frozen.
    assert dataclasses.asdict(fast) == dataclasses.asdict(slow)
    assert fast.memory_used_mib is None and fast.pod == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.utilization_pct = 0.0
