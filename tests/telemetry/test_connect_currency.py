"""Connect's first hours: a CNY pool's idle cost is its idle GPU-hours × its price
converted to USD at this month's rate (apps/currencies/rates.py), never its yuan.

Hand computation: 4 GPUs, 3 hours with 2 busy GPUs each = 6 idle GPU-hours; at 21.50 CNY
per GPU-hour and 7.10 CNY per USD: 6 × 21.50 ÷ 7.10 = 129 ÷ 7.10 = 18.1690… → 18.17 USD."""

from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.utils import timezone

from apps.currencies.rates import month_of
from apps.pools.hours import floor_hour
from apps.telemetry.models import ImportRun
from apps.telemetry.pull.connect import POOL_IDS_ARGUMENT, first_hours
from tests.currencies.test_currencies import _rate, _telemetry
from tests.factories import PoolFactory

CNY_PRICE = Decimal("21.50")
RATE = Decimal("7.10")


@pytest.fixture
def run():
    pool = PoolFactory(
        name="Shanghai", currency="CNY", gpu_count=4, on_demand_price_per_gpu_hour_usd=CNY_PRICE
    )
    since = floor_hour(timezone.now()) - timedelta(hours=3)
    _telemetry(pool, since, since + timedelta(hours=3))
    return ImportRun.objects.create(
        kind="gpu",
        format="prometheus",
        source=ImportRun.Source.PROMETHEUS,
        task_arguments={"since": since.isoformat(), POOL_IDS_ARGUMENT: [pool.pk]},
    )


@pytest.mark.django_db
def test_a_cny_pools_idle_cost_is_its_yuan_divided_by_the_months_rate(run):
    _rate(month_of(timezone.now()), "CNY", RATE)
    (row,) = first_hours(run)
    expected = (6 * CNY_PRICE / RATE).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    assert row.idle_cost_usd == expected == Decimal("18.17")
    assert row.missing_rate_text == ""


@pytest.mark.django_db
def test_without_the_months_rate_the_idle_cost_is_unknown_and_names_the_rate(run):
    (row,) = first_hours(run)
    assert row.idle_cost_usd is None  # never 6 × 21.50 = 129 as dollars
    assert row.missing_rate_text == f"no CNY exchange rate for {timezone.now():%Y-%m}"
