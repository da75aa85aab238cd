"""An import's message is stored by the worker in English with its sentences' msgids and
values (apps/core/sentences.py), and each page says it again in its reader's language; in
English it is exactly what was stored. Runs stored before the msgids were kept get them
from their English sentence once (telemetry migration 0015)."""

import importlib

import pytest
from django.urls import reverse
from django.utils import translation

from apps.telemetry.ingest.importer import record_import_run
from apps.telemetry.ingest.parsers import RowError
from apps.telemetry.ingest.parsers.generic_csv import parse_gpu_csv
from apps.telemetry.ingest.storage import ImportSummary
from apps.telemetry.models import ImportRun

STORED = (
    "1200 rows accepted, 3 duplicates skipped, 0 rows rejected; 8 new GPU(s) registered, "
    "8 waiting for a pool on the unassigned-GPUs page."
)
IN_CHINESE = (
    "已接受 1200 行，跳过重复 3 行，拒绝 0 行；新登记 8 块 GPU，"
    "其中 8 块在“未分配设备”页面等待分配资源池。"
)
migration_0015 = importlib.import_module("apps.telemetry.migrations.0015_importrun_message_parts")


@pytest.fixture
def run(make_user):
    """A run recorded the way every channel records one."""
    run = ImportRun.objects.create(
        kind="gpu", format="dcgm", status=ImportRun.Status.RUNNING, created_by=make_user("ops")
    )
    summary = ImportSummary(
        rows_total=1203, accepted=1200, duplicates=3, new_devices=8, unassigned_devices=8
    )
    return record_import_run(run, summary)


@pytest.mark.django_db
def test_the_summary_is_stored_in_english_and_said_again_in_chinese(run):
    run.refresh_from_db()
    assert run.message == STORED
    with translation.override("zh-hans"):
        assert run.message_in_language() == IN_CHINESE
    assert run.message_in_language() == STORED


@pytest.mark.django_db
def test_the_import_page_shows_it_in_the_readers_language(client, run):
    # The run names no pool: its page is its uploader's (apps/telemetry/scoped.py).
    client.force_login(run.created_by)
    url = reverse("telemetry:import_detail", kwargs={"pk": run.pk})
    assert IN_CHINESE in client.get(url, headers={"Accept-Language": "zh-CN"}).content.decode()
    assert STORED in client.get(url, headers={"Accept-Language": "en"}).content.decode()


def test_a_run_stored_before_the_msgids_gets_them_from_its_english_sentence():
    parts = migration_0015.parts_of(STORED)
    run = ImportRun(status=ImportRun.Status.SUCCEEDED, message=STORED, message_parts=parts)
    with translation.override("zh-hans"):
        assert run.message_in_language() == IN_CHINESE
    assert run.message_in_language() == STORED
    assert migration_0015.parts_of("0 rows accepted, 0 duplicates skipped, 2 rows rejected.")
    # Any other stored text stays as written.
    assert migration_0015.parts_of("Rejected: 2 bad row(s), nothing imported.") == []


@pytest.mark.django_db
def test_a_rejected_file_is_said_in_chinese_with_its_row_errors(make_user):
    """A file whose every row is bad: the rejection and the parser's own row sentences
    are read again in the reader's language; in English, as stored."""
    result = parse_gpu_csv(
        "timestamp,gpu_uuid,utilization_pct\n2026-11-30T10:00:00Z,GPU-1,140\n",
        columns={
            "timestamp": "timestamp",
            "device": "gpu_uuid",
            "utilization_pct": "utilization_pct",
        },
    )
    assert result.errors and isinstance(result.errors[0], RowError)
    run = ImportRun.objects.create(kind="gpu", format="csv", status=ImportRun.Status.RUNNING)
    summary = ImportSummary(rows_total=1, rejected=1, errors=result.errors, rejected_whole=True)
    record_import_run(run, summary)
    run.refresh_from_db()
    english_error = str(result.errors[0].message)
    assert run.message.startswith("Rejected: 1 bad row(s), nothing imported. First errors: ")
    assert english_error in run.message
    assert run.errors_in_language()[0]["message"] == english_error
    with translation.override("zh-hans"):
        chinese = run.message_in_language()
        assert chinese.startswith("已拒绝：1 行有误，未导入任何数据。")
        assert "--skip-bad-rows" in chinese
        error_in_chinese = run.errors_in_language()[0]["message"]
    assert error_in_chinese != english_error
    assert "140" in error_in_chinese and "第 2 行" in error_in_chinese
