"""Pools, workloads and the what-if calculator read in Simplified Chinese when the browser
asks for it: headings, labels, choices, table headers, empty states, form errors, the fit
engine's findings and notes, and the calculator's proposals. The English pages are what
the other tests of tests/pools assert."""

import html
import re
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.pools.models import Deployment, Purpose, WorkloadKind
from tests.factories import PoolFactory, WorkloadFactory

CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9"}

# English labels of the pools area's templates and Python, none of which may remain on
# a page in Chinese (data created here has ASCII names that contain none of them).
ENGLISH_LABELS = [
    "GPU pools",
    "Add a pool",
    "Add a workload",
    "What-if calculator",
    "Price per GPU-hour",
    "Price per hour",
    "Memory per GPU",
    "Inventory",
    "Deployment",
    "Compliance",
    "Interconnect",
    "In service",
    "Effective price",
    "Whole pool",
    "Per GPU-hour",
    "not pinned",
    "No ICP filing needed",
    "Reports charge only",
    "Delete or archive",
    "Placement",
    "Training time",
    "Parallelism",
    "Max concurrency",
    "Decode ceiling",
    "Cost per 1M tokens",
    "Try changes in the calculator",
    "Total per GPU",
    "Headroom",
    "Runtime overhead",
    "Optimizer states",
    "does not fit",
    "fits, lots to spare",
    "no estimate",
    "Hide archived",
    "All purposes",
    "All deployments",
    "All regions",
    "All GPU models",
    "Save pool",
    "Save workload",
    "New pool",
    "New workload",
    "Cancel",
    "Pinned software",
    "Owned hardware",
    "Cloud price",
    "Service period",
    "Telemetry attribution",
    "Training settings",
    "Inference settings",
    "Custom shape",
    "Nothing here is saved",
    "What would fit",
    "Cloud on-demand",
    "Bare-metal",
    "On-premises",
    "Full fine-tune",
    "Online inference",
    "mixed precision",
    "Planned",
    "warning",
    "GPUs do not",
    "is needed for a",
    "Does not fit",
    "Driver, CUDA and framework",
    "Training in an inference pool",
    "Activations count",
    "tokens/s per replica",
    "sequences at this context",
    "Amortised purchase",
    "Power at TDP",
    "per month",
]


def visible_text(response) -> str:
    """The page's text as a reader sees it: no tags, scripts, styles or JSON islands."""
    body = response.content.decode()
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    body = re.sub(r"<[^>]+>", " ", body)
    return re.sub(r"\s+", " ", html.unescape(body))


def attributes(response, name: str) -> list[str]:
    return [
        html.unescape(value)
        for value in re.findall(rf'{name}="([^"]*)"', response.content.decode())
    ]


def assert_no_english_label(text: str) -> None:
    left = [label for label in ENGLISH_LABELS if label in text]
    assert not left, f"English left on a page in Chinese: {left}"


@pytest.fixture
def lead_client(client, make_user):
    client.force_login(make_user("lead"))
    return client


@pytest.fixture
def fleet(db):
    """A cloud training pool with a workload that does not pin its software, an owned
    inference pool with an inference workload, and an archived workload."""
    cloud = PoolFactory(name="alpha", slug="alpha", region="cn-shanghai")
    owned = PoolFactory(
        name="beta",
        slug="beta",
        purpose=Purpose.INFERENCE,
        deployment=Deployment.ON_PREMISES,
        on_demand_price_per_gpu_hour_usd=None,
        purchase_price_per_gpu_usd=Decimal("30000"),
        amortisation_months=36,
        power_price_per_kwh_usd=Decimal("0.10"),
        pue=Decimal("1.30"),
        operations_per_month_usd=Decimal("2000"),
        colocation_per_month_usd=Decimal("1000"),
        driver_version="550.54.15",
        cuda_version="12.4",
        framework_versions="torch 2.4.1",
    )
    training = WorkloadFactory(name="tune", slug="tune", pool=cloud, tokens_to_train=10**10)
    serving = WorkloadFactory(
        name="serve",
        slug="serve",
        pool=owned,
        kind=WorkloadKind.ONLINE_INFERENCE,
        gpu_count=2,
        inference_tensor_parallel=1,
        concurrent_sequences=8,
    )
    return {"cloud": cloud, "owned": owned, "training": training, "serving": serving}


@pytest.mark.django_db
def test_the_pool_list_is_in_chinese(lead_client, fleet):
    page = lead_client.get(reverse("pools:pool_list"), headers=CHINESE)
    text = visible_text(page)
    for chinese in (
        "GPU 资源池",
        "添加资源池",
        "用途",
        "部署方式",
        "地域",
        "每 GPU 小时价格",
        "隐藏已归档",
    ):
        assert chinese in text, chinese
    assert "2 个资源池" in text and "32 块 GPU" in text
    assert "云按需" in text and "本地部署" in text
    assert_no_english_label(text)
    assert "名称" in attributes(page, "placeholder")


@pytest.mark.django_db
def test_the_empty_pool_lists_are_in_chinese(lead_client):
    empty = visible_text(lead_client.get(reverse("pools:pool_list"), headers=CHINESE))
    assert "暂无 GPU 资源池" in empty and "技术负责人" in empty
    filtered = lead_client.get(reverse("pools:pool_list") + "?purpose=inference", headers=CHINESE)
    text = visible_text(filtered)
    assert "没有符合筛选条件的资源池" in text and "清除筛选" in text
    assert_no_english_label(text)


@pytest.mark.django_db
@pytest.mark.parametrize("which", ["cloud", "owned"])
def test_a_pool_page_is_in_chinese(lead_client, fleet, which):
    pool = fleet[which]
    text = visible_text(lead_client.get(pool.get_absolute_url(), headers=CHINESE))
    for chinese in (
        "资源清单",
        "部署方式",
        "合规",
        "服务期",
        "有效价格",
        "每 GPU 小时",
        "整个资源池",
        "工作负载",
    ):
        assert chinese in text, chinese
    if which == "cloud":
        assert "未固定" in text and "按需价格" in text and "训练" in text
        assert "该资源池未固定全部驱动、CUDA 和框架版本" in text
    else:
        assert "采购摊销" in text and "按 TDP 计的电费" in text and "运维与托管" in text
        assert "个月 × 730 h" in text and "每月（$2,000 + $1,000）÷ 730 h ÷ 16 块 GPU" in text
    assert_no_english_label(text)


@pytest.mark.django_db
def test_the_pool_form_and_its_errors_are_in_chinese(lead_client, fleet):
    form = visible_text(lead_client.get(reverse("pools:pool_create"), headers=CHINESE))
    for chinese in (
        "新建资源池",
        "硬件",
        "服务期",
        "固定的软件版本",
        "云价格",
        "自有硬件",
        "报表",
        "保存资源池",
        "取消",
    ):
        assert chinese in form, chinese
    assert "每节点 GPU 数" in form and "高峰时段" in form and "日期和时间按" in form
    assert_no_english_label(form)
    refused = lead_client.post(
        reverse("pools:pool_create"),
        {
            "name": "gamma",
            "purpose": "training",
            "deployment": "cloud_reserved",
            "gpu_model": fleet["cloud"].gpu_model.pk,
            "gpu_count": "12",
            "gpus_per_node": "8",
            "interconnect": "nvlink",
            "compliance_zone": "other",
            "peak_hours": "25",
        },
        headers=CHINESE,
    )
    assert refused.status_code == 200
    text = visible_text(refused)
    assert "12 块 GPU 无法填满每节点 8 块的整数个节点" in text
    assert "云预留资源池需要填写“预留价格（USD / GPU 小时）”才能得出有效价格。" in text
    assert "“25”：小时取值为 0 到 23" in text
    assert_no_english_label(text)


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_forms_hide_the_other_kinds_sections_in_either_language(fleet, language):
    """Section titles are lazy translations: the conditions keyed by them hold in the
    language a form is drawn in, so a training workload is not asked for its serving
    settings in Chinese either."""
    from django.utils import translation

    from apps.pools.forms import PoolForm, WorkloadForm

    with translation.override(language):
        workload = WorkloadForm({"kind": "full_fine_tune", "pool": fleet["cloud"].pk})
        pool = PoolForm({"deployment": "cloud_on_demand"})
        assert {"weight_precision", "context_length"} <= workload._hidden_field_names
        assert "precision" not in workload._hidden_field_names
        assert "purchase_price_per_gpu_usd" in pool._hidden_field_names
        assert "on_demand_price_per_gpu_hour_usd" not in pool._hidden_field_names
        sections = {str(section.title): section for section in workload.field_sections()}
        inference = "推理" if language == "zh-hans" else "Inference"
        assert sections[inference].controller_id == "id_kind"


@pytest.mark.django_db
def test_the_workload_list_is_in_chinese(lead_client, fleet):
    text = visible_text(lead_client.get(reverse("pools:workload_list"), headers=CHINESE))
    for chinese in (
        "工作负载",
        "假设分析计算器",
        "添加工作负载",
        "类型",
        "模型",
        "每 GPU 显存",
        "适配",
        "警告",
    ):
        assert chinese in text, chinese
    assert "全量微调" in text and "在线推理" in text and "条警告" in text
    assert_no_english_label(text)
    archived = lead_client.get(reverse("pools:workload_list") + "?archived=true", headers=CHINESE)
    assert "没有已归档的工作负载" in visible_text(archived)


@pytest.mark.django_db
def test_a_training_workload_page_is_in_chinese(lead_client, fleet):
    page = lead_client.get(fleet["training"].get_absolute_url(), headers=CHINESE)
    text = visible_text(page)
    for chinese in (
        "部署位置",
        "类型",
        "并行方式",
        "批次",
        "训练时长",
        "每 GPU 显存",
        "权重",
        "优化器状态",
        "每 GPU 合计",
        "余量",
        "在计算器中尝试调整",
    ):
        assert chinese in text, chinese
    assert "BF16 混合精度" in text and "不重计算" in text
    # 10¹⁰ tokens: 100 × 10⁸, counted in 亿 as Chinese counts, not "10.0 十亿".
    assert "训练 100 亿 token" in text
    assert_no_english_label(text)
    chart = re.search(r'id="chart-memory"[^>]*>(.*?)</script>', page.content.decode(), re.S)
    assert chart is None or "Memory per GPU" not in chart.group(1)
    assert "每 GPU 显存" in page.content.decode()


@pytest.mark.django_db
def test_an_inference_workload_page_is_in_chinese(lead_client, fleet):
    text = visible_text(lead_client.get(fleet["serving"].get_absolute_url(), headers=CHINESE))
    for chinese in ("副本", "负载", "最大并发", "解码上限", "每百万 token 成本", "KV 缓存"):
        assert chinese in text, chinese
    assert "每副本 8 个序列 × " in text and "该上下文下" in text
    assert_no_english_label(text)


@pytest.mark.django_db
def test_the_workload_form_and_its_errors_are_in_chinese(lead_client, fleet):
    form = visible_text(lead_client.get(reverse("pools:workload_create"), headers=CHINESE))
    for chinese in ("新建工作负载", "训练", "推理", "遥测归属", "数据并行度", "保存工作负载"):
        assert chinese in form, chinese
    assert_no_english_label(form)
    refused = lead_client.post(
        reverse("pools:workload_create"),
        {
            "name": "omega",
            "kind": "full_fine_tune",
            "pool": fleet["cloud"].pk,
            "gpu_count": "64",
            "status": "planned",
        },
        headers=CHINESE,
    )
    text = visible_text(refused)
    assert "资源池 alpha 只有 16 块 GPU，工作负载不能使用 64 块。" in text
    assert_no_english_label(text)


@pytest.mark.django_db
def test_the_calculator_is_in_chinese(lead_client, fleet):
    text = visible_text(lead_client.get(reverse("pools:calculator"), headers=CHINESE))
    for chinese in (
        "假设分析计算器",
        "适配引擎",
        "模式",
        "模型架构",
        "自定义结构",
        "硬件",
        "训练设置",
        "推理设置",
        "估算",
        "每 GPU",
    ):
        assert chinese in text, chinese
    assert_no_english_label(text)
    # Llama-3-8B in FP32 with 4,096 sequences does not fit on one H100: proposals.
    crowded = lead_client.get(
        reverse("pools:calculator"),
        {
            "mode": "inference",
            "model": "llama-3-8b",
            "gpu_model": "h100-sxm",
            "tensor_parallel": "1",
            "weight_precision": "fp32",
            "kv_cache_precision": "bf16",
            "context_length": "8192",
            "concurrent_sequences": "64",
            "pipeline_parallel": "1",
            "micro_batch_size": "1",
            "seq_len": "4096",
            "precision": "bf16",
            "optimizer": "adamw",
            "zero_stage": "0",
            "recompute": "none",
        },
        headers=CHINESE,
    )
    text = visible_text(crowded)
    assert "放不下" in text and "怎样才能放得下" in text and "调整" in text
    assert "INT4 权重" in text and "上线前请用自己的提示词验证量化模型的质量。" in text
    assert "张量并行 2" in text and "个并发序列" in text and "个参数。" in text
    assert_no_english_label(text)
    refused = lead_client.get(
        reverse("pools:calculator"),
        {"mode": "training", "model": "", "tensor_parallel": "1", "pipeline_parallel": "1"},
        headers=CHINESE,
    )
    text = visible_text(refused)
    assert "暂时无法估算" in text and "请选择模型架构，或填写参数量。" in text


@pytest.mark.django_db
def test_the_demo_fleet_reads_in_chinese(lead_client, demo):
    """Every demo workload's findings are translated: no English sentence of the fit
    engine is left on the pool pages."""
    from apps.pools.models import Pool

    for pool in Pool.objects.all():
        text = visible_text(lead_client.get(pool.get_absolute_url(), headers=CHINESE))
        assert_no_english_label(text)


@pytest.mark.django_db
def test_archiving_and_restoring_say_so_in_chinese(lead_client, fleet):
    workload = fleet["serving"]
    archived = lead_client.post(
        reverse("pools:workload_archive", kwargs={"slug": workload.slug}),
        headers=CHINESE,
        follow=True,
    )
    text = visible_text(archived)
    assert "工作负载 serve 已归档" in text and "已归档" in text
    assert "Archived" not in text
    restored = lead_client.post(
        reverse("pools:workload_restore", kwargs={"slug": workload.slug}),
        headers=CHINESE,
        follow=True,
    )
    assert "工作负载 serve 已恢复。" in visible_text(restored)
