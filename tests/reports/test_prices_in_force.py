"""The cost of an hour is the price in force in that hour (apps/pools/prices.py).

Cloud pools only, whose cost is GPUs × hours × price (FORMULAS.md; apps/reports/
costmodel.py: a cloud price includes power), so every figure is a product done by hand
in the docstrings.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from apps.pools.hours import floor_hour
from apps.pools.models import Deployment, Pool, Purpose
from apps.pools.prices import record_prices
from apps.reports.cost.report import cost_report
from apps.telemetry.models import PoolHourlyUsage
from apps.telemetry.rollups.days import rebuild_days

ONE_HOUR = timedelta(hours=1)
GPUS = 4


def _cloud_pool(gpu_model, price: str, in_service_from: datetime) -> Pool:
    """A 4-GPU cloud on-demand pool priced from its service start, as the pool form
    creates it."""
    return record_prices(
        Pool(
            name="Priced",
            slug="priced",
            purpose=Purpose.INFERENCE,
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=gpu_model,
            gpu_count=GPUS,
            gpus_per_node=4,
            on_demand_price_per_gpu_hour_usd=Decimal(price),
            in_service_from=in_service_from,
        )
    )


def _change_price(pool: Pool, price: str, effective_from: datetime | None) -> Pool:
    pool.on_demand_price_per_gpu_hour_usd = Decimal(price)
    return record_prices(pool, effective_from)


def _telemetry(pool: Pool, start: datetime, end: datetime):
    """Every GPU reporting, half busy, every hour of [start, end); then the daily rows."""
    hours = int((end - start) / ONE_HOUR)
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=start + step * ONE_HOUR,
            reporting_gpus=GPUS,
            capacity_gpu_hours=GPUS,
            busy_gpu_hours=GPUS / 2,
            avg_utilization_pct=50,
            max_utilization_pct=50,
        )
        for step in range(hours)
    )
    rebuild_days(start - timedelta(days=1), end + timedelta(days=1))


def _pool_cost(start, end) -> float:
    (row,) = cost_report(start, end, group_by="pool")
    return row.cost_usd


@pytest.mark.django_db
def test_a_window_across_a_price_change_costs_each_hour_at_its_price(gpu_model):
    """4 GPUs, 10 h at $2.00 then 10 h at $1.00: 4 × (10 × 2.00 + 10 × 1.00) = $120.00."""
    change = datetime(2026, 3, 10, 12, tzinfo=UTC)
    pool = _cloud_pool(gpu_model, "2.00", datetime(2026, 1, 1, tzinfo=UTC))
    _change_price(pool, "1.00", change)
    _telemetry(pool, change - 10 * ONE_HOUR, change + 10 * ONE_HOUR)

    assert _pool_cost(change - 10 * ONE_HOUR, change + 10 * ONE_HOUR) == pytest.approx(120.00)


@pytest.mark.django_db
def test_whole_days_with_a_change_at_noon_are_costed_hour_by_hour(gpu_model):
    """60 h from 9 March 18:00 to 12 March 06:00 (two whole days read from daily rows),
    the price falling from $2.00 to $1.00 at noon on 10 March, no telemetry in the first
    5 hours:

    - before the change: 18 h (9 March 18:00 → 10 March 12:00) at $2.00, of them 5
      unmeasured; after: 42 h at $1.00;
    - cost = 4 × (18 × 2.00 + 42 × 1.00) = 4 × 78 = $312.00;
    - unmeasured = 4 × 5 × 2.00 = $40.00, measured = 4 × (13 × 2.00 + 42 × 1.00) = $272.00;
    - idle = measured × (1 − ½) = $136.00 (half the GPUs busy every hour).
    """
    start, end = datetime(2026, 3, 9, 18, tzinfo=UTC), datetime(2026, 3, 12, 6, tzinfo=UTC)
    pool = _cloud_pool(gpu_model, "2.00", datetime(2026, 1, 1, tzinfo=UTC))
    _change_price(pool, "1.00", datetime(2026, 3, 10, 12, tzinfo=UTC))
    _telemetry(pool, start + 5 * ONE_HOUR, end)

    (row,) = cost_report(start, end, group_by="pool")
    assert row.cost_usd == pytest.approx(312.00)
    assert row.unmeasured_cost_usd == pytest.approx(40.00)
    assert row.measured_cost_usd == pytest.approx(272.00)
    assert row.idle_cost_usd == pytest.approx(136.00)


@pytest.mark.django_db
def test_a_change_at_midnight_reads_the_daily_rows_at_each_days_price(gpu_model):
    """Two whole days, $3.00 on 10 March and $1.50 from 11 March 00:00:
    4 × 24 × 3.00 + 4 × 24 × 1.50 = 288 + 144 = $432.00."""
    start, end = datetime(2026, 3, 10, tzinfo=UTC), datetime(2026, 3, 12, tzinfo=UTC)
    pool = _cloud_pool(gpu_model, "3.00", datetime(2026, 1, 1, tzinfo=UTC))
    _change_price(pool, "1.50", datetime(2026, 3, 11, tzinfo=UTC))
    _telemetry(pool, start, end)

    assert _pool_cost(start, end) == pytest.approx(432.00)


@pytest.mark.django_db
def test_a_scheduled_price_leaves_past_and_current_hours_alone(gpu_model):
    """$2.00 now, $1.00 scheduled from tomorrow: the last 10 hours and the current one,
    without telemetry, cost 4 × 11 × 2.00 = $88.00, and the pool's price is still $2.00."""
    now_hour = floor_hour(timezone.now())
    pool = _cloud_pool(gpu_model, "2.00", now_hour - timedelta(days=30))
    _change_price(pool, "1.00", now_hour + timedelta(days=1))

    pool.refresh_from_db()
    assert pool.effective_price_per_gpu_hour_usd == Decimal("2.0000")
    assert pool.on_demand_price_per_gpu_hour_usd == Decimal("2.0000")
    assert _pool_cost(now_hour - 10 * ONE_HOUR, now_hour + ONE_HOUR) == pytest.approx(88.00)


@pytest.mark.django_db
def test_editing_a_price_today_leaves_last_months_report_as_signed(gpu_model, make_user):
    """Last month, every hour measured at $2.00 on 4 GPUs: 4 × hours × 2.00, before and
    after the API halves the price from the current hour."""
    this_month = floor_hour(timezone.now()).replace(day=1, hour=0)
    last_month = (this_month - timedelta(days=1)).replace(day=1)
    hours = int((this_month - last_month) / ONE_HOUR)
    pool = _cloud_pool(gpu_model, "2.00", last_month - timedelta(days=31))
    _telemetry(pool, last_month, this_month)
    signed = _pool_cost(last_month, this_month)
    assert signed == pytest.approx(GPUS * hours * 2.00)

    api = APIClient()
    api.force_authenticate(make_user("lead"))
    response = api.patch(
        f"/api/v1/pools/{pool.slug}/",
        {"on_demand_price_per_gpu_hour_usd": "1.00"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["effective_price_per_gpu_hour_usd"] == "1.0000"

    assert _pool_cost(last_month, this_month) == pytest.approx(signed)
    # The daily chart too: each day of last month, 4 × 24 × 2.00 = $192.00.
    from apps.reports.cost.daily import daily_split

    split = daily_split(last_month, this_month)
    assert split.measured_cost_usd[Purpose.INFERENCE] == pytest.approx([192.00] * (hours // 24))
    # The report page reads the same figure through its cache, invalidated by the edit.
    report = api.get(
        reverse("api-report-cost"),
        {"start": last_month.isoformat(), "end": this_month.isoformat()},
    )
    assert report.status_code == 200, report.content
    (row,) = report.json()
    # 4 GPUs × hours × $2.00, to the cent, as a decimal string.
    assert row["cost_usd"] == f"{GPUS * hours * 2}.00"


@pytest.mark.django_db
def test_peak_and_offpeak_costs_follow_the_price_in_force(gpu_model):
    """Peak hours 9–12 UTC. 10 March: $2.00 until 11:00, $1.00 from then on; telemetry
    08:00–14:00 (6 hours, 4 GPUs each):
    peak = 09:00, 10:00 at $2.00 + 11:00, 12:00 at $1.00 = 4 × (2 × 2 + 2 × 1) = $24.00;
    off-peak = 08:00 at $2.00 + 13:00 at $1.00 = 4 × (2 + 1) = $12.00."""
    from apps.pools.models import Workload, WorkloadKind
    from apps.reports.usage.peaks import peak_split
    from apps.telemetry.models import WorkloadHourlyRequests

    day = datetime(2026, 3, 10, tzinfo=UTC)
    pool = _cloud_pool(gpu_model, "2.00", datetime(2026, 1, 1, tzinfo=UTC))
    _change_price(pool, "1.00", day + 11 * ONE_HOUR)
    Pool.objects.filter(pk=pool.pk).update(peak_hours="9-12")
    _telemetry(pool, day + 8 * ONE_HOUR, day + 14 * ONE_HOUR)
    serving = Workload.objects.create(
        name="Chat", slug="chat", kind=WorkloadKind.ONLINE_INFERENCE, pool=pool, gpu_count=4
    )
    WorkloadHourlyRequests.objects.create(
        workload=serving,
        hour=day + 9 * ONE_HOUR,
        requests=10,
        input_tokens=0,
        output_tokens=0,
        errors=0,
    )

    (row,) = peak_split(day, day + timedelta(days=1))
    assert row.peak_cost_usd == pytest.approx(24.00)
    assert row.offpeak_cost_usd == pytest.approx(12.00)


@pytest.mark.django_db
def test_the_daily_cost_chart_prices_a_day_with_a_change_hour_by_hour(gpu_model):
    """10 March, $2.00 until noon and $1.00 after, every hour measured on 4 GPUs:
    4 × (12 × 2.00 + 12 × 1.00) = $144.00; 11 March, all at $1.00: 4 × 24 × 1.00 = $96.00."""
    from apps.reports.cost.daily import daily_split

    start, end = datetime(2026, 3, 10, tzinfo=UTC), datetime(2026, 3, 12, tzinfo=UTC)
    pool = _cloud_pool(gpu_model, "2.00", datetime(2026, 1, 1, tzinfo=UTC))
    _change_price(pool, "1.00", datetime(2026, 3, 10, 12, tzinfo=UTC))
    _telemetry(pool, start, end)

    split = daily_split(start, end)
    assert split.days == [start.date(), (start + timedelta(days=1)).date()]
    assert split.measured_cost_usd[Purpose.INFERENCE] == pytest.approx([144.00, 96.00])
    assert split.busy_gpu_hours[Purpose.INFERENCE] == pytest.approx([48.0, 48.0])


@pytest.mark.django_db
def test_the_explanation_shows_the_prices_in_force_in_the_range(gpu_model):
    """After the price falls to $1.00 at noon on 10 March, 9 March (24 h at $2.00) reads
    4 GPUs × 24 h × $2.00/GPU-h = $192.00, not today's price; the 20 hours across the
    change say each hour is at its own price."""
    from apps.reports.cost import explain

    pool = _cloud_pool(gpu_model, "2.00", datetime(2026, 1, 1, tzinfo=UTC))
    _change_price(pool, "1.00", datetime(2026, 3, 10, 12, tzinfo=UTC))
    _telemetry(pool, datetime(2026, 3, 9, tzinfo=UTC), datetime(2026, 3, 11, tzinfo=UTC))

    (before,) = cost_report(datetime(2026, 3, 9, tzinfo=UTC), datetime(2026, 3, 10, tzinfo=UTC))
    [cost] = explain.explain_figure(before, "cost_usd")
    assert cost.expression == "4 GPUs × 24 h × $2.00/GPU-h"
    assert cost.value == pytest.approx(192.00)

    change = datetime(2026, 3, 10, 12, tzinfo=UTC)
    (across,) = cost_report(change - 10 * ONE_HOUR, change + 10 * ONE_HOUR)
    [cost] = explain.explain_figure(across, "cost_usd")
    assert "prices in force" in cost.expression
    assert cost.value == pytest.approx(120.00)
