"""The workload assessment's cost per 10⁶ tokens on a pool priced in yuan: the pool's
price converted to USD at this month's rate (apps/currencies/rates.py).

Hand computation: 21.50 CNY per GPU-hour at 7.10 CNY per USD = 3.0281690… USD per
GPU-hour; the cost per 10⁶ tokens at the decode ceiling is that × the tensor-parallel
GPUs ÷ (ceiling tokens/s × 3,600) × 10⁶."""

from decimal import Decimal

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
