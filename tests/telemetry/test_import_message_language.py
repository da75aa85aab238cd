"""A succeeded import's summary, stored by the worker in English, reads in the page's
language, from the run's own counts; in English it is exactly what was stored."""

import pytest
from django.urls import reverse
from django.utils import translation

from apps.telemetry.models import ImportRun

STORED = (
    "1200 rows accepted, 3 duplicates skipped, 0 rows rejected; 8 new GPU(s) registered, "
    "8 waiting for a pool on the unassigned-GPUs page."
)


@pytest.fixture
def run(make_user):
    return ImportRun.objects.create(
        kind="gpu",
        format="dcgm",
        status=ImportRun.Status.SUCCEEDED,
        rows_total=1203,
        rows_accepted=1200,
        rows_duplicate=3,
        rows_rejected=0,
        message=STORED,
        created_by=make_user("ops"),
    )


@pytest.mark.django_db
def test_the_summary_is_said_again_in_chinese(run):
    with translation.override("zh-hans"):
        assert run.message_in_language() == (
            "已接受 1200 行，跳过重复 3 行，拒绝 0 行；新登记 8 块 GPU，"
            "其中 8 块在“未分配设备”页面等待分配资源池。"
        )
    assert run.message_in_language() == STORED


@pytest.mark.django_db
def test_a_rejected_run_keeps_its_stored_sentence(run):
    run.status = ImportRun.Status.REJECTED
    run.message = "Rejected: 2 bad row(s), nothing imported."
    assert run.message_in_language() == run.message


@pytest.mark.django_db
def test_the_import_page_shows_it_in_the_readers_language(client, make_user, run):
    client.force_login(make_user("reader"))
    url = reverse("telemetry:import_detail", kwargs={"pk": run.pk})
    assert (
        "已接受 1200 行" in client.get(url, headers={"Accept-Language": "zh-CN"}).content.decode()
    )
    assert STORED in client.get(url, headers={"Accept-Language": "en"}).content.decode()
