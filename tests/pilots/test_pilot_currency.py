"""A pilot on its workload's own GPU model is costed at the pool's price converted to USD
at this month's rate (apps/currencies/rates.py), never the pool's yuan read as dollars.

Hand computation: 21.50 CNY per GPU-hour at 7.10 CNY per USD = 3.0281690… USD per
GPU-hour; one GPU at 1,000 output tokens/s makes 3.6 M tokens an hour, so 10⁶ tokens
cost 3.0281690… ÷ 3.6 = 0.8411580… USD (0.8412 to the API's four decimals)."""

from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.currencies.rates import month_of
from apps.pilots import selectors
from tests.currencies.test_currencies import _rate
from tests.factories import PilotResultFactory, PoolFactory, WorkloadFactory

CNY_PRICE = Decimal("21.50")
RATE = Decimal("7.10")
FOUR = Decimal("0.0001")


@pytest.fixture
def result():
    pool = PoolFactory(name="Shanghai", currency="CNY", on_demand_price_per_gpu_hour_usd=CNY_PRICE)
    workload = WorkloadFactory(name="Chat", slug="chat", pool=pool, kind="online_inference")
    return PilotResultFactory(workload=workload, output_tokens_per_second=1000.0)


@pytest.mark.django_db
def test_the_pools_price_is_its_yuan_divided_by_the_months_rate(result, client, make_user):
    _rate(month_of(timezone.now()), "CNY", RATE)
    priced = selectors.priced(result, result.workload)
    usd = CNY_PRICE / RATE
    assert priced.price_source == selectors.POOL_PRICE
    assert priced.price_per_gpu_hour_usd == pytest.approx(float(usd))
    per_million = usd / Decimal("3.6")
    assert priced.cost_per_million_output_tokens_usd == pytest.approx(float(per_million))

    client.force_login(make_user("ops"))
    data = client.get(f"/api/v1/pilots/{result.pk}/").json()
    assert Decimal(data["price_per_gpu_hour_usd"]) == usd.quantize(FOUR, rounding=ROUND_HALF_UP)
    assert Decimal(data["cost_per_million_output_tokens_usd"]) == per_million.quantize(
        FOUR, rounding=ROUND_HALF_UP
    )


@pytest.mark.django_db
def test_without_the_months_rate_the_pilot_has_no_price_and_names_the_rate(
    result, client, make_user
):
    priced = selectors.priced(result, result.workload)
    assert priced.price_source == selectors.MISSING_RATE
    assert priced.price_per_gpu_hour_usd is None
    assert priced.cost_per_million_output_tokens_usd is None
    month = f"{timezone.now():%Y-%m}"

    client.force_login(make_user("ops"))
    data = client.get(f"/api/v1/pilots/{result.pk}/").json()
    assert data["price_per_gpu_hour_usd"] is None and data["price_source"] == "missing_rate"
    page = client.get(reverse("pilots:pilot_list", kwargs={"slug": result.workload.slug}))
    body = page.content.decode()
    assert f"no CNY exchange rate for {month}" in body
    assert "$21.5000" not in body
