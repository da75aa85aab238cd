"""The pages of the core area (catalog, API tokens, users, the Overview's own labels, the
shared confirmation, error and form components) in Simplified Chinese: a browser asking
for zh-CN reads their labels in Chinese and none of their English ones."""

import re
from html import unescape

import pytest
from django.urls import reverse

from apps.accounts.models import ApiToken
from tests.factories import ModelArchitectureFactory

pytestmark = pytest.mark.django_db

CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}


def visible_text(response) -> str:
    """The text a person reads: no scripts, styles, tags or attribute values."""
    html = response.content.decode()
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def assert_in_chinese(response, chinese: list[str], english: list[str]):
    assert response.status_code == 200, response.status_code
    text = visible_text(response)
    missing = [label for label in chinese if label not in text]
    assert not missing, f"not in Chinese: {missing}"
    left = [label for label in english if re.search(rf"\b{re.escape(label)}\b", text)]
    assert not left, f"still in English: {left}"


@pytest.fixture
def lead_client(client, make_user):
    client.force_login(make_user("lead"))
    return client


def test_the_gpu_catalog_list_and_page(lead_client, gpu_model):
    listing = lead_client.get(reverse("catalog:gpu_model_list"), headers=CHINESE)
    assert_in_chinese(
        listing,
        ["GPU 型号", "显存", "带宽", "参考价格", "添加 GPU 型号", "模型架构", "稠密"],
        ["Memory", "Bandwidth", "Reference price", "Add a GPU model", "Peak figures", "Pools"],
    )
    page = lead_client.get(gpu_model.get_absolute_url(), headers=CHINESE)
    assert_in_chinese(
        page,
        [
            "规格参数",
            "厂商",
            "显存带宽",
            "支持 MIG",
            "使用它的资源池",
            "没有资源池使用它",
            "变更历史",
        ],
        [
            "Datasheet",
            "Vendor",
            "Memory bandwidth",
            "MIG support",
            "Reference price",
            "Pools using it",
            "No pools use it",
            "History",
            "Edit",
            "Delete",
            "Yes",
            "No",
        ],
    )


def test_an_architecture_list_and_page_with_its_parameter_breakdown(lead_client, architecture):
    listing = lead_client.get(reverse("catalog:architecture_list"), headers=CHINESE)
    assert_in_chinese(
        listing,
        ["模型架构", "层数", "总参数量", "激活参数量", "推算与公布之差", "添加模型架构"],
        ["Family", "Layers", "Total parameters", "Shape vs published", "Workloads", "Totals"],
    )
    page = lead_client.get(architecture.get_absolute_url(), headers=CHINESE)
    assert_in_chinese(
        page,
        [
            "结构",
            "隐藏层维度",
            "Token 嵌入",
            "注意力（每层）",
            "合计",
            "以十亿计",
            "没有工作负载使用它",
        ],
        [
            "Hidden size",
            "Token embedding",
            "Attention, per layer",
            "Total",
            "In billions",
            "Published",
            "tokens",
            "Workloads using it",
            "Try it in the what-if calculator",
        ],
    )
    assert 'id="parameter-total"' in page.content.decode()


def test_a_mixture_of_experts_breakdown(lead_client):
    moe = ModelArchitectureFactory(experts=8, experts_per_token=2)
    page = lead_client.get(moe.get_absolute_url(), headers=CHINESE)
    assert_in_chinese(
        page,
        ["每 token 激活 8 个中的 2 个", "每 token 激活", "路由器（每层）", "每个专家"],
        ["Active per token", "Router, per layer", "per expert", "experts", "dense"],
    )


def test_a_refused_form_names_its_errors_in_chinese(lead_client):
    response = lead_client.post(
        reverse("catalog:architecture_create"),
        {
            "name": "Uneven",
            "layers": "32",
            "hidden_size": "4096",
            "intermediate_size": "14336",
            "attention_heads": "32",
            "kv_heads": "3",
            "head_dim": "128",
            "vocab_size": "128256",
            "max_context": "8192",
            "experts": "1",
            "experts_per_token": "1",
        },
        headers=CHINESE,
    )
    assert_in_chinese(
        response,
        [
            "请修正下方标出的 1 个字段",
            "3 个 KV 头无法整除 32 个注意力头",
            "KV 头数",
            "新建模型架构",
        ],
        ["Please correct", "Hidden size", "Leave empty", "Cancel", "Save architecture"],
    )


def test_saving_and_deleting_say_so_in_chinese(lead_client):
    architecture = ModelArchitectureFactory(name="Tiny test model")
    confirmation = lead_client.get(
        reverse("catalog:architecture_delete", args=[architecture.slug]), headers=CHINESE
    )
    assert_in_chinese(
        confirmation,
        ["删除 Tiny test model", "确定删除", "此操作无法撤销", "不会一并删除其他内容", "取消"],
        ["This cannot be undone", "Nothing else goes with it", "Cancel", "Delete"],
    )
    deleted = lead_client.post(
        reverse("catalog:architecture_delete", args=[architecture.slug]),
        headers=CHINESE,
        follow=True,
    )
    assert "模型架构 Tiny test model 已删除。" in visible_text(deleted)


def test_a_delete_refused_while_pools_use_the_gpu_model(lead_client, pool, gpu_model):
    page = lead_client.get(
        reverse("catalog:gpu_model_delete", args=[gpu_model.slug]), headers=CHINESE
    )
    assert_in_chinese(
        page, ["以下资源池仍在使用", "无法删除", "返回"], ["cannot be deleted", "Back"]
    )


def test_the_history_card_names_what_changed_in_chinese(lead_client, gpu_model):
    for _ in range(2):  # a change is diffed against the record before it
        gpu_model.tdp_watts += 1
        gpu_model.save()
    page = lead_client.get(gpu_model.get_absolute_url(), headers=CHINESE)
    assert_in_chinese(page, ["TDP (W)", "修改"], ["changed", "No recorded changes yet"])


def test_api_tokens_in_chinese(client, make_user):
    user = make_user("ops")
    client.force_login(user)
    empty = client.get(reverse("accounts:token_list"), headers=CHINESE)
    assert_in_chinese(empty, ["暂无 API 令牌", "新建令牌"], ["No API tokens", "New token"])
    form = client.get(reverse("accounts:token_create"), headers=CHINESE)
    assert_in_chinese(
        form,
        ["描述", "有效期", "只读", "30 天", "创建令牌"],
        ["Description", "Expires after", "Read only", "days", "Create token", "Cancel"],
    )
    created = client.post(
        reverse("accounts:token_create"),
        {"description": "scraper", "lifetime_days": 30, "read_only": "on"},
        headers=CHINESE,
    )
    assert_in_chinese(
        created,
        ["请立即复制此令牌", "只读", "到期", "完成"],
        ["Copy this token", "expires", "Done"],
    )
    listing = client.get(reverse("accounts:token_list"), headers=CHINESE)
    assert_in_chinese(
        listing,
        ["描述", "密钥 ID", "最近使用", "从未", "吊销"],
        ["Key id", "Access", "Last used", "never", "Revoke", "read-only"],
    )
    token = ApiToken.objects.get(user=user)
    revoked = client.post(
        reverse("accounts:token_delete", args=[token.key_id]), headers=CHINESE, follow=True
    )
    assert "令牌“scraper”已吊销。" in visible_text(revoked)


def test_users_and_roles_in_chinese(client, make_user):
    make_user("ops")
    client.force_login(make_user("admin"))
    page = client.get(reverse("core:user_list"), headers=CHINESE)
    assert_in_chinese(
        page,
        [
            "用户与角色",
            "最近登录",
            "运维",
            "编辑备份策略、记录恢复演练、导入遥测数据，并管理告警规则、渠道和静默。",
        ],
        ["Users and roles", "Last login", "Roles", "Edits backup policies", "never"],
    )


def test_the_overview_without_pools_and_the_error_pages(client, make_user):
    client.force_login(make_user("lead"))
    overview = client.get(reverse("dashboard:overview"), headers=CHINESE)
    assert_in_chinese(
        overview, ["暂无 GPU 资源池", "添加资源池"], ["No GPU pools yet", "Add a pool", "Fleet"]
    )
    missing = client.get("/no-such-page/", headers=CHINESE)
    assert missing.status_code == 404
    assert "页面不存在" in visible_text(missing) and "Not found" not in visible_text(missing)
    client.force_login(make_user("reader"))
    refused = client.get(reverse("catalog:gpu_model_create"), headers=CHINESE)
    assert refused.status_code == 403
    assert "你没有执行此操作的权限" in visible_text(refused)


def test_the_overview_kpis_in_chinese(client, make_user, pool):
    client.force_login(make_user("lead"))
    overview = client.get(reverse("dashboard:overview"), headers=CHINESE)
    assert_in_chinese(
        overview,
        [
            "利用率，最近 24 小时",
            "本月至今成本",
            "本月至今闲置成本",
            "已逾期的恢复演练",
            "暂无备份策略",
        ],
        [
            "Utilisation",
            "Cost, month to date",
            "Idle cost",
            "paid for GPUs with nothing to do",
            "Restore drills overdue",
            "no backup policies yet",
            "Curves cover",
        ],
    )


def test_english_stays_as_it_was(lead_client, architecture):
    page = lead_client.get(architecture.get_absolute_url(), headers={"Accept-Language": "en"})
    text = visible_text(page)
    assert "Token embedding" in text and "In billions" in text and "Try it in the what-if" in text


def test_number_ranges_and_confirmations_are_explained_in_chinese(lead_client):
    response = lead_client.post(
        reverse("catalog:gpu_model_create"),
        {
            "name": "Test Accelerator Z",
            "vendor": "Acme",
            "memory_gb": "96",
            "memory_bandwidth_gb_per_second": "-5",
            "tdp_watts": "1,4",
            "reference_price_per_gpu_hour_usd": "62",
        },
        headers=CHINESE,
    )
    assert_in_chinese(
        response,
        [
            "显存带宽 (GB/s) 必须大于 0 GB/s；当前为 -5：数据手册数值大于 0（不适用时留空）。",
            '"1,4"：请输入整数，不要带逗号',
            "确认 $62.00 每 GPU 小时 无误",
            "极少有 GPU 租到这个价",
        ],
        ["must be", "enter a whole number", "is right", "Check it", "Dense, never"],
    )
