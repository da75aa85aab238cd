"""Every parser's row errors, and the importer's own, are Sentences: stored in English
exactly as before, said again in Chinese on a Chinese page. Each parser reads a real file
of tests/data/ with one line spoiled here; the expected sentences, English and Chinese,
are written out by hand from the line numbers and values put into the file."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation

from apps.accounts.models import ApiToken
from apps.core.texts import translated
from apps.telemetry.forms import GpuImportForm
from apps.telemetry.ingest import checks, formats, storage
from apps.telemetry.ingest.importer import record_import_run
from apps.telemetry.ingest.parsers import (
    TelemetryFormatError,
    parse_azure_llm,
    parse_dcgm,
    parse_gpu_csv,
    parse_nvidia_smi_csv,
)
from apps.telemetry.ingest.storage import ImportSummary
from apps.telemetry.models import ImportRun

DATA = Path(__file__).resolve().parent.parent / "data"
L4_SCRAPE = DATA / "dcgm-exporter" / "scrapes" / "kops_aws_L4_driver580.prom"
NVIDIA_SMI_H100 = (
    DATA
    / "nvidia-smi"
    / "query_gpu_csv"
    / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv"
)
AZURE_CODE = DATA / "traces" / "azure-llm-2023" / "AzureLLMInferenceTrace_code.csv"
ALIBABA = DATA / "traces" / "alibaba-genai-2026" / "pod_gpu_duty_cycle_anon_head5000.csv"
ALIBABA_COLUMNS = {
    "timestamp": "timestamp_anon",
    "device": "container_ip",
    "utilization_pct": "value",
}
CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}


def in_both(errors) -> list[tuple[int, str, str]]:
    """(line, English, Chinese) of each row error; rebuilt from its msgids in English, an
    error reads exactly as it is stored."""
    said = []
    for error in errors:
        english = str(error.message)
        assert translated(error.message) == english
        with translation.override("zh-hans"):
            said.append((error.line_number, english, translated(error.message)))
    return said


def spoil(lines: list[str], line_number: int, old: str, new: str) -> None:
    """Replace ``old`` with ``new`` on the file's line ``line_number`` (1-based)."""
    assert old in lines[line_number - 1], (line_number, old)
    lines[line_number - 1] = lines[line_number - 1].replace(old, new, 1)


def test_a_dcgm_scrapes_bad_lines_read_in_chinese_and_as_before_in_english():
    lines = L4_SCRAPE.read_text().split("\n")
    # In the file: line 24 is DCGM_FI_DEV_GPU_UTIL "… 0", line 57 GR_ENGINE_ACTIVE
    # "… 0.000000" (grep -n).
    assert lines[23].startswith("DCGM_FI_DEV_GPU_UTIL{") and lines[23].endswith("} 0")
    assert lines[56].startswith("DCGM_FI_PROF_GR_ENGINE_ACTIVE{")
    spoil(lines, 24, "} 0", "} 140")
    spoil(lines, 57, "} 0.000000", "} 1.5")
    # A line of its own with a timestamp in seconds, and one without its UUID label.
    lines.append(lines[23].replace("} 140", "} 5 1700000000"))
    lines.append(lines[23].replace('UUID="GPU-', 'XUID="GPU-').replace("} 140", "} 5"))
    result = parse_dcgm(
        "\n".join(lines),
        scraped_at=datetime(2026, 11, 30, 10, tzinfo=UTC),
        now=datetime(2026, 11, 30, 11, tzinfo=UTC),
    )
    last = len(lines)
    assert in_both(result.errors) == [
        (
            24,
            "line 24: DCGM_FI_DEV_GPU_UTIL '140' is outside 0–100",
            "第 24 行：DCGM_FI_DEV_GPU_UTIL 的值“140”超出 0–100",
        ),
        (
            57,
            "line 57: DCGM_FI_PROF_GR_ENGINE_ACTIVE '1.5' is outside 0–1 "
            "(a ratio: 1 means 100% busy)",
            "第 57 行：DCGM_FI_PROF_GR_ENGINE_ACTIVE 的值“1.5”超出 0–1"
            "（这是比率：1 表示 100% 繁忙）",
        ),
        (
            last - 1,
            f"line {last - 1}: DCGM_FI_DEV_GPU_UTIL timestamp '1700000000' is before 2000: "
            "seconds instead of milliseconds?",
            f"第 {last - 1} 行：DCGM_FI_DEV_GPU_UTIL 的时间戳“1700000000”早于 2000 年："
            "是秒而不是毫秒吗？",
        ),
        (
            last,
            f"line {last}: DCGM_FI_DEV_GPU_UTIL has no UUID label (nor the old uuid), so the GPU "
            "cannot be identified",
            f"第 {last} 行：DCGM_FI_DEV_GPU_UTIL 没有 UUID 标签（也没有旧的 uuid），无法识别 GPU",
        ),
    ]


def test_a_scrape_dated_before_2000_names_the_scrape_time_in_chinese():
    result = parse_dcgm(
        L4_SCRAPE.read_text(),
        scraped_at=datetime(1970, 1, 1, 0, 0, 9, tzinfo=UTC),
        now=datetime(2026, 11, 30, 11, tzinfo=UTC),
    )
    # The L4's sample starts at its first stored metric, DCGM_FI_DEV_MEMORY_TEMP on line 9.
    assert in_both(result.errors) == [
        (
            9,
            "line 9: scrape time 1970-01-01 00:00:09 is before 2000-01-01: the node's clock is "
            "not set",
            "第 9 行：抓取时间 1970-01-01 00:00:09 早于 2000-01-01：节点的时钟未设置",
        )
    ]


def test_a_file_that_is_not_a_scrape_is_refused_in_chinese():
    with pytest.raises(TelemetryFormatError) as refused:
        parse_dcgm("# just a comment\nup 1\n", scraped_at=datetime(2026, 11, 30, tzinfo=UTC))
    english = (
        "no dcgm-exporter GPU metrics found (looked for DCGM_FI_DEV_GPU_UTIL, "
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_DEV_FB_USED…): is this a dcgm-exporter /metrics "
        "scrape?"
    )
    assert str(refused.value) == english == translated(refused.value)
    with translation.override("zh-hans"):
        assert translated(refused.value) == (
            "没有找到 dcgm-exporter 的 GPU 指标（查找了 DCGM_FI_DEV_GPU_UTIL, "
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_DEV_FB_USED…）：这是 dcgm-exporter 的 "
            "/metrics 抓取内容吗？"
        )


def test_an_nvidia_smi_csvs_bad_cells_read_in_chinese_and_as_before_in_english():
    header, row = NVIDIA_SMI_H100.read_text().split("\n")[:2]
    names, cells = header.split(", "), row.split(", ")
    # The capture's own cells: "100 %" utilization, "2026/07/14 08:12:53.353".
    cells[names.index("utilization.gpu [%]")] = "140 %"
    cells[names.index("timestamp")] = "yesterday"
    cells[names.index("power.draw [W]")] = "lots W"
    result = parse_nvidia_smi_csv(f"{header}\n{', '.join(cells)}\n")
    assert sorted(in_both(result.errors)) == sorted(
        [
            (
                2,
                "line 2: timestamp 'yesterday' is not like 2026/01/09 13:40:12.345",
                "第 2 行：时间戳“yesterday”不符合 2026/01/09 13:40:12.345 这样的格式",
            ),
            (
                2,
                "line 2: utilization.gpu '140 %' is outside 0–100",
                "第 2 行：utilization.gpu 的值“140 %”超出 0–100",
            ),
            (
                2,
                "line 2: power.draw 'lots W' is not a number",
                "第 2 行：power.draw 的值“lots W”不是数字",
            ),
        ]
    )


def test_an_nvidia_smi_csv_without_its_uuid_column_is_refused_in_chinese():
    header, row = NVIDIA_SMI_H100.read_text().split("\n")[:2]
    names, cells = header.split(", "), row.split(", ")
    at = names.index("uuid")
    del names[at], cells[at]
    with pytest.raises(TelemetryFormatError) as refused:
        parse_nvidia_smi_csv(f"{', '.join(names[:3])}\n{', '.join(cells[:3])}\n")
    assert str(refused.value) == (
        "line 1: no 'uuid' column, so this is not usable nvidia-smi --query-gpu CSV (query at "
        "least timestamp,uuid and use --format=csv with its header); columns found: "
        "'timestamp', 'driver_version', 'vgpu_driver_capability.heterogenous_multivGPU'"
    )
    with translation.override("zh-hans"):
        assert translated(refused.value) == (
            "第 1 行：没有“uuid”列，因此不是可用的 nvidia-smi --query-gpu CSV（至少查询 "
            "timestamp,uuid，并使用带表头的 --format=csv）；找到的列：'timestamp', "
            "'driver_version', 'vgpu_driver_capability.heterogenous_multivGPU'"
        )


def test_a_generic_csvs_bad_cells_read_in_chinese_and_as_before_in_english():
    lines = ALIBABA.read_text().split("\n")
    # The trace's rows read "0.0,1662858720.0,<md5>" (value, unix seconds, container).
    spoil(lines, 3, "0.0,", "abc,")
    spoil(lines, 4, ",1662858720.0,", ",1662858720000.0,")
    spoil(lines, 5, ",1662858720.0,", ",9.0,")
    result = parse_gpu_csv("\n".join(lines[:6]), columns=ALIBABA_COLUMNS)
    assert in_both(result.errors) == [
        (
            3,
            "line 3: utilization_pct 'abc' is not a number",
            "第 3 行：utilization_pct 的值“abc”不是数字",
        ),
        (
            4,
            "line 4: timestamp '1662858720000.0' is out of range (milliseconds? unix seconds "
            "expected)",
            "第 4 行：时间戳“1662858720000.0”超出范围（是毫秒吗？应为 Unix 秒）",
        ),
        (
            5,
            "line 5: timestamp 1970-01-01 00:00:09 is before 2000-01-01: the node's clock is "
            "not set",
            "第 5 行：时间戳 1970-01-01 00:00:09 早于 2000-01-01：节点的时钟未设置",
        ),
    ]


def test_a_generic_csv_mapped_to_a_missing_column_is_refused_in_chinese():
    with pytest.raises(TelemetryFormatError) as refused:
        parse_gpu_csv(ALIBABA.read_text(), columns={**ALIBABA_COLUMNS, "utilization_pct": "duty"})
    assert str(refused.value) == (
        "line 1: the file has no column named as mapped in utilization_pct='duty'; headers "
        "found: 'value', 'timestamp_anon', 'container_ip'"
    )
    with translation.override("zh-hans"):
        assert translated(refused.value) == (
            "第 1 行：文件中没有 utilization_pct='duty' 所映射的列；找到的表头："
            "'value', 'timestamp_anon', 'container_ip'"
        )


def test_an_azure_traces_bad_lines_read_in_chinese_and_as_before_in_english():
    lines = AZURE_CODE.read_text().split("\n")
    # Lines 2–4 of the trace: "2023-11-16 18:17:03.9799600,4808,10\r", "…,3180,8\r", …
    spoil(lines, 3, ",3180,", ",-5,")
    timestamp = lines[3].split(",")[0]
    spoil(lines, 4, timestamp, "soon")
    spoil(lines, 5, ",", ",,")
    result = parse_azure_llm("\n".join(lines[:6]), now=datetime(2026, 11, 30, tzinfo=UTC))
    assert in_both(result.errors) == [
        (3, "line 3: ContextTokens '-5' is negative", "第 3 行：ContextTokens 的值“-5”为负数"),
        (
            4,
            "line 4: TIMESTAMP 'soon' is not like 2023-11-16 18:15:46.6805900",
            "第 4 行：TIMESTAMP 的值“soon”不符合 2023-11-16 18:15:46.6805900 这样的格式",
        ),
        (5, "line 5: 4 cells where 3 are expected", "第 5 行：有 4 个单元格，应为 3 个"),
    ]


@pytest.mark.django_db
def test_the_importers_own_refusals_read_in_chinese(pool):
    """A hostname longer than its column and a NUL character, refused by the importer
    itself (not the parser), with their lines."""
    # The GPU's hostname (GpuDevice.hostname holds 255 characters) on every line; its
    # sample starts on line 9.
    text = L4_SCRAPE.read_text().replace(
        'Hostname="i-030791dc5a37cd257"', f'Hostname="{"n" * 300}"'
    )
    result = parse_dcgm(text, scraped_at=datetime.now(UTC) - timedelta(hours=1))
    assert not result.errors
    summary = storage.import_gpu_samples(result, pool=pool)
    assert summary.rejected_whole
    assert in_both(summary.errors) == [
        (
            9,
            "line 9: hostname is 300 characters; at most 255",
            "第 9 行：主机名 长度为 300 个字符；最多 255 个",
        )
    ]
    with pytest.raises(TelemetryFormatError) as refused:
        checks.refuse_nul_characters("a,b\n1,2\n3,\x004\n")
    assert str(refused.value) == "line 3: a NUL character (\\x00); the file is binary or corrupted"
    with translation.override("zh-hans"):
        assert translated(refused.value) == (
            "第 3 行：含有 NUL 字符（\\x00）；该文件是二进制文件或已损坏"
        )
    with pytest.raises(TelemetryFormatError) as unknown:
        formats.gpu_chunks("", format="prom")
    with translation.override("zh-hans"):
        assert translated(unknown.value) == (
            "未知格式“prom”；应为 ('dcgm', 'nvidia-smi', 'csv') 之一"
        )


@pytest.mark.django_db
def test_a_runs_warnings_are_kept_with_their_sentences_and_read_in_chinese(client, make_user, pool):
    pool.in_service_from = datetime(2026, 11, 30, 12, tzinfo=UTC)
    pool.save()
    run = ImportRun.objects.create(kind="gpu", format="csv", status=ImportRun.Status.RUNNING)
    warnings = checks.outside_service_sentences(pool, before=1, after=0)
    warnings += checks.outside_service_sentences(pool, before=1_234, after=0)
    record_import_run(run, ImportSummary(rows_total=1, accepted=1, warnings=warnings))
    run.refresh_from_db()
    english = [
        f"1 sample before pool {pool.name} entered service (2026-11-30 12:00 UTC): kept, not "
        "charged; change the pool's service period to count them.",
        f"1,234 samples before pool {pool.name} entered service (2026-11-30 12:00 UTC): kept, "
        "not charged; change the pool's service period to count them.",
    ]
    assert run.warnings == english == run.warnings_in_language()
    chinese = [
        f"{count} 个样本早于资源池 {pool.name} 投入服务的时间（2026-11-30 12:00 UTC）：已保留，"
        "不计费；修改资源池的服务期即可计入。"
        for count in ("1", "1,234")
    ]
    with translation.override("zh-hans"):
        assert run.warnings_in_language() == chinese
    client.force_login(make_user("reader"))
    url = reverse("telemetry:import_detail", kwargs={"pk": run.pk})
    page = client.get(url, headers=CHINESE).content.decode()
    assert all(f"<li>{sentence}</li>" in page for sentence in chinese)
    # A run stored before the parts were kept shows its warnings as written.
    ImportRun.objects.filter(pk=run.pk).update(warning_parts=[])
    run.refresh_from_db()
    with translation.override("zh-hans"):
        assert run.warnings_in_language() == english


@pytest.mark.django_db
def test_a_rejected_upload_shows_its_row_errors_in_chinese(
    client, make_user, pool, eager_celery, django_capture_on_commit_callbacks, settings, tmp_path
):
    """Uploaded from a Chinese page and run by the worker meanwhile, the rows are stored
    in English; the import's page says them in its reader's language."""
    settings.MEDIA_ROOT = tmp_path / "media"
    client.force_login(make_user("lead"))
    lines = NVIDIA_SMI_H100.read_text().split("\n")
    header, row = lines[:2]
    names, cells = header.split(", "), row.split(", ")
    cells[names.index("utilization.gpu [%]")] = "140 %"
    text = f"{header}\n{', '.join(cells)}\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("telemetry:import_create"),
            {
                "kind": "gpu",
                "format": "nvidia-smi",
                "time_zone": "UTC",
                "file": SimpleUploadedFile("h100.csv", text.encode()),
            },
            headers=CHINESE,
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    run = ImportRun.objects.latest("pk")
    assert run.status == ImportRun.Status.REJECTED
    english = "line 2: utilization.gpu '140 %' is outside 0–100"
    assert [error["message"] for error in run.errors] == [english]
    url = reverse("telemetry:import_detail", kwargs={"pk": run.pk})
    chinese_page = client.get(url, headers=CHINESE).content.decode()
    errors = chinese_page.split('id="import-errors"', 1)[1].split("</table>", 1)[0]
    assert "第 2 行：utilization.gpu 的值“140 %”超出 0–100" in errors
    assert "已拒绝：1 行有误，未导入任何数据。" in chinese_page
    english_page = client.get(url, headers={"Accept-Language": "en"}).content.decode()
    assert english.replace("'", "&#x27;") in english_page.split('id="import-errors"', 1)[1]


@pytest.mark.django_db
def test_the_upload_forms_mapping_error_reads_in_chinese():
    with translation.override("zh-hans"):
        form = GpuImportForm(
            data={"kind": "gpu", "format": "csv", "time_zone": "UTC", "columns": "timestamp"},
            files={"file": SimpleUploadedFile("gpus.csv", b"t,g,u\n")},
        )
        assert not form.is_valid()
        assert form.errors["columns"][0].startswith(
            "列映射：列映射“timestamp”不是 field=header 的形式"
        )
    form = GpuImportForm(
        data={"kind": "gpu", "format": "csv", "time_zone": "UTC", "columns": "timestamp"},
        files={"file": SimpleUploadedFile("gpus.csv", b"t,g,u\n")},
    )
    assert not form.is_valid()
    assert form.errors["columns"][0].startswith(
        "Column mapping: column mapping “timestamp” is not field=header; expected"
    )


@pytest.mark.django_db
def test_the_apis_import_result_follows_the_requests_language(client, make_user, pool):
    """The 422's errors keep their documented fields (line, message), in English by
    default and in Chinese for a client that asks for it."""
    _token, secret = ApiToken.issue(
        user=make_user("ops"), description="agent", lifetime=timedelta(days=1), read_only=False
    )
    payload = {
        "format": "csv",
        "pool": pool.slug,
        "text": "t,g,u\n2026-11-30T10:00:00Z,GPU-a,abc\n",
        "columns": {"timestamp": "t", "device": "g", "utilization_pct": "u"},
    }

    def push(language):
        return client.post(
            "/api/v1/telemetry/gpu/",
            payload,
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret}", "Accept-Language": language},
        )

    english = push("en")
    assert english.status_code == 422
    assert english.json()["errors"] == [
        {"line": 2, "message": "line 2: utilization_pct 'abc' is not a number"}
    ]
    # The same content again: it was rejected, so it is read again (and rejected again).
    chinese = push("zh-CN")
    assert chinese.status_code == 422
    assert chinese.json()["errors"] == [
        {"line": 2, "message": "第 2 行：utilization_pct 的值“abc”不是数字"}
    ]
    assert chinese.json()["message"].startswith("已拒绝：1 行有误，未导入任何数据。")
