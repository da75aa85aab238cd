"""The telemetry pages in Simplified Chinese: imports, the upload form and what it says
about a file it cannot read, the triage of unassigned GPUs with its suggestions, the
reconciliation and its flags' sentences, hostname rules and the pool's utilization chart,
with no English label of these pages left."""

import json
import re
from html import unescape

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone, translation

from apps.telemetry.charts import build_pool_utilization_figure
from apps.telemetry.models import PoolHourFlag
from tests.factories import GpuDeviceFactory, HostnameRuleFactory, ImportRunFactory

pytestmark = pytest.mark.django_db

CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def visible_text(response) -> str:
    body = response.content.decode()
    body = re.sub(r"<script\b.*?</script>", " ", body, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", " ", body))


def assert_no_english(text: str, phrases: list[str]) -> None:
    left = [phrase for phrase in phrases if phrase in text]
    assert not left, f"English left on the page: {left}"


def test_the_import_list_in_chinese_empty_and_with_a_run(client, make_user, pool):
    client.force_login(make_user("lead"))
    empty = visible_text(client.get(reverse("telemetry:import_list"), headers=CHINESE))
    assert "导入历史" in empty and "还没有导入" in empty and "未分配 GPU" in empty
    assert_no_english(empty, ["Import history", "No imports yet", "Hostname rules"])
    ImportRunFactory(pool=pool, status="succeeded", rows_total=3, rows_accepted=3)
    text = visible_text(client.get(reverse("telemetry:import_list"), headers=CHINESE))
    for label in ("时间", "操作人", "文件", "数据", "状态", "已接受", "重复", "成功", "网页上传"):
        assert label in text, label
    assert_no_english(text, ["Succeeded", "Web upload", "Accepted", "Duplicates", "GPU telemetry"])


def test_the_upload_form_and_its_detection_error_in_chinese(client, make_user, pool):
    client.force_login(make_user("lead"))
    page = visible_text(client.get(reverse("telemetry:import_create"), headers=CHINESE))
    for label in ("导入文件", "GPU 遥测", "推理请求", "根据文件自动识别", "上传并导入", "导入过程"):
        assert label in page, label
    assert_no_english(
        page, ["Import a file", "Detect from the file", "Upload and import", "What happens"]
    )
    refused = client.post(
        reverse("telemetry:import_create") + "?kind=gpu",
        {
            "kind": "gpu",
            "format": "detect",
            "time_zone": "UTC",
            "file": SimpleUploadedFile("notes.txt", b"hello\n"),
        },
        headers=CHINESE,
    )
    text = visible_text(refused)
    assert "无法从文件的前 16 KiB 识别格式" in text and "请修正下方标出的 1 个字段" in text
    assert_no_english(
        text, ["Could not tell the format", "Please correct", "is kept on the server"]
    )
    requests = visible_text(
        client.get(reverse("telemetry:import_create") + "?kind=requests", headers=CHINESE)
    )
    assert "工作负载" in requests and "导入请求" in requests
    assert_no_english(requests, ["Import requests", "Inference requests tab"])


def test_an_import_page_in_chinese(client, make_user, pool):
    run = ImportRunFactory(
        pool=pool,
        status="succeeded",
        rows_total=3,
        rows_accepted=2,
        rows_rejected=1,
        errors=[{"line": 3, "message": "no utilization"}],
        finished_at=timezone.now(),
    )
    client.force_login(make_user("lead"))
    text = visible_text(
        client.get(reverse("telemetry:import_detail", kwargs={"pk": run.pk}), headers=CHINESE)
    )
    for label in ("导入 #", "详情", "格式", "渠道", "读取行数", "被拒绝的行", "原因", "完成于"):
        assert label in text, label
    assert_no_english(text, ["Details", "Channel", "Rows read", "Rejected lines", "Finished"])


def test_the_triage_page_suggests_in_chinese(client, make_user, pool):
    client.force_login(make_user("lead"))
    empty = visible_text(client.get(reverse("telemetry:device_unassigned"), headers=CHINESE))
    assert "所有 GPU 都已归属资源池" in empty
    assert_no_english(empty, ["Every GPU has a pool", "Unassigned GPUs"])
    HostnameRuleFactory(pool=pool, hostname_pattern="gpu-sh-*")
    GpuDeviceFactory(pool=None, hostname="gpu-sh-01", model_name="NVIDIA A100-SXM4-40GB")
    response = client.get(reverse("telemetry:device_unassigned"), headers=CHINESE)
    text = visible_text(response)
    for label in (
        "主机名",
        "建议的资源池",
        "首次出现",
        "分配",
        "匹配主机名规则 gpu-sh-*",
        "上报的型号为",
    ):
        assert label in text, label
    assert 'aria-label="选择本页所有 GPU"' in response.content.decode()
    assert_no_english(
        text, ["matches hostname rule", "it reports", "Suggested pool", "First seen", "Assign"]
    )


def test_the_reconciliation_says_its_flags_in_chinese(client, make_user, pool):
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    flag = PoolHourFlag.objects.create(
        pool=pool,
        hour=hour,
        kind=PoolHourFlag.Kind.OVER_REPORTED,
        gpus=18,
        detail=PoolHourFlag.detail_for(
            PoolHourFlag.Kind.OVER_REPORTED,
            reporting=18,
            declared=16,
            measured="17.50",
            counted="16.00",
        ),
    )
    assert flag.detail.startswith("18 GPUs reported in a pool of 16: 17.50 busy GPU-h measured")
    client.force_login(make_user("reader"))
    text = visible_text(client.get(reverse("telemetry:reconciliation"), headers=CHINESE))
    for label in ("对账", "日期（UTC）", "覆盖率 (%)", "上报的 GPU 多于资源池声明的数量"):
        assert label in text, label
    assert "资源池声明 16 个 GPU，实际上报 18 个：测得忙碌 17.50 GPU·h，计入 16.00" in text
    assert_no_english(text, ["GPUs reported in a pool", "More GPUs reporting", "Every flag"])
    # A sentence that matches no known wording is shown as stored.
    flag.detail = "something else"
    with translation.override("zh-hans"):
        assert flag.detail_sentence == "something else"


def test_hostname_rules_in_chinese(client, make_user, pool):
    client.force_login(make_user("lead"))
    empty = visible_text(client.get(reverse("telemetry:rule_list"), headers=CHINESE))
    assert "还没有主机名规则" in empty and "添加规则" in empty
    rule = HostnameRuleFactory(pool=pool, hostname_pattern="gpu-sh-*")
    text = visible_text(client.get(reverse("telemetry:rule_list"), headers=CHINESE))
    assert "优先级" in text and "主机名模式" in text
    assert_no_english(text, ["Priority", "Hostname pattern", "Add a rule"])
    refused = visible_text(
        client.post(
            reverse("telemetry:rule_create"),
            {"pool": pool.pk, "hostname_pattern": " ", "priority": "10"},
            headers=CHINESE,
        )
    )
    assert "新建主机名规则" in refused and "请修正下方标出的" in refused
    assert_no_english(refused, ["New hostname rule", "Please correct", "Save rule"])
    confirm = visible_text(
        client.get(reverse("telemetry:rule_delete", kwargs={"pk": rule.pk}), headers=CHINESE)
    )
    assert "删除规则 gpu-sh-*" in confirm and "已由它放置的 GPU 保留所在资源池" in confirm
    assert_no_english(confirm, ["Delete the rule", "keep their pool"])


def test_the_utilization_chart_is_titled_in_the_readers_language():
    rows = [
        {
            "hour": timezone.now().replace(minute=0, second=0, microsecond=0),
            "avg_utilization_pct": 50.0,
            "max_utilization_pct": 90.0,
            "reporting_gpus": 4,
            "capacity_gpu_hours": 8,
        }
    ]
    with translation.override("zh-hans"):
        figure = json.loads(build_pool_utilization_figure(rows).to_json())
    assert figure["layout"]["title"]["text"] == "每小时 GPU 利用率"
    assert {trace["name"] for trace in figure["data"]} == {"上报 GPU 的平均值", "最忙的 GPU"}
    with translation.override("en"):
        english = json.loads(build_pool_utilization_figure(rows).to_json())
    assert english["layout"]["title"]["text"] == "GPU utilization per hour"
    assert "of %{customdata[1]:.0f} GPUs reporting" in english["data"][0]["hovertemplate"]
