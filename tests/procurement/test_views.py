"""Scenario pages: a procurement user builds and compares; others read; errors name fields."""

from decimal import Decimal
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.catalog.models import GpuModel
from apps.pools.models import Pool, Workload
from apps.procurement.comparison.services import build_comparison, scenario_queryset
from apps.procurement.models import Scenario, ScenarioOption

DATA = Path(__file__).resolve().parents[1] / "data"
SKYPILOT_CSV = DATA / "gpu-specs" / "skypilot_catalog_v7_lambda_vms.csv"


def _detail(client, scenario, **params):
    return client.get(reverse("procurement:scenario_detail", args=[scenario.slug]), params)


@pytest.mark.django_db
def test_numbers_on_the_page_worked_by_hand(procurement_client, scenario):
    # Curve 2, 2, 6, 10 busy GPUs stands for 730 h: scale 182.5.
    # Rent: 20 GPU-hours × 182.5 × $2 = 7,300. Hybrid (r = 1, o = 2): Cost(R) per curve is
    # 40, 36, 32, 32, 32, 32, 32, 34 … → R = 2 (ties to the smaller), 32 × 182.5 = 5,840.
    page = _detail(procurement_client, scenario).content.decode()
    assert "7,300 USD" in page and "5,840 USD" in page
    # Per 1M output tokens: 1,000,000 tokens × 182.5; 7,300 ÷ 182.5 = 40.00.
    assert "40.00 USD" in page and "32.00 USD" in page
    assert "optimum 2" in page
    assert "ICP filing needed" in page  # the hybrid sits in mainland China
    assert "Hybrid H100 costs 5,840 USD over 1 months, 20% less than Rent H100." in page
    charts = ("chart-cost-by-option", "chart-cost-per-unit", "chart-hybrid-curve", "chart-demand")
    for chart in charts:
        assert f'id="{chart}"' in page


@pytest.mark.django_db
def test_what_if_recomputes_the_comparison_fragment_without_saving(procurement_client, scenario):
    response = procurement_client.get(
        reverse("procurement:scenario_detail", args=[scenario.slug]),
        {"horizon_months": "2", "window_days": "7", "reference_efficiency": "0.4"},
        headers={"HX-Request": "true", "HX-Target": "comparison"},
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="comparison">')
    assert "14,600 USD" in body  # twice the month
    scenario.refresh_from_db()
    assert scenario.horizon_months == 1

    bad = procurement_client.get(
        reverse("procurement:scenario_detail", args=[scenario.slug]),
        {"horizon_months": "0", "window_days": "7", "reference_efficiency": "0.4"},
        headers={"HX-Request": "true", "HX-Target": "comparison"},
    ).content.decode()
    assert 'data-field="horizon_months"' in bad and "Horizon (months)" in bad


@pytest.mark.django_db
def test_empty_state_without_rollups_then_the_entered_fallback(procurement_client, pool):
    scenario = Scenario.objects.create(
        name="Unmeasured", slug="unmeasured", demand_source="measured_pool", demand_pool=pool
    )
    page = _detail(procurement_client, scenario).content.decode()
    assert 'id="demand-empty"' in page
    assert f"No hourly rollups for {pool.name} yet" in page

    scenario.entered_gpu_hours_per_month = Decimal("730")
    scenario.save()
    ScenarioOption.objects.create(
        scenario=scenario,
        name="Rent",
        kind="on_demand",
        gpu_model=pool.gpu_model,
        source_pool=pool,
    )
    page = _detail(procurement_client, scenario).content.decode()
    assert 'id="demand-fallback"' in page
    # 730 GPU-hours a month (1 GPU every hour) × 36 months × the pool's $2.99 = 78,577.2.
    assert "78,577 USD" in page


@pytest.mark.django_db
def test_procurement_user_builds_a_scenario_from_a_demo_workloads_measured_curve(
    procurement_client, demo
):
    workload = Workload.objects.get(slug="chat-api-asia")
    l40s, h100 = GpuModel.objects.get(slug="l40s"), GpuModel.objects.get(slug="h100-pcie")
    l40s_pool = Pool.objects.get(slug="infer-l40s-hk")
    beijing = Pool.objects.get(slug="infer-h100-bj")
    response = procurement_client.post(
        reverse("procurement:scenario_create"),
        {
            "name": "Asia chat: three years",
            "horizon_months": "36",
            "currency": "usd",
            "usd_exchange_rate": "1",
            "demand_source": "measured_workload",
            "demand_workload": workload.pk,
            "window_days": "14",
            "reference_efficiency": "0.4",
            "compute_precision": "fp8",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    scenario = Scenario.objects.get(name="Asia chat: three years")
    assert scenario.currency == "USD" and scenario.slug == "asia-chat-three-years"
    create = reverse("procurement:option_create", args=[scenario.slug])
    common = {"efficiency": "0.4", "throughput_basis": "dense_peak", "hybrid_baseline": "reserved"}
    options = [
        {
            "name": "On-demand L40S",
            "kind": "on_demand",
            "gpu_model": l40s.pk,
            "on_demand_price_per_gpu_hour": "1.85",
            "compliance_zone": "hong_kong",
        },
        {
            "name": "Reserved L40S",
            "kind": "reserved",
            "gpu_model": l40s.pk,
            "source_pool": l40s_pool.pk,
            "on_demand_price_per_gpu_hour": "1.85",
            "compliance_zone": "hong_kong",
        },
        {
            "name": "Owned H100 PCIe",
            "kind": "owned",
            "gpu_model": h100.pk,
            "source_pool": beijing.pk,
            "on_demand_price_per_gpu_hour": "2.49",
            "compliance_zone": "mainland_china",
            "throughput_basis": "decode_ceiling",
            "storage_per_month": "300",
        },
        {
            "name": "Hybrid L40S",
            "kind": "hybrid",
            "gpu_model": l40s.pk,
            "source_pool": l40s_pool.pk,
            "on_demand_price_per_gpu_hour": "1.85",
            "compliance_zone": "hong_kong",
        },
    ]
    for position, values in enumerate(options, start=1):
        response = procurement_client.post(create, {"position": position, **common, **values})
        assert response.status_code == 302, response.content.decode()[:3000]

    page = _detail(procurement_client, scenario).content.decode()
    result = build_comparison(scenario_queryset().get(pk=scenario.pk))
    assert result.demand is not None and not result.info.fallback_used
    assert result.info.hours == 14 * 24
    assert [row.problem for row in result.rows] == ["", "", "", ""]
    for row in result.rows:
        assert f"{row.result.total_cost:,.0f} USD" in page
    hybrid = result.rows[3].result
    assert 0 < hybrid.baseline_gpus < hybrid.peak_gpus
    cheapest = result.comparison.cheapest
    assert cheapest.total_cost <= min(row.result.total_cost for row in result.rows)
    assert result.comparison.recommendation in page.replace("&#x27;", "'")
    # The faster H100 needs fewer GPUs at the peak than the L40S options.
    assert result.rows[2].result.peak_gpus < result.rows[0].result.peak_gpus
    assert "ICP filing needed" in page


@pytest.mark.django_db
def test_form_errors_name_the_field(procurement_client, scenario):
    response = procurement_client.post(
        reverse("procurement:scenario_create"),
        {
            "name": "Bad",
            "horizon_months": "36",
            "currency": "USD",
            "usd_exchange_rate": "1",
            "demand_source": "entered",
            "window_days": "14",
            "reference_efficiency": "0.4",
            "compute_precision": "bf16",
            "entered_hourly_profile": "1,2,x",
        },
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "GPU-hours per month is needed when the demand is" in body
    assert "Reference GPU is needed" in body
    assert "Give 24 weights, one per hour from 0 to 23 (got 3)." in body

    response = procurement_client.post(
        reverse("procurement:option_create", args=[scenario.slug]),
        {
            "name": "Reserve",
            "kind": "reserved",
            "position": "3",
            "gpu_model": scenario.demand_pool.gpu_model.pk,
            "compliance_zone": "other",
            "hybrid_baseline": "reserved",
            "throughput_basis": "decode_ceiling",
            "efficiency": "0.4",
            "baseline_gpus": "4",
        },
    )
    body = response.content.decode()
    assert "Reserved price per GPU-hour (USD) is needed for a cloud reserved option" in body
    assert "Baseline GPUs apply to hybrid options only." in body
    assert "The decode ceiling needs a model" in body


@pytest.mark.django_db
def test_reader_reads_but_cannot_change_or_export(client, make_user, scenario):
    client.force_login(make_user("reader"))
    page = _detail(client, scenario).content.decode()
    assert "7,300 USD" in page
    assert "Export CSV" not in page and ">Edit<" not in page
    export_url = reverse("procurement:export_create", args=[scenario.slug])
    assert client.post(export_url, {"format": "csv"}).status_code == 403
    edit_url = reverse("procurement:scenario_edit", args=[scenario.slug])
    assert client.post(edit_url, {"name": "x"}).status_code == 403
    option = scenario.options.first()
    delete_url = reverse("procurement:option_delete", args=[scenario.slug, option.pk])
    assert client.post(delete_url).status_code == 403
    assert ScenarioOption.objects.filter(pk=option.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["lead", "ops"])
def test_other_roles_may_not_create_scenarios(client, make_user, role):
    client.force_login(make_user(role))
    assert client.get(reverse("procurement:scenario_create")).status_code == 403


@pytest.mark.django_db
def test_delete_asks_for_confirmation_first(procurement_client, scenario):
    url = reverse("procurement:scenario_delete", args=[scenario.slug])
    page = procurement_client.get(url).content.decode()
    assert "This cannot be undone." in page
    assert Scenario.objects.filter(pk=scenario.pk).exists()
    assert procurement_client.post(url).status_code == 302
    assert not Scenario.objects.filter(pk=scenario.pk).exists()


@pytest.mark.django_db
def test_changes_are_kept_in_the_history(procurement_client, scenario):
    url = reverse("procurement:scenario_edit", args=[scenario.slug])
    response = procurement_client.post(
        url,
        {
            "name": scenario.name,
            "slug": scenario.slug,
            "horizon_months": "24",
            "currency": "USD",
            "usd_exchange_rate": "1",
            "demand_source": "measured_pool",
            "demand_pool": scenario.demand_pool.pk,
            "window_days": "7",
            "reference_efficiency": "0.4",
            "compute_precision": "bf16",
        },
    )
    assert response.status_code == 302
    page = _detail(procurement_client, scenario).content.decode()
    assert "<strong>Horizon (months)</strong>: 1 → 24" in page


@pytest.mark.django_db
def test_skypilot_prices_become_on_demand_options(procurement_client, scenario):
    h100 = GpuModel.objects.get(slug="h100-sxm")
    a100_80 = GpuModel.objects.get(slug="a100-sxm-80gb")
    response = procurement_client.post(
        reverse("procurement:price_import", args=[scenario.slug]),
        {
            "file": SimpleUploadedFile("vms.csv", SKYPILOT_CSV.read_bytes()),
            "provider": "Lambda",
            "region": "us-east-1",
            "gpu_models": [h100.pk, a100_80.pk],
        },
    )
    body = response.content.decode()
    assert response.status_code == 200, body[:2000]
    option = ScenarioOption.objects.get(scenario=scenario, name="Lambda on-demand · H100 SXM")
    # gpu_1x_h100_sxm5 $3.29, 2x $6.38 (3.19), 4x $12.36 (3.09), 8x $23.92 (2.99): cheapest.
    assert option.on_demand_price_per_gpu_hour == Decimal("2.9900")
    assert option.compliance_zone == "united_states"
    assert "gpu_8x_h100_sxm5" in option.price_note
    a100 = ScenarioOption.objects.get(scenario=scenario, name="Lambda on-demand · A100 SXM 80GB")
    assert a100.on_demand_price_per_gpu_hour == Decimal("1.7900")  # $14.32 ÷ 8
    assert "could be" in body  # the 40 GB A100 rows name their ambiguity


@pytest.mark.django_db
def test_a_file_that_is_not_a_price_catalog_is_refused_with_the_reason(
    procurement_client, scenario
):
    response = procurement_client.post(
        reverse("procurement:price_import", args=[scenario.slug]),
        {
            "file": SimpleUploadedFile("x.csv", b"name,price\nfoo,1\n"),
            "provider": "Lambda",
            "gpu_models": [GpuModel.objects.get(slug="h100-sxm").pk],
        },
    )
    assert "Not a SkyPilot price catalog: the header lacks InstanceType" in (
        response.content.decode()
    )


@pytest.mark.django_db
def test_list_has_an_empty_state_and_then_the_scenarios(procurement_client, pool):
    page = procurement_client.get(reverse("procurement:scenario_list")).content.decode()
    assert "No comparison scenarios yet" in page
    Scenario.objects.create(name="One", slug="one", demand_pool=pool, demand_source="measured_pool")
    page = procurement_client.get(reverse("procurement:scenario_list")).content.decode()
    assert ">One</a>" in page


@pytest.mark.django_db
def test_read_api_has_the_comparison(client, make_user, scenario):
    client.force_login(make_user("reader"))
    listing = client.get("/api/v1/scenarios/").json()
    assert [item["slug"] for item in listing["results"]] == ["test-scenario"]
    detail = client.get("/api/v1/scenarios/test-scenario/").json()
    totals = [line["result"]["cost"]["total"] for line in detail["comparison"]["options"]]
    assert totals == ["7300.00", "5840.00"]  # money as decimal strings, to the cent
    assert detail["comparison"]["options"][1]["result"]["optimal_baseline_gpus"] == 2


@pytest.mark.django_db
def test_the_history_says_what_became_of_the_options_in_either_language(
    procurement_client, scenario
):
    """The scenario's card gathers its options' records too: an option's price change and
    an option's removal are lines of their own, diffed against the record before."""
    rent = scenario.options.get(name="Rent H100")
    rent.on_demand_price_per_gpu_hour = Decimal("2.50")
    rent.save()
    scenario.options.get(name="Hybrid H100").delete()
    page = _detail(procurement_client, scenario).content.decode()
    history = page[page.index('id="history"') :]
    assert "changed · Option Rent H100" in history
    assert "<strong>On-demand price per GPU-hour</strong>: 2.0000 → 2.5000" in history
    assert "deleted · Option Hybrid H100" in history
    assert "created · Scenario" in history
    chinese = procurement_client.get(
        reverse("procurement:scenario_detail", args=[scenario.slug]),
        headers={"Accept-Language": "zh-CN"},
    ).content.decode()
    chinese_history = chinese[chinese.index('id="history"') :]
    assert "修改 · 选项 Rent H100" in chinese_history
    assert "删除 · 选项 Hybrid H100" in chinese_history
    assert "Option Rent" not in chinese_history
