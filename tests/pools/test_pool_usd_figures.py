"""A pool priced in yuan: its price in US dollars at this month's rate on its page and in
the API, and the workload assessment's cost per 10⁶ tokens (apps/currencies/rates.py); its
price breakdown writes its own amounts in yuan, never with a dollar sign.

Hand computation: 21.50 CNY per GPU-hour at 7.10 CNY per USD = 3.0281690… USD per
GPU-hour; the cost per 10⁶ tokens at the decode ceiling is that × the tensor-parallel
GPUs ÷ (ceiling tokens/s × 3,600) × 10⁶."""

from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.currencies.rates import month_of
from apps.pools.assessment import assess_workload
from tests.currencies.test_currencies import _rate
from tests.factories import PoolFactory, WorkloadFactory

CNY_PRICE = Decimal("21.50")
RATE = Decimal("7.10")


@pytest.fixture
def workload():
    pool = PoolFactory(
        name="Shanghai",
        currency="CNY",
        purpose="inference",
        on_demand_price_per_gpu_hour_usd=CNY_PRICE,
    )
    return WorkloadFactory(
        name="Chat", slug="chat", pool=pool, kind="online_inference", gpu_count=1, data_parallel=1
    )


@pytest.mark.django_db
def test_the_cost_per_million_tokens_uses_the_yuan_divided_by_the_months_rate(workload):
    _rate(month_of(timezone.now()), "CNY", RATE)
    assessment = assess_workload(workload)
    ceiling = assessment.decode_ceiling_tokens_per_second
    assert ceiling, assessment.missing
    usd = float(CNY_PRICE / RATE)
    expected = usd * workload.tensor_parallel / (ceiling * 3600) * 1e6
    assert assessment.cost_per_million_tokens_usd == pytest.approx(expected)
    assert assessment.missing_rate_text == ""


@pytest.mark.django_db
def test_without_the_months_rate_there_is_no_cost_and_the_rate_is_named(
    workload, client, make_user
):
    assessment = assess_workload(workload)
    assert assessment.decode_ceiling_tokens_per_second
    assert assessment.cost_per_million_tokens_usd is None
    month = f"{timezone.now():%Y-%m}"
    assert assessment.missing_rate_text == f"no CNY exchange rate for {month}"
    client.force_login(make_user("ops"))
    body = client.get(reverse("pools:workload_detail", kwargs={"slug": workload.slug})).content
    assert f"no CNY exchange rate for {month}" in body.decode()


@pytest.mark.django_db
def test_the_pool_api_and_page_give_the_price_in_usd_at_the_months_rate(
    workload, client, make_user
):
    pool = workload.pool
    _rate(month_of(timezone.now()), "CNY", RATE)
    client.force_login(make_user("ops"))
    data = client.get(f"/api/v1/pools/{pool.slug}/").json()
    usd = (CNY_PRICE / RATE).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
    assert Decimal(data["usd_per_gpu_hour"]) == usd == Decimal("3.0282")
    assert data["missing_exchange_rate"] is None
    assert Decimal(data["effective_price_per_gpu_hour_usd"]) == CNY_PRICE  # its own currency
    body = client.get(pool.get_absolute_url()).content.decode()
    assert "$3.0282" in body


@pytest.mark.django_db
def test_without_the_months_rate_the_pools_usd_price_is_unknown(workload, client, make_user):
    pool = workload.pool
    client.force_login(make_user("ops"))
    month = f"{timezone.now():%Y-%m}"
    data = client.get(f"/api/v1/pools/{pool.slug}/").json()
    assert data["usd_per_gpu_hour"] is None
    assert data["missing_exchange_rate"] == {"currency": "CNY", "month": month}
    body = client.get(pool.get_absolute_url()).content.decode()
    assert f"no CNY exchange rate for {month}" in body and "$21.5000" not in body
    assert "CN¥21.5000 per GPU-hour" in body  # the breakdown's formula
