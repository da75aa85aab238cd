"""The backup pages in Simplified Chinese: a reader whose browser asks for Chinese sees
every label, badge, sentence and form error of the fleet view, a policy, a version and a
drill in Chinese, and no English label of these pages is left."""

import re
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from apps.backups.models import RestoreDrill
from tests.backups.factories import SHA_A, SHA_B, make_drill, make_policy, make_version

pytestmark = pytest.mark.django_db

CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}


def visible_text(response) -> str:
    """The page's text as a reader sees it: no scripts, no tags, entities decoded."""
    body = response.content.decode()
    body = re.sub(r"<script\b.*?</script>", " ", body, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", " ", body))


def assert_no_english(text: str, phrases: list[str]) -> None:
    left = [phrase for phrase in phrases if phrase in text]
    assert not left, f"English left on the page: {left}"


def test_the_fleet_view_in_chinese_empty_and_with_a_policy(client, make_user, workload):
    client.force_login(make_user("ops"))
    empty = visible_text(client.get(reverse("backups:policy_list"), headers=CHINESE))
    assert "备份" in empty and "没有备份策略的工作负载" in empty and "还没有备份策略" in empty
    assert "添加策略" in empty and "可恢复性" in empty
    assert_no_english(
        empty,
        ["Backups", "Recoverability", "Workloads without", "No backup policies", "Add a policy"],
    )
    make_policy(workload)
    text = visible_text(client.get(reverse("backups:policy_list"), headers=CHINESE))
    for label in ("工作负载", "状态", "覆盖率", "缺失内容", "上次演练", "下次演练到期", "风险"):
        assert label in text, label
    # The coverage sentence and the badge are worded in Chinese too.
    assert "未保留数据版本和训练配置" in text and "从未演练" in text
    assert "120 min / 60 min" in text
    assert_no_english(
        text,
        [
            "Policies, riskiest first",
            "What is missing",
            "Last drill",
            "Next drill due",
            "never drilled",
            "is not kept",
            "Drills overdue",
        ],
    )


def test_a_policy_page_in_chinese_with_versions_and_a_failed_drill(client, make_user, workload):
    policy = make_policy(workload)
    version = make_version(workload)
    start = timezone.now() - timezone.timedelta(hours=3)
    drill = make_drill(
        policy,
        version,
        started_at=start,
        finished_at=start + timezone.timedelta(hours=2),
        observed=(("node-0", SHA_A), ("node-1", SHA_B)),
    )
    # Stored in English whatever the language of the request that recorded it.
    assert any("against an RTO of" in reason for reason in drill.failure_reasons)
    client.force_login(make_user("ops"))
    url = reverse("backups:policy_detail", kwargs={"slug": workload.slug})
    text = visible_text(client.get(url, headers=CHINESE))
    for label in (
        "覆盖率",
        "目标与存储层",
        "RPO 目标",
        "演练周期",
        "30 天",
        "热层 (最新可用)",
        "恢复演练",
        "校验和不一致",
        "耗时",
        "RTO 目标为",
        "个节点/副本的校验和不一致",
        "检查点间隔",
        "版本",
        "登记版本",
        "编辑策略",
        "历史",
    ):
        assert label in text, label
    assert_no_english(
        text,
        [
            "Targets and tiers",
            "Drill every",
            "Restore drills",
            "Checksums differ",
            "Took ",
            "Next drill due",
            "Checkpoint interval",
            "Register a version",
            "Edit policy",
            "Hot (latest usable)",
            "No recorded changes",
            "Version restored",
        ],
    )
    # Each history line reads "when · who · action · what", with no English word order
    # ("策略 创建") left in the Chinese.
    assert re.search(r"\d\d:\d\d\s+· 系统 · 创建 · 策略", text)
    assert "策略 创建" not in text
    drill_page = visible_text(
        client.get(reverse("backups:drill_detail", kwargs={"pk": drill.pk}), headers=CHINESE)
    )
    assert "恢复演练" in drill_page and "恢复的版本" in drill_page and "一致性" in drill_page
    assert "耗时" in drill_page and "失败" in drill_page
    assert_no_english(
        drill_page,
        ["Restore drill of", "Performed by", "Consistency", "Evidence", "Took ", "none attached"],
    )
    # The English page still reads as it always did.
    english = visible_text(client.get(url, headers={"Accept-Language": "en"}))
    assert "Targets and tiers" in english and "Checksums differ on 1 of 2 nodes/replicas" in english


def test_the_version_page_and_its_form_in_chinese(client, make_user, workload):
    make_policy(workload)
    version = make_version(workload)
    client.force_login(make_user("ops"))
    text = visible_text(
        client.get(reverse("backups:version_detail", kwargs={"pk": version.pk}), headers=CHINESE)
    )
    for label in (
        "类型",
        "模型",
        "数据版本",
        "精度",
        "配置哈希",
        "训练步数",
        "校验和",
        "训练检查点",
    ):
        assert label in text, label
    assert_no_english(
        text, ["Config hash", "Training step", "Drills that restored it", "Never restored"]
    )
    form_url = reverse("backups:version_create", kwargs={"slug": workload.slug})
    form = visible_text(client.get(form_url, headers=CHINESE))
    assert "登记版本" in form and "各节点或副本的校验和" in form and "保存版本" in form
    assert_no_english(form, ["Register a version", "Save version", "Checksums per node"])


def test_the_policy_form_says_its_errors_in_chinese(client, make_user, workload):
    client.force_login(make_user("ops"))
    url = reverse("backups:policy_create", kwargs={"slug": workload.slug})
    form = visible_text(client.get(url, headers=CHINESE))
    assert "保留内容" in form and "检查点权重" in form and "缺少它时" in form
    assert "热层位置" in form and "保存策略" in form
    assert_no_english(form, ["What is kept", "Without it", "Save policy", "Hot tier location"])
    refused = client.post(
        url,
        {
            "rpo_minutes": "0",
            "rto_minutes": "60",
            "drill_frequency_days": "30",
            "hot_location": "s3://x",
        },
        headers=CHINESE,
    )
    text = visible_text(refused)
    assert "请修正下方标出的" in text and "请说明热层保留版本的期限" in text
    assert_no_english(text, ["Please correct", "Say how long"])


def test_the_drill_form_says_its_errors_in_chinese(client, make_user, workload):
    make_policy(workload)
    version = make_version(workload)
    client.force_login(make_user("ops"))
    start = timezone.now() - timezone.timedelta(minutes=30)
    url = reverse("backups:drill_create", kwargs={"slug": workload.slug})
    refused = client.post(
        url,
        {
            "version": version.pk,
            "restored_from_tier": "hot",
            "started_at": start.strftime("%Y-%m-%dT%H:%M"),
            "finished_at": (start - timezone.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M"),
            "outcome": "restored",
        },
        headers=CHINESE,
    )
    text = visible_text(refused)
    assert "演练未记录" in text and "早于开始时间" in text
    assert_no_english(text, ["The drill was not recorded", "before it started", "Record drill"])


def test_a_recorded_drill_is_stored_in_english_and_read_in_chinese(client, make_user, workload):
    policy = make_policy(workload)
    version = make_version(workload)
    client.force_login(make_user("ops"))
    start = timezone.now() - timezone.timedelta(minutes=30)
    response = client.post(
        reverse("backups:drill_create", kwargs={"slug": workload.slug}),
        {
            "version": version.pk,
            "restored_from_tier": "hot",
            "started_at": start.strftime("%Y-%m-%dT%H:%M"),
            "finished_at": (start + timezone.timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M"),
            "outcome": "restored",
        },
        headers={**CHINESE, "HX-Request": "true"},
    )
    assert "演练已记录" in visible_text(response) and "训练未恢复。" in visible_text(response)
    drill = RestoreDrill.objects.get(policy=policy)
    assert drill.failure_reasons == ["The training did not resume."]
    with translation.override("zh-hans"):
        assert drill.failure_reason_sentences == ["训练未恢复。"]
