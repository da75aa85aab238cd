"""Lendable capacity of a pool priced in yuan: the value per week is the lendable
GPU-hours × the pool's price converted to USD at the window's month's rate.

Hand computation: 21.50 CNY per GPU-hour at 7.10 CNY per USD = 3.0281690… USD per
GPU-hour (3.0282 to the API's four decimals)."""

from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.utils import timezone

from apps.currencies.rates import month_of
from apps.pools.hours import floor_hour
from apps.reports.lending.capacity import lendable_capacity
from tests.currencies.test_currencies import _rate
from tests.factories import PoolFactory

CNY_PRICE = Decimal("21.50")
RATE = Decimal("7.10")


def _pool(purpose="inference"):
    return PoolFactory(
        name="Shanghai", currency="CNY", purpose=purpose, on_demand_price_per_gpu_hour_usd=CNY_PRICE
    )


def _window_month():
    return month_of(floor_hour(timezone.now()) - timedelta(seconds=1))


@pytest.mark.django_db
def test_the_value_is_the_yuan_divided_by_the_months_rate(client, make_user):
    _rate(_window_month(), "CNY", RATE)
    (row,) = lendable_capacity([_pool()], timezone.now())
    assert row.price_per_gpu_hour_usd == CNY_PRICE / RATE
    assert row.value_usd_per_week == row.lendable_gpu_hours_per_week * CNY_PRICE / RATE
    assert row.missing_rate is None


@pytest.mark.django_db
def test_without_the_months_rate_the_value_is_unknown_and_the_rate_named(client, make_user):
    pool = _pool()
    (row,) = lendable_capacity([pool], timezone.now())
    assert row.value_usd_per_week is None and row.price_per_gpu_hour_usd is None
    assert row.missing_rate == ("CNY", _window_month())
    client.force_login(make_user("ops"))
    data = client.get(f"/api/v1/pools/{pool.slug}/lendable/").json()
    assert data["price_per_gpu_hour_usd"] is None and data["value_usd_per_week"] is None
    assert data["missing_exchange_rate"] == {
        "currency": "CNY",
        "month": f"{_window_month():%Y-%m}",
    }


@pytest.mark.django_db
def test_a_training_pools_price_in_the_api_is_converted_too(client, make_user):
    pool = _pool("training")
    _rate(month_of(timezone.now()), "CNY", RATE)
    client.force_login(make_user("ops"))
    data = client.get(f"/api/v1/pools/{pool.slug}/lendable/").json()
    assert Decimal(data["price_per_gpu_hour_usd"]) == (CNY_PRICE / RATE).quantize(
        Decimal("0.0001"), rounding=ROUND_HALF_UP
    )
