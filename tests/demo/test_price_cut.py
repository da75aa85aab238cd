"""The demo's price cut: the on-demand burst pool pays its earlier price until halfway
through the history and the list price after, and the cost report prices each hour at
the price in force then."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from apps.demo.fleet import PRICE_CUT_POOL, PRICE_CUT_USD
from apps.pools.hours import floor_hour
from apps.pools.models import Pool
from apps.reports.cost.report import cost_report


@pytest.mark.django_db
def test_the_demo_cost_report_prices_each_hour_at_the_price_in_force(demo):
    pool = Pool.objects.get(slug=PRICE_CUT_POOL)
    periods = list(pool.price_periods.order_by("effective_from"))
    before_usd, after_usd = PRICE_CUT_USD
    assert [period.on_demand_price_per_gpu_hour_usd for period in periods] == [
        before_usd,
        after_usd,
    ]
    assert pool.on_demand_price_per_gpu_hour_usd == after_usd
    cut_at = periods[1].effective_from
    start = periods[0].effective_from
    end = floor_hour(timezone.now())
    assert start < cut_at < end - timedelta(hours=1)

    # A second computation, written apart from the report's: each stored hour's GPU
    # capacity × the on-demand price of its side of the cut (a cloud pool pays no power).
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT SUM(capacity_gpu_hours * CASE WHEN hour < %s THEN %s ELSE %s END),
                   COUNT(*)
            FROM telemetry_poolhourlyusage
            WHERE pool_id = %s AND hour >= %s AND hour < %s AND reporting_gpus > 0
            """,
            [cut_at, before_usd, after_usd, pool.pk, start, end],
        )
        expected_usd, measured_hours = cursor.fetchone()
    hours = int((end - start) / timedelta(hours=1))
    assert measured_hours == hours  # every demo hour is measured: no unmeasured price

    (row,) = cost_report(start, end, "pool", pool_slug=PRICE_CUT_POOL)
    assert Decimal(str(row.cost_usd)).quantize(Decimal("0.01")) == Decimal(expected_usd).quantize(
        Decimal("0.01")
    )
    # And the cut changed the figure: at today's price throughout it would be less.
    capacity = sum(
        Decimal(str(value))
        for value in pool.hourly_usage.filter(hour__gte=start, hour__lt=end).values_list(
            "capacity_gpu_hours", flat=True
        )
    )
    assert Decimal(expected_usd) > capacity * after_usd
