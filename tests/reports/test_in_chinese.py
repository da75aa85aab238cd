"""The reports pages in Simplified Chinese: what the browser asks for is what the page,
its table, charts, explanations, exports and the cached figures under them are written
in, and a page cached in one language is never served in the other."""

import csv
import html
import io
import json
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from apps.pools.models import Interruption
from apps.reports.cache import recent_views, remember_view
from apps.reports.warming import warm_recent_views
from apps.telemetry.models import PoolHourlyUsage
from apps.telemetry.rollups.days import rebuild_days

CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}
ENGLISH = {"Accept-Language": "en-GB"}


def visible_text(response) -> str:
    """The page's text as a reader sees it: no scripts (the charts' JSON), no tags."""
    body = response.content.decode()
    body = re.sub(r"<script\b.*?</script>", " ", body, flags=re.DOTALL)
    body = re.sub(r"<[^>]+>", " ", body)
    return re.sub(r"\s+", " ", html.unescape(body))


def assert_no_english(text: str, words) -> None:
    left = [word for word in words if re.search(rf"\b{re.escape(word)}\b", text)]
    assert not left, f"still in English: {left}"


@pytest.fixture
def zh_client(client, make_user):
    client.force_login(make_user("lead"))
    return client


@pytest.fixture
def measured_pool(pool):
    """Two days of hourly rollups for the test pool, ending now."""
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=now - timedelta(hours=step),
            reporting_gpus=16,
            capacity_gpu_hours=16,
            busy_gpu_hours=8,
            avg_utilization_pct=50,
        )
        for step in range(48)
    )
    rebuild_days(now - timedelta(hours=48), now + timedelta(hours=1))
    return pool


REPORT_WORDS = (
    "Reports",
    "Utilisation and cost",
    "Interruptions",
    "Recompute",
    "Capacity",
    "Busy",
    "Idle",
    "Unmeasured",
    "Requests",
    "Per busy GPU-h",
    "Total",
    "Group by",
    "Time zone for curves",
    "All pools",
    "All purposes",
    "Cost by pool",
    "Choose a figure",
    "Peak and off-peak",
    "No request logs in this range",
    "Recompute the daily totals of this range",
)


@pytest.mark.django_db
def test_the_report_page_is_in_chinese(zh_client, measured_pool):
    response = zh_client.get(reverse("reports:report"), headers=CHINESE)
    assert response.status_code == 200
    text = visible_text(response)
    for label in (
        "报表",
        "利用率与成本",
        "分组依据",
        "容量",
        "忙碌",
        "闲置",
        "合计",
        "此范围内无请求日志",
    ):
        assert label in text, label
    assert "按资源池统计的成本" in text
    # The period is written Y-m-d in Chinese, not "1 May 2026".
    assert re.search(r"\d{4}-\d{2}-\d{2} – \d{4}-\d{2}-\d{2}", text)
    assert_no_english(text.replace(measured_pool.name, ""), REPORT_WORDS)
    body = response.content.decode()
    # The charts' titles, built in Python and frozen into the cached figures.
    charts = [
        json.loads(html.unescape(found))
        for found in re.findall(
            r'<script type="application/json"[^>]*>(.*?)</script>', body, re.DOTALL
        )
    ]
    titles = {chart["layout"]["title"]["text"] for chart in charts}
    assert "按分组的成本：忙碌、闲置与未测量" in titles, titles
    assert "每日已测量小时成本（按用途）" in titles, titles
    assert 'title="此指标的计算方式"' in body
    # Narrow columns keep their Chinese headers whole ("未测量", not one character a line).
    assert 'style="word-break: keep-all"' in body
    english = zh_client.get(reverse("reports:report"), headers=ENGLISH).content.decode()
    assert "keep-all" not in english


@pytest.mark.django_db
def test_a_page_cached_in_one_language_is_not_served_in_the_other(zh_client, measured_pool):
    url = reverse("reports:report")
    english = visible_text(zh_client.get(url, headers=ENGLISH))
    assert "Cost by pool" in english
    chinese = visible_text(zh_client.get(url, headers=CHINESE))
    assert "按资源池统计的成本" in chinese and "Cost by pool" not in chinese
    again = visible_text(zh_client.get(url, headers=ENGLISH))
    assert "Cost by pool" in again and "按资源池统计的成本" not in again
    # The pool page's panel, cached by pool, too.
    panel_url = reverse("reports:pool_panel", kwargs={"slug": measured_pool.slug})
    assert "Cost and use, last 28 days" in visible_text(zh_client.get(panel_url, headers=ENGLISH))
    assert "成本与使用，最近 28 天" in visible_text(zh_client.get(panel_url, headers=CHINESE))


@pytest.mark.django_db
def test_filter_errors_and_the_explanation_are_in_chinese(zh_client, measured_pool):
    errors = zh_client.get(
        reverse("reports:report"), {"start": "2026-05-10", "end": "2026-05-01"}, headers=CHINESE
    )
    text = visible_text(errors)
    assert "请修正上方的筛选条件" in text and "结束日期不能早于开始日期。" in text
    explained = zh_client.get(
        reverse("reports:report_explain"), {"figure": "cost_usd"}, headers=CHINESE
    )
    text = visible_text(explained)
    assert "成本：合计" in text and "此指标的计算方式" in text
    assert "按资源池，UTC 日期" in text
    missing = zh_client.get(
        reverse("reports:report_explain"), {"figure": "cost_usd", "row": "nope"}, headers=CHINESE
    )
    assert missing.status_code == 404 and "此报表中没有“nope”行。" in visible_text(missing)


@pytest.mark.django_db
def test_exports_have_chinese_headers(zh_client, measured_pool):
    response = zh_client.get(reverse("reports:report"), {"export": "csv"}, headers=CHINESE)
    header, *rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert header[:3] == ["键", "名称", "容量（GPU 小时）"]
    assert rows[-1][1] == "合计"
    english = zh_client.get(reverse("reports:report"), {"export": "csv"}, headers=ENGLISH)
    assert english.content.decode().startswith("Key,Name,Capacity (GPU-hours)")


@pytest.mark.django_db
def test_interruption_pages_are_in_chinese(zh_client, workload):
    empty = visible_text(zh_client.get(reverse("reports:interruption_list"), headers=CHINESE))
    assert "训练作业中断" in empty and "暂无中断记录" in empty and "记录中断" in empty
    form = zh_client.get(reverse("reports:interruption_create"), headers=CHINESE)
    assert "保存中断" in visible_text(form) and "取消" in visible_text(form)
    interruption = Interruption.objects.create(
        workload=workload,
        occurred_at=timezone.now() - timedelta(hours=2),
        cause="hardware",
        restart_minutes=10,
    )
    listing = visible_text(zh_client.get(reverse("reports:interruption_list"), headers=CHINESE))
    assert "时间（UTC）" in listing and "½ 检查点间隔" in listing
    detail = visible_text(zh_client.get(interruption.get_absolute_url(), headers=CHINESE))
    assert "损失的工作量" in detail and "最近检查点" in detail
    words = ("Workload", "Cause", "Restart", "Work lost", "Recorded by", "Last checkpoint")
    assert_no_english(detail.replace(workload.name, "").replace(workload.pool.name, ""), words)


@pytest.mark.django_db
def test_a_warm_up_recomputes_a_page_in_the_language_it_was_seen_in(measured_pool):
    from apps.reports import rendering
    from apps.reports.cache import cached_value
    from apps.reports.forms import report_filter_form

    with translation.override("zh-hans"):
        remember_view("report", "group_by=purpose")
    assert recent_views() == [("report", "group_by=purpose", "zh-hans")]
    assert warm_recent_views() == 1
    form = report_filter_form({"group_by": "purpose"})
    assert form.is_valid()
    parameters = rendering.results_cache_parameters(form.cleaned_data, "group_by=purpose")
    with translation.override("zh-hans"):
        html_in_chinese = cached_value("report-html", parameters)
    assert html_in_chinese is not None and "按用途统计的成本" in html_in_chinese
    with translation.override("en"):
        assert cached_value("report-html", parameters) is None  # nothing warmed in English
