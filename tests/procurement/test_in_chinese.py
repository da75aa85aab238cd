"""The procurement pages in Simplified Chinese, and exports written in the language of the
page that asked for them, although a worker writes them."""

import csv
import html
import io
import re

import pytest
from django.urls import reverse
from django.utils import translation
from openpyxl import load_workbook

from apps.procurement.exports.jobs import run_export
from apps.procurement.models import ComparisonExport

CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}


def visible_text(response) -> str:
    body = response.content.decode()
    body = re.sub(r"<script\b.*?</script>", " ", body, flags=re.DOTALL)
    body = re.sub(r"<[^>]+>", " ", body)
    return re.sub(r"\s+", " ", html.unescape(body))


def assert_no_english(text: str, words) -> None:
    left = [word for word in words if re.search(rf"\b{re.escape(word)}\b", text)]
    assert not left, f"still in English: {left}"


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.mark.django_db
def test_the_empty_scenario_list_is_in_chinese(procurement_client):
    text = visible_text(
        procurement_client.get(reverse("procurement:scenario_list"), headers=CHINESE)
    )
    assert "采购方案" in text and "暂无比较方案" in text and "新建方案" in text
    assert_no_english(text, ("Procurement scenarios", "New scenario", "Total cost of ownership"))


@pytest.mark.django_db
def test_the_scenario_pages_are_in_chinese(procurement_client, scenario):
    listing = visible_text(
        procurement_client.get(reverse("procurement:scenario_list"), headers=CHINESE)
    )
    assert "1 个月" in listing and "最近导出" in listing and "创建人" in listing
    detail = procurement_client.get(
        reverse("procurement:scenario_detail", args=[scenario.slug]), headers=CHINESE
    )
    text = visible_text(detail)
    for label in (
        "假设分析",
        "需求",
        "参考 GPU",
        "添加选项",
        "云按需",
        "总成本",
        "盈亏平衡",
        "导出 CSV",
    ):
        assert label in text, label
    # The recommendation and its reasons (comparison/maths.py) are written in Chinese too.
    assert "个月内的成本为" in text and "个 GPU 作为基线" in text
    data = (scenario.name, "Rent H100", "Hybrid H100", scenario.demand_pool.name)
    for name in data:
        text = text.replace(name, "")
    words = (
        "What if",
        "Demand",
        "Add an option",
        "Cloud on-demand",
        "Total cost",
        "Break-even",
        "Peak demand",
        "Mean demand",
        "Work per GPU",
        "Export CSV",
        "No exports yet",
        "Horizon",
        "Compute",
        "Power",
        "Storage",
        "Operations",
        "load",
        "costs",
        "less than",
        "pays off",
        "baseline",
    )
    assert_no_english(text, words)


@pytest.mark.django_db
def test_the_forms_and_their_errors_are_in_chinese(procurement_client, scenario):
    create = procurement_client.get(reverse("procurement:scenario_create"), headers=CHINESE)
    text = visible_text(create)
    assert "新建方案" in text and "需求来源" in text and "参考效率" in text and "保存方案" in text
    assert_no_english(text, ("Demand source", "Reference efficiency", "Save scenario", "Horizon"))
    refused = procurement_client.post(
        reverse("procurement:scenario_create"),
        {
            "name": "Entered",
            "horizon_months": 12,
            "currency": "USD",
            "usd_exchange_rate": "1",
            "demand_source": "entered",
            "window_days": 14,
            "reference_efficiency": "0.4",
            "compute_precision": "bf16",
            "entered_hourly_profile": "1,2,3",
        },
        headers=CHINESE,
    )
    text = visible_text(refused)
    assert "请填写 24 个权重" in text
    assert "需求为“手动填写：每月 GPU 小时与 24 小时分布”时，需填写每月 GPU 小时。" in text
    option = visible_text(
        procurement_client.get(
            reverse("procurement:option_create", args=[scenario.slug]), headers=CHINESE
        )
    )
    assert "新建选项" in option and "按需价格（每 GPU 小时） (USD)" in option
    assert "保存选项" in option and "运行成本" in option
    assert_no_english(option, ("Running costs", "Save option", "Cloud reserved", "Throughput"))
    prices = visible_text(
        procurement_client.get(
            reverse("procurement:price_import", args=[scenario.slug]), headers=CHINESE
        )
    )
    assert "从 SkyPilot 目录导入价格" in prices and "返回方案" in prices
    export_form = visible_text(
        procurement_client.get(
            reverse("procurement:export_create", args=[scenario.slug]), headers=CHINESE
        )
    )
    assert "导出比较结果" in export_form and "格式" in export_form


@pytest.mark.django_db
def test_an_export_is_written_in_the_language_it_was_asked_in(
    procurement_client, scenario, media_root, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks():
        response = procurement_client.post(
            reverse("procurement:export_create", args=[scenario.slug]),
            {"format": "csv"},
            headers=CHINESE,
        )
    export = ComparisonExport.objects.get()
    assert response.url == export.get_absolute_url()
    assert export.language == "zh-hans"
    # What the worker runs, with no request and no active language: the export says which.
    with translation.override("en"):
        assert run_export(export.pk) == "succeeded"
    export.refresh_from_db()
    rows = list(csv.reader(io.StringIO(export.file.read().decode("utf-8-sig"))))
    assert rows[0][:3] == ["选项", "类型", "GPU 型号"]
    assert "总成本（USD）" in rows[0]
    assert any(row[:1] == ["建议"] for row in rows)
    page = visible_text(procurement_client.get(export.get_absolute_url(), headers=CHINESE))
    assert "已就绪" in page and "下载 CSV" in page
    assert f"{export.file.size:,} 字节。" in page


@pytest.mark.django_db
def test_xlsx_and_pdf_exports_in_chinese(scenario, media_root):
    for export_format in ("xlsx", "pdf"):
        export = ComparisonExport.objects.create(
            scenario=scenario, format=export_format, language="zh-hans"
        )
        assert run_export(export.pk) == "succeeded"
    workbook = load_workbook(ComparisonExport.objects.get(format="xlsx").file.path)
    assert workbook.sheetnames == ["比较", "输入与假设", "采用的价格", "需求曲线"]
    assert workbook["比较"]["A1"].value == "选项"
    assert ComparisonExport.objects.get(format="pdf").file.size > 0
    # An export asked for without a page (the API, a shell) is written in English.
    assert ComparisonExport(scenario=scenario, format="csv").language == "en"
