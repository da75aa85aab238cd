"""The technical lead's morning, end to end in Chromium on the demo fleet, in English and
in Chinese: the Overview's most idle pool, a workload that does not fit, the what-if
calculator's proposals (one applied until the estimate fits), a new cloud pool with an
online-inference workload on it, and a real dcgm-exporter scrape whose GPUs the triage
page assigns to that pool."""

import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.db.models import F, Sum
from django.utils import timezone
from playwright.sync_api import expect

from apps.catalog.models import GpuModel, ModelArchitecture
from apps.currencies.models import ExchangeRate
from apps.pools.models import Pool, Workload
from apps.telemetry.models import GpuDevice, GpuSample, ImportRun, PoolHourlyUsage
from tests.factories import TEST_PASSWORD

H100_SCRAPE = (
    Path(__file__).resolve().parent.parent
    / "data"
    / "dcgm-exporter"
    / "scrapes"
    / "aicr_8xH100_k8s_podlabels_driver580_sampled.prom"
)
# The scrape's eight GPUs, as its DCGM_FI_DEV_GPU_UTIL lines name them.
SCRAPE_UUIDS = {
    "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005",
    "GPU-bc5610b9-79c8-fedd-8899-07539c7f868a",
    "GPU-fbc2c554-4d37-8938-0032-f923bad0f716",
    "GPU-a65a773d-52bb-bcc1-a8ee-f78c3faa2e2d",
    "GPU-82e45d1b-1618-559f-144c-eab51545030b",
    "GPU-39e28159-8c62-ee71-64db-b748edd61e15",
    "GPU-e64d69ca-b4b3-59b2-e78c-94f26c4db365",
    "GPU-04d228d3-3b5a-3534-f5cf-969706647d56",
}

# The demo's nightly batch job, by hand (inference formulas of apps/pools/memory.py):
# Qwen2.5-72B, Ψ = 72,706,203,648 parameters, 80 layers, 8 KV heads of 128 dimensions, on
# A100 SXM 80GB with tensor parallel 4, 32 sequences of 16,384 tokens, BF16 KV cache;
# overhead = 2 GiB + ⌈5 % × (weights + KV cache)⌉.
# - KV cache: 2 × 80 × 8 × 128 × 2 B ÷ 4 = 81,920 B a token × 16,384 × 32 = 42,949,672,960 B.
# - BF16 weights: 72,706,203,648 × 2 ÷ 4 = 36,353,101,824 B; overhead 2,147,483,648 +
#   3,965,138,740; total 85,415,397,172 B: 85.4 GB, over 80 GB.
# - FP8 weights: 18,176,550,912 B; overhead 2,147,483,648 + 3,056,311,194; total
#   66,330,018,714 B: 66.3 GB, leaving 13,669,981,286 B (13.7 GB) of the 80·10⁹.
# - Sequences that fit with FP8 weights: 1.05 × (18,176,550,912 + n × 1,342,177,280) ≤
#   80·10⁹ − 2 GiB gives n ≤ 41.7, so 41.
BF16_PER_GPU = "85.4 GB"
FP8_PER_GPU = "66.3 GB"
FP8_HEADROOM = "13.7 GB"
FP8_MAX_SEQUENCES = "41"

# What the page says, per language; every selector is an id, a name, a data-* or a URL.
TEXT = {
    "en": {
        "idle_title": "Where the GPU dollars go",
        "does_not_fit": "does not fit",
        "memory_of": "{memory} of 80.0 GB",
        "fits": "fits",
        "what_would_fit": "What would fit",
        "detected": "Detected: dcgm-exporter scrape",
        "assigned": "8 GPUs assigned to {pool}",
        "every_gpu": "Every GPU has a pool",
    },
    "zh-hans": {
        "idle_title": "GPU 花费去向",
        "does_not_fit": "放不下",
        "memory_of": "{memory} / 80.0 GB",
        "fits": "放得下",
        "what_would_fit": "怎样才能放得下",
        "detected": "自动识别：dcgm-exporter 抓取",
        "assigned": "8 个 GPU 已分配到 {pool}",
        "every_gpu": "所有 GPU 都已归属资源池",
    },
}
BROWSER_LOCALE = {"en": "en-GB", "zh-hans": "zh-CN"}
# A Chinese name gets a pinyin slug.
NEW_POOL = {
    "en": ("Journey H100 inference", "journey-h100-inference"),
    "zh-hans": ("北京推理池", "bei-jing-tui-li-chi"),
}
NEW_WORKLOAD = {
    "en": ("Journey chat", "journey-chat"),
    "zh-hans": ("客服对话", "ke-fu-dui-hua"),
}


def _most_idle_by_the_hourly_rollups() -> str:
    """The pool with the most idle dollars over the Overview's 30 days, estimated from the
    hourly rollups alone: the effective price × (capacity − busy GPU-hours). The report's
    cost model prices an owned pool's hours in more detail, so some of its dollars differ
    by up to 2 %, but the leader is the same pool."""
    end = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    idle_hours = dict(
        PoolHourlyUsage.objects.filter(hour__gte=end - timedelta(days=30), hour__lt=end)
        .values("pool__slug")
        .annotate(idle=Sum(F("capacity_gpu_hours") - F("busy_gpu_hours")))
        .values_list("pool__slug", "idle")
    )
    # A pool priced in yuan (the demo's Shanghai pool): its price ÷ the latest month's
    # CNY per US dollar.
    units_per_usd = {"USD": 1.0}
    for rate in ExchangeRate.objects.order_by("month"):
        units_per_usd[rate.currency] = float(rate.units_per_usd)
    prices = {
        slug: float(price or 0) / units_per_usd[currency]
        for slug, price, currency in Pool.objects.values_list(
            "slug", "effective_price_per_gpu_hour_usd", "currency"
        )
    }
    return max(idle_hours, key=lambda slug: prices[slug] * idle_hours[slug])


def _usd(text: str) -> Decimal:
    return Decimal(re.sub(r"[^0-9.]", "", text))


@pytest.mark.browser
@pytest.mark.worker
# One language per journey (the lead's in English, ops' and procurement's in Chinese):
# every page in both is rendered by tests/*/test_in_chinese.py and
# tests/browser/test_wide_tables.py.
@pytest.mark.parametrize("lang", ["en"])
def test_lead_reviews_the_fleet_then_adds_a_pool_and_its_gpus(
    browser, live_server, make_user, demo, celery_worker_process, screenshot_dir, lang,
    transactional_db,
):  # fmt: skip
    # The browser speaks the reader's language too (Accept-Language, navigator.language).
    context = browser.new_context(
        locale=BROWSER_LOCALE[lang], viewport={"width": 1440, "height": 900}
    )
    context.add_cookies([{"name": "django_language", "value": lang, "url": live_server.url}])
    try:
        _journey(context.new_page(), live_server, make_user("lead"), screenshot_dir, lang)
    finally:
        context.close()


def _journey(page, live_server, lead, screenshot_dir, lang):
    text = TEXT[lang]
    step = iter(range(1, 100))

    def shot(name):
        page.screenshot(
            path=str(screenshot_dir / f"journey-lead-{lang}-{next(step):02d}-{name}.png"),
            full_page=True,
        )

    page.goto(f"{live_server.url}/login/")
    expect(page.locator("html")).to_have_attribute("lang", lang)
    page.fill("#id_username", lead.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    # (1) The Overview ranks pools by idle dollars over 30 days: the first row is the most.
    page.goto(f"{live_server.url}/")
    ranking = page.locator("#idle-ranking")
    expect(ranking.locator(".card-title")).to_have_text(text["idle_title"])
    rows = ranking.locator("tbody tr[data-pool]")
    expect(rows.first).to_be_visible()
    idle_30d = [_usd(cell) for cell in rows.locator("td:nth-child(3)").all_inner_texts()]
    assert idle_30d == sorted(idle_30d, reverse=True) and idle_30d[0] > 0
    most_idle = rows.first.get_attribute("data-pool")
    assert most_idle == _most_idle_by_the_hourly_rollups()
    shot("overview-idle-ranking")
    rows.first.locator("a").click()
    expect(page).to_have_url(f"{live_server.url}/pools/{most_idle}/")
    expect(page.locator(".page-title").first).to_contain_text(Pool.objects.get(slug=most_idle).name)
    shot("most-idle-pool")

    # (2) The workload list shows which workloads do not fit; the demo's batch job is one.
    page.goto(f"{live_server.url}/workloads/")
    batch = page.locator("#workload-table tbody tr").filter(
        has=page.locator('a[href="/workloads/nightly-batch-summaries/"]')
    )
    expect(batch.locator(".badge.bg-red-lt")).to_have_text(text["does_not_fit"])
    expect(batch).to_contain_text(text["memory_of"].format(memory=BF16_PER_GPU))
    shot("workloads")
    batch.locator('a[href="/workloads/nightly-batch-summaries/"]').click()
    expect(page).to_have_url(f"{live_server.url}/workloads/nightly-batch-summaries/")
    expect(page.locator("#recommendations tbody tr").first).to_be_visible()
    shot("workload-does-not-fit")

    # (3) The calculator opens on the workload's own settings and lists what would fit.
    page.locator('a[href="/calculator/?workload=nightly-batch-summaries"]').click()
    expect(page).to_have_url(re.compile(r"/calculator/\?workload=nightly-batch-summaries$"))
    expect(page.locator("#id_model")).to_have_value("qwen2-5-72b")
    expect(page.locator("#id_weight_precision")).to_have_value("bf16")
    expect(page.locator("#estimate-fits")).to_have_text(text["does_not_fit"])
    proposals = page.locator("#calculator-proposals")
    expect(proposals.locator("h4")).to_have_text(text["what_would_fit"])
    expect(proposals.locator("tr[data-change]").first).to_be_visible()
    fp8 = proposals.locator('tr[data-change="FP8 weights"]')
    expect(fp8).to_have_count(1)
    expect(page.locator("#estimate-total")).to_have_text(BF16_PER_GPU)
    expect(fp8.locator("td:nth-child(3)")).to_have_text("4")
    expect(fp8.locator("td:nth-child(4)")).to_have_text(FP8_PER_GPU)
    expect(fp8.locator("td:nth-child(5)")).to_have_text(FP8_HEADROOM)
    shot("calculator-proposals")

    # Applying the proposal is changing the one field it names: the estimate then fits,
    # at the per-GPU total the proposal promised.
    page.select_option("#id_weight_precision", "fp8")
    expect(page.locator("#estimate-fits")).to_have_text(text["fits"])
    expect(page.locator("#estimate-total")).to_have_text(FP8_PER_GPU)
    expect(page.locator("#estimate-max-concurrency")).to_have_text(FP8_MAX_SEQUENCES)
    breakdown = page.locator("#memory-breakdown tbody tr td.text-end")
    expect(breakdown.nth(0)).to_have_text("18.2 GB")  # weights
    expect(breakdown.nth(4)).to_have_text("42.9 GB")  # KV cache
    expect(page.locator("#calculator-proposals")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"weight_precision=fp8"))
    shot("calculator-fp8-fits")

    # (4) A cloud pool shows only the cloud price inputs.
    pool_name, pool_slug = NEW_POOL[lang]
    h100 = GpuModel.objects.get(slug="h100-sxm")
    page.goto(f"{live_server.url}/pools/new/")
    fieldsets = page.locator("fieldset")
    cloud = fieldsets.filter(has=page.locator("#id_on_demand_price_per_gpu_hour_usd"))
    owned = fieldsets.filter(has=page.locator("#id_purchase_price_per_gpu_usd"))
    page.fill("#id_name", pool_name)
    page.select_option("#id_purpose", "inference")
    page.select_option("#id_deployment", "cloud_on_demand")
    expect(cloud).to_be_visible()
    expect(owned).to_be_hidden()
    page.select_option("#id_gpu_model", str(h100.pk))
    page.fill("#id_gpu_count", "8")
    page.fill("#id_gpus_per_node", "8")
    page.fill("#id_on_demand_price_per_gpu_hour_usd", "2.49")
    shot("pool-form-cloud")
    page.locator("form.card button[type=submit]").click()
    expect(page).to_have_url(f"{live_server.url}/pools/{pool_slug}/")
    new_pool = Pool.objects.get(slug=pool_slug)
    assert (new_pool.name, new_pool.purpose, new_pool.deployment) == (
        pool_name,
        "inference",
        "cloud_on_demand",
    )
    assert (new_pool.gpu_model_id, new_pool.gpu_count, new_pool.gpus_per_node) == (h100.pk, 8, 8)
    assert new_pool.on_demand_price_per_gpu_hour_usd == Decimal("2.49")
    assert new_pool.effective_price_per_gpu_hour_usd == Decimal("2.49")
    shot("pool-saved")

    # An online-inference workload shows only the inference settings.
    workload_name, workload_slug = NEW_WORKLOAD[lang]
    llama = ModelArchitecture.objects.get(slug="llama-3-8b")
    page.goto(f"{live_server.url}/workloads/new/")
    training = page.locator("fieldset").filter(has=page.locator("#id_seq_len"))
    inference = page.locator("fieldset").filter(has=page.locator("#id_context_length"))
    page.fill("#id_name", workload_name)
    page.select_option("#id_kind", "online_inference")
    expect(inference).to_be_visible()
    expect(training).to_be_hidden()
    page.select_option("#id_model_architecture", str(llama.pk))
    page.select_option("#id_pool", str(new_pool.pk))
    page.fill("#id_gpu_count", "2")
    page.fill("#id_context_length", "8192")
    page.fill("#id_concurrent_sequences", "16")
    shot("workload-form-inference")
    page.locator("form.card button[type=submit]").click()
    expect(page).to_have_url(f"{live_server.url}/workloads/{workload_slug}/")
    workload = Workload.objects.get(slug=workload_slug)
    assert (workload.name, workload.kind, workload.pool_id, workload.gpu_count) == (
        workload_name,
        "online_inference",
        new_pool.pk,
        2,
    )
    assert (workload.model_architecture_id, workload.context_length) == (llama.pk, 8192)
    assert workload.concurrent_sequences == 16
    shot("workload-saved")

    # (5) A real scrape, format detected; its new GPUs wait on the triage page.
    page.goto(f"{live_server.url}/telemetry/imports/new/")
    expect(page.locator("#id_format")).to_have_value("detect")
    page.set_input_files("#id_file", str(H100_SCRAPE))
    shot("import-form")
    page.locator("#import-form button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/telemetry/imports/\d+/$"), timeout=15_000)
    expect(page.locator("#import-format")).to_have_text(text["detected"])
    expect(page.locator("#rows-accepted")).to_have_text("8", timeout=60_000)
    run = ImportRun.objects.latest("pk")
    assert run.rows_accepted == 8
    shot("import-done")

    page.goto(f"{live_server.url}/telemetry/gpus/unassigned/")
    boxes = page.locator('#unassigned-devices input[name="devices"]')
    expect(boxes).to_have_count(len(SCRAPE_UUIDS))
    page.locator("#select-all-devices").check()
    for index in range(len(SCRAPE_UUIDS)):
        expect(boxes.nth(index)).to_be_checked()
    page.select_option("#device-assign-form select[name=pool]", str(new_pool.pk))
    shot("triage-ticked")
    page.locator("#device-assign-form button[type=submit]:not([name])").click()
    expect(page.locator("#messages")).to_contain_text(text["assigned"].format(pool=pool_name))
    expect(page.get_by_text(text["every_gpu"])).to_be_visible()
    shot("triage-assigned")
    devices = GpuDevice.objects.filter(uuid__in=SCRAPE_UUIDS)
    assert set(devices.values_list("pool_id", "assignment")) == {(new_pool.pk, "manual")}
    assert devices.count() == len(SCRAPE_UUIDS)
    assert GpuSample.objects.filter(device__in=devices).count() == len(SCRAPE_UUIDS)
