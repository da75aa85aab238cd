"""Pool and workload pages as a technical lead uses them: filters, totals, forms that
say what is wrong, prices computed from cost inputs, fit and placement on the pages."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.demo.fleet import DEMO_POOLS, DEMO_WORKLOADS
from apps.pools import memory, models
from apps.pools.models import Pool, Workload
from apps.reports.cache import bump_reports_version


@pytest.fixture
def lead_client(client, make_user):
    client.force_login(make_user("lead"))
    return client


def test_model_choices_are_the_engines_choices():
    """The forms, the API and memory.py must accept the same precision names."""
    assert tuple(models.TrainingPrecision.values) == memory.TRAINING_PRECISIONS
    assert tuple(models.InferencePrecision.values) == memory.INFERENCE_PRECISIONS
    assert tuple(models.Optimizer.values) == memory.OPTIMIZERS
    assert tuple(models.Recompute.values) == memory.RECOMPUTE_MODES


@pytest.mark.django_db
def test_demo_fleet_has_every_purpose_and_deployment_and_every_fit_outcome(demo):
    from apps.pools.assessment import assess_workload

    assert {spec["purpose"] for spec in DEMO_POOLS} == set(models.Purpose.values)
    assert {spec["deployment"] for spec in DEMO_POOLS} == set(models.Deployment.values)
    assessments = [assess_workload(workload) for workload in Workload.objects.with_pool()]
    assert len(assessments) == len(DEMO_WORKLOADS)
    statuses = {assessment.status for assessment in assessments}
    assert {"fits", "does_not_fit", "fits_with_spare"} <= statuses
    codes = {finding.code for assessment in assessments for finding in assessment.findings}
    assert {
        "training_in_inference_pool",
        "inference_in_training_pool",
        "online_inference_in_mixed_pool",
        "multi_node_training_on_pcie",
        "quantization_not_validated",
        "software_not_pinned",
        "does_not_fit",
    } <= codes


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"purpose": "inference"}, lambda spec: spec["purpose"] == "inference"),
        ({"deployment": "on_premises"}, lambda spec: spec["deployment"] == "on_premises"),
        ({"region": "cn-shanghai"}, lambda spec: spec["region"] == "cn-shanghai"),
        ({"gpu_model": "h100-sxm"}, lambda spec: spec["gpu_model"] == "h100-sxm"),
        (
            {"purpose": "training", "gpu_model": "h100-sxm"},
            lambda spec: spec["purpose"] == "training" and spec["gpu_model"] == "h100-sxm",
        ),
    ],
)
def test_pool_list_filters_and_totals(lead_client, demo, query, expected):
    matching = [spec for spec in DEMO_POOLS if expected(spec)]
    response = lead_client.get(reverse("pools:pool_list"), query)
    assert [pool.slug for pool in response.context["page"]] == sorted(
        (spec["slug"] for spec in matching),
        key=lambda slug: next(spec["name"] for spec in matching if spec["slug"] == slug),
    )
    totals = response.context["totals"]
    assert totals["gpu_total"] == sum(spec["gpu_count"] for spec in matching)
    # Independent sum over the stored effective prices of the same pools priced in USD;
    # the others (the Shanghai pool's yuan) are counted apart, never added to dollars.
    pools = [Pool.objects.get(slug=spec["slug"]) for spec in matching]
    expected_price = sum(pool.price_per_hour_usd for pool in pools if pool.currency == "USD")
    assert (totals["price_per_hour_usd_total"] or 0) == expected_price
    assert totals["other_currency_pools"] == sum(pool.currency != "USD" for pool in pools)


@pytest.mark.django_db
def test_pool_list_htmx_filter_returns_only_the_table(lead_client, demo):
    response = lead_client.get(
        reverse("pools:pool_list"),
        {"purpose": "mixed"},
        headers={"HX-Request": "true", "HX-Target": "pool-table"},
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="pool-table">')
    assert "Mixed · A100 80GB · on-prem" in body and "pool-filter" not in body


@pytest.mark.django_db
def test_pool_list_sorts_by_price_descending(lead_client, demo):
    response = lead_client.get(reverse("pools:pool_list"), {"sort": "-price"})
    prices = [pool.effective_price_per_gpu_hour_usd for pool in response.context["page"]]
    assert prices == sorted(prices, reverse=True)


@pytest.mark.django_db
def test_pool_list_query_count_does_not_grow_with_pools(lead_client, demo, gpu_model):
    def count_queries():
        # The usage and cost columns' figures are computed each time, not read from the
        # cache: a pool created here bumps the reports version only once committed.
        bump_reports_version()
        with CaptureQueriesContext(connection) as context:
            assert lead_client.get(reverse("pools:pool_list")).status_code == 200
        return len(context)

    before = count_queries()
    for index in range(10):
        Pool.objects.create(
            name=f"Extra {index}",
            slug=f"extra-{index}",
            purpose="training",
            deployment="cloud_on_demand",
            gpu_model=gpu_model,
            gpu_count=8,
            on_demand_price_per_gpu_hour_usd=Decimal("2"),
        )
    assert count_queries() == before


@pytest.mark.django_db
def test_pool_list_paginates(lead_client, gpu_model, role_groups):
    for index in range(30):
        Pool.objects.create(
            name=f"Pool {index:02d}",
            slug=f"pool-{index:02d}",
            purpose="inference",
            deployment="cloud_on_demand",
            gpu_model=gpu_model,
            gpu_count=8,
            on_demand_price_per_gpu_hour_usd=Decimal("1"),
        )
    first = lead_client.get(reverse("pools:pool_list"))
    second = lead_client.get(reverse("pools:pool_list"), {"page": 2})
    assert len(first.context["page"].object_list) == 25
    assert len(second.context["page"].object_list) == 5
    assert "Showing 26–30 of 30" in second.content.decode()


POOL_FORM = {
    "name": "Owned H100",
    "slug": "",
    "purpose": "training",
    "deployment": "bare_metal",
    "compliance_zone": "united_states",
    "gpu_model": "h100-sxm",
    "gpu_count": 16,
    "gpus_per_node": 8,
    "interconnect": "nvlink_infiniband",
    "purchase_price_per_gpu_usd": "30000",
    "amortisation_months": "48",
    "power_price_per_kwh_usd": "0.09",
    "pue": "1.3",
    "operations_per_month_usd": "10000",
    "colocation_per_month_usd": "6000",
}


@pytest.mark.django_db
def test_lead_creates_an_owned_pool_and_its_price_follows_the_inputs(lead_client, gpu_model):
    response = lead_client.post(
        reverse("pools:pool_create"), {**POOL_FORM, "gpu_model": gpu_model.pk}
    )
    assert response.status_code == 302
    pool = Pool.objects.get(slug="owned-h100")
    # FORMULAS.md: 30000/(48×730) + 0.7 kW × 1.3 × 0.09 + 16000/730/16, by hand:
    expected = 30000 / (48 * 730) + 0.7 * 1.3 * 0.09 + 16000 / 730 / 16
    assert float(pool.effective_price_per_gpu_hour_usd) == pytest.approx(expected, abs=1e-4)
    page = lead_client.get(pool.get_absolute_url()).content.decode()
    assert "Amortised purchase" in page and "/GPU-h" in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"gpu_count": 12}, "gpu_count", "do not fill whole nodes of 8"),
        (
            {"purchase_price_per_gpu_usd": "-5"},
            "purchase_price_per_gpu_usd",
            "must be between 0 and 1000000 USD per GPU; got -5",
        ),
        ({"pue": "0.8"}, "pue", "PUE must be between 1.0 and 3.0; got 0.8"),
        ({"amortisation_months": ""}, "amortisation_months", "needed for a bare-metal"),
        (
            {"deployment": "cloud_on_demand"},
            "on_demand_price_per_gpu_hour_usd",
            "needed for a cloud on-demand pool",
        ),
        ({"slug": "new"}, "slug", "reserved"),
    ],
)
def test_pool_form_names_the_field_and_saves_nothing(
    lead_client, gpu_model, change, field, message
):
    response = lead_client.post(
        reverse("pools:pool_create"), {**POOL_FORM, "gpu_model": gpu_model.pk, **change}
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert set(errors) == {field}, errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert message in response.content.decode()
    assert not Pool.objects.exists()


@pytest.mark.django_db
def test_workload_form_rejects_a_data_parallel_degree_that_does_not_match(lead_client, pool):
    response = lead_client.post(
        reverse("pools:workload_create"),
        {
            "name": "Bad layout",
            "kind": "full_fine_tune",
            "model_architecture": "",
            "pool": pool.pk,
            "gpu_count": 16,
            "status": "planned",
            "precision": "bf16",
            "optimizer": "adamw",
            "zero_stage": 0,
            "data_parallel": 3,
            "tensor_parallel": 4,
            "pipeline_parallel": 1,
            "recompute": "none",
            "micro_batch_size": 1,
            "seq_len": 4096,
            "expected_mfu": "0.4",
            "weight_precision": "bf16",
            "kv_cache_precision": "bf16",
            "context_length": 4096,
            "concurrent_sequences": 1,
            "inference_tensor_parallel": 1,
        },
    )
    assert response.status_code == 200
    assert "set data parallel to 4" in " ".join(response.context["form"].errors["data_parallel"])
    assert not Workload.objects.filter(name="Bad layout").exists()


@pytest.mark.django_db
def test_workload_page_shows_breakdown_findings_and_recommendations(lead_client, demo):
    response = lead_client.get(
        reverse("pools:workload_detail", kwargs={"slug": "nightly-batch-summaries"})
    )
    page = response.content.decode()
    assessment = response.context["assessment"]
    assert assessment.status == "does_not_fit"
    assert 'id="chart-memory"' in page and "Runtime overhead" in page
    assert "Does not fit" in page
    assert assessment.recommendations, "a workload that does not fit gets alternatives"
    prices = [
        option.price_per_hour_usd
        for option in assessment.recommendations
        if option.price_per_hour_usd is not None
    ]
    assert prices == sorted(prices)
    for option in assessment.recommendations:
        assert option.memory_per_gpu_bytes <= option.gpu_model.memory_bytes


@pytest.mark.django_db
def test_pool_page_flags_online_inference_in_a_mixed_pool(lead_client, demo):
    page = lead_client.get(
        reverse("pools:pool_detail", kwargs={"slug": "mixed-a100-onprem"})
    ).content.decode()
    assert 'data-finding="online_inference_in_mixed_pool"' in page
    assert "training jobs preempt it" in page


@pytest.mark.django_db
def test_pool_page_shows_icp_filing_for_mainland_china_only(lead_client, demo):
    shanghai = lead_client.get(reverse("pools:pool_detail", kwargs={"slug": "train-h100-sh"}))
    hong_kong = lead_client.get(reverse("pools:pool_detail", kwargs={"slug": "infer-l40s-hk"}))
    assert "needs an ICP filing" in shanghai.content.decode()
    assert "No ICP filing needed" in hong_kong.content.decode()


@pytest.mark.django_db
def test_calculator_recomputes_from_query_and_reports_field_errors(lead_client):
    url = reverse("pools:calculator")
    ok = lead_client.get(
        url,
        {
            "mode": "inference",
            "model": "llama-3-8b",
            "gpu_model": "h100-sxm",
            "tensor_parallel": 1,
            "weight_precision": "bf16",
            "kv_cache_precision": "bf16",
            "context_length": 8192,
            "concurrent_sequences": 1,
            "precision": "bf16",
            "optimizer": "adamw",
            "zero_stage": 0,
            "pipeline_parallel": 1,
            "recompute": "none",
            "micro_batch_size": 1,
            "seq_len": 4096,
        },
        headers={"HX-Request": "true", "HX-Target": "calculator-result"},
    )
    body = ok.content.decode()
    assert body.lstrip().startswith('<div class="card" id="calculator-result">')
    # Same numbers as the API test: 54 sequences of 8,192 tokens on an H100.
    assert ok.context["estimate"]["max_concurrent_sequences"] == 54
    bad = lead_client.get(url, {"mode": "training", "params": "", "model": ""})
    assert "Choose a model architecture, or give the parameter count." in bad.content.decode()
