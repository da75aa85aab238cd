"""Money is Decimal from the database to the page: the cost report's and the showback's
amounts are ``Decimal`` at full precision, hours × prices taken exactly, so sums of
shares that are ratios of whole GPUs equal their pool's cost to the last digit.

Pools are cloud on-demand with no power term, in service long before the range.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from apps.pools.models import Purpose, WorkloadKind, WorkloadStatus
from apps.reports.cost.report import GROUP_BY_CHOICES, cost_report
from apps.reports.cost.rows import total_row
from apps.showback.selectors import showback
from apps.telemetry.models import PoolHourlyUsage
from tests.factories import PoolFactory, TeamFactory, WorkloadFactory, status_history

START = datetime(2026, 3, 9, tzinfo=UTC)
LONG_AGO = START - timedelta(days=30)
MONEY_FIELDS = (
    "cost_usd",
    "measured_cost_usd",
    "unmeasured_cost_usd",
    "idle_cost_usd",
    "interruption_cost_usd",
    "training_cost_usd",
    "inference_cost_usd",
)


def _pool(slug, gpus, price, **extra):
    return PoolFactory(
        name=slug,
        slug=slug,
        purpose=Purpose.INFERENCE,
        gpu_count=gpus,
        on_demand_price_per_gpu_hour_usd=Decimal(price),
        in_service_from=LONG_AGO,
        **extra,
    )


def _workload(slug, pool, gpus, **extra):
    workload = WorkloadFactory(
        name=slug, slug=slug, pool=pool, gpu_count=gpus, kind=WorkloadKind.ONLINE_INFERENCE, **extra
    )
    return status_history(workload, (LONG_AGO, WorkloadStatus.RUNNING))


def _measure(pool, hours, busy_gpu_hours):
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=START + timedelta(hours=step),
            reporting_gpus=pool.gpu_count,
            capacity_gpu_hours=pool.gpu_count,
            busy_gpu_hours=busy_gpu_hours,
            avg_utilization_pct=100 * busy_gpu_hours / pool.gpu_count,
            max_utilization_pct=100 * busy_gpu_hours / pool.gpu_count,
        )
        for step in range(hours)
    )


@pytest.mark.django_db
@pytest.mark.parametrize("group_by", GROUP_BY_CHOICES)
def test_every_money_field_of_every_grouping_is_decimal(group_by):
    measured = _pool("measured", 4, "2.3333")
    _measure(measured, 3, busy_gpu_hours=1)
    _pool("unmeasured", 8, "2.00")
    _workload("chat", measured, 2)
    rows = cost_report(START, START + timedelta(hours=7), group_by)
    for row in [*rows, total_row(rows)]:
        for name in MONEY_FIELDS:
            assert isinstance(getattr(row, name), Decimal), (row.key, name)
        for name in ("cost_per_busy_gpu_hour_usd",):
            value = getattr(row, name)
            assert value is None or isinstance(value, Decimal), (row.key, name)


@pytest.mark.django_db
@pytest.mark.parametrize("measured_hours", [0, 7])
def test_hours_times_a_price_is_exact(measured_hours):
    """7 h × 4 GPUs × $2.3333 = 28 × $2.3333 = $65.3324, measured or not; never
    65.33239999999999."""
    pool = _pool("odd-price", 4, "2.3333")
    _measure(pool, measured_hours, busy_gpu_hours=3)
    [row] = cost_report(START, START + timedelta(hours=7), "pool")
    assert row.cost_usd == Decimal("65.3324")
    # Busy 3 of 4 GPU-h measured: idle = $65.3324 × (1 − 21 ÷ 28) = $16.3331.
    expected_idle = Decimal("16.3331") if measured_hours else Decimal(0)
    assert row.idle_cost_usd == expected_idle


@pytest.mark.django_db
def test_a_shared_pool_split_adds_up_exactly_to_the_pools_cost():
    """8 GPUs at $2.00 for 10 h = $160.00. Chat declares 2 GPUs: 2/8 × $160 = $40.00;
    Search 4: 4/8 × $160 = $80.00; unallocated 2/8 × $160 = $40.00. Half the hours are
    measured (4 busy GPUs each) so both the measured and unmeasured terms are split."""
    pool = _pool("shared", 8, "2.00")
    _measure(pool, 5, busy_gpu_hours=4)
    _workload("chat", pool, 2)
    _workload("search", pool, 4)
    end = START + timedelta(hours=10)
    rows = {row.key: row for row in cost_report(START, end, "workload")}
    [pool_row] = cost_report(START, end, "pool")
    assert pool_row.cost_usd == Decimal("160.00")
    assert rows["chat"].cost_usd == Decimal("40.00")
    assert rows["search"].cost_usd == Decimal("80.00")
    assert rows["unallocated"].cost_usd == Decimal("40.00")
    assert sum((row.cost_usd for row in rows.values()), Decimal(0)) == pool_row.cost_usd
    # Idle: the 5 measured hours cost 5 × 8 × $2 = $80, half of it idle = $40; split
    # 2/8, 4/8, 2/8: $10, $20, $10.
    assert rows["chat"].idle_cost_usd == Decimal("10.00")
    assert rows["search"].idle_cost_usd == Decimal("20.00")
    assert rows["unallocated"].idle_cost_usd == Decimal("10.00")


@pytest.mark.django_db
def test_the_showback_total_is_decimal_and_the_pools_sum_exactly():
    """Team pool (Ops, 8 GPUs × $2.3333 × 10 h = $186.664): Search (ML, 2 GPUs) gets
    2/8 = $46.666, Ops the unallocated 6/8 = $139.998. Shared pool (no team, 4 GPUs ×
    $1.10 × 10 h = $44.00): Chat (ML, 1 GPU) 1/4 = $11.00, unattributed 3/4 = $33.00.
    Total $186.664 + $44.00 = $230.664."""
    ops, ml = TeamFactory(name="Ops"), TeamFactory(name="ML")
    team_pool = _pool("team-pool", 8, "2.3333", team=ops)
    shared_pool = _pool("shared-pool", 4, "1.10")
    _workload("search", team_pool, 2, team=ml)
    _workload("chat", shared_pool, 1, team=ml)
    end = START + timedelta(hours=10)
    figures = showback(START, end)
    pool_rows = cost_report(START, end, "pool")
    assert isinstance(figures.total_usd, Decimal)
    assert figures.total_usd == Decimal("230.664")
    assert figures.total_usd == sum((row.cost_usd for row in pool_rows), Decimal(0))
    assert figures.teams[ml.id].cost_usd == Decimal("57.666")  # $46.666 + $11.00
    assert figures.teams[ops.id].cost_usd == Decimal("139.998")
    assert figures.teams[ops.id].unallocated_usd == Decimal("139.998")
    assert figures.unattributed.cost_usd == Decimal("33.00")
    assert all(isinstance(usd, Decimal) for usd in figures.pool_cost_usd.values())
