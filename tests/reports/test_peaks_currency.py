"""Peak and off-peak cost of a pool priced in yuan: each month's cost converted to USD at
its rate (apps/reports/usage/peaks.py), a month without a rate left out and named.

Hand computation: 4 GPUs at 21.50 CNY per GPU-hour for the 10 measured hours of
2026-03-10 08:00–18:00 UTC: 4 × 21.50 × 10 = 860 CNY; at 7.10 CNY per USD 860 ÷ 7.10 =
121.1267… → 121.13 USD over the peak and off-peak hours together."""

from decimal import ROUND_HALF_UP, Decimal

import pytest

from apps.reports.usage.peaks import peak_split
from apps.telemetry.models import WorkloadHourlyRequests
from tests.currencies.test_currencies import (
    CNY_PRICE,
    END,
    MARCH,
    ONE_HOUR,
    START,
    _pool,
    _rate,
    _telemetry,
)
from tests.factories import WorkloadFactory


@pytest.fixture
def pool(gpu_model):
    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    workload = WorkloadFactory(pool=pool, kind="online_inference", gpu_count=4)
    _telemetry(pool, START, END)
    WorkloadHourlyRequests.objects.bulk_create(
        WorkloadHourlyRequests(
            workload=workload,
            hour=START + step * ONE_HOUR,
            requests=1000,
            input_tokens=0,
            output_tokens=0,
            errors=0,
        )
        for step in range(10)
    )
    return pool


@pytest.mark.django_db
def test_the_peak_split_of_a_cny_pool_is_in_usd_at_the_months_rate(pool):
    _rate(MARCH, "CNY", "7.10")
    (row,) = peak_split(START, END, pool=pool)
    total = row.peak_cost_usd + row.offpeak_cost_usd
    expected = (4 * CNY_PRICE * 10 / Decimal("7.10")).quantize(Decimal("0.01"), ROUND_HALF_UP)
    assert total.quantize(Decimal("0.01"), ROUND_HALF_UP) == expected == Decimal("121.13")
    assert not row.missing_rates


@pytest.mark.django_db
def test_without_the_months_rate_the_cost_is_left_out_and_the_rate_named(pool):
    (row,) = peak_split(START, END, pool=pool)
    assert row.peak_cost_usd + row.offpeak_cost_usd == 0  # never 860 "dollars"
    assert row.missing_rates == {("CNY", MARCH)}
    assert row.peak_cost_per_1k_requests_usd is None
    assert row.offpeak_cost_per_1k_requests_usd is None
