"""A small fleet whose showback adds up on paper, for March 2026 (744 hours).

Cloud on-demand pools: a GPU-hour costs its price whether measured or not (the price
includes power), so a pool costs GPUs × price × 744 over the month. On 10 March, hours
0–9, pools A and B report every GPU and their workloads' labels attribute GPU-hours:

- A (Research, 4 GPUs × $2): a1 (no team: Research) 2 GPU/h, a2 (Serving) 1 GPU/h;
- B (shared, 8 GPUs × $3): b1 (Research) 2/h, b2 (Serving) 3/h, b3 (no team) 1/h;
- C (Serving, 2 GPUs × $1): no workload;
- D (shared, 1 GPU × $5): one workload, d1 (Research), running throughout on its pool's
  only GPU: 1 ÷ 1 of every hour, the whole pool.

The labelled workloads are planned: only their labels give them cost (apps/reports/split.py).
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from apps.pools.models import WorkloadStatus
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyUsage
from apps.telemetry.rollups.days import rebuild_days
from tests.factories import PoolFactory, TeamFactory, WorkloadFactory, status_history

MONTH_START = datetime(2026, 3, 1, tzinfo=UTC)
MONTH_END = datetime(2026, 4, 1, tzinfo=UTC)
MONTH_HOURS = 744
USAGE_START = datetime(2026, 3, 10, tzinfo=UTC)
USAGE_HOURS = 10

POOLS = {  # slug → (GPUs, USD per GPU-hour, team key)
    "pool-a": (4, 2, "research"),
    "pool-b": (8, 3, None),
    "pool-c": (2, 1, "serving"),
    "pool-d": (1, 5, None),
}
ATTRIBUTED = {  # workload slug → (pool, team key, GPU-hours allocated per hour)
    "a1": ("pool-a", None, 2),
    "a2": ("pool-a", "serving", 1),
    "b1": ("pool-b", "research", 2),
    "b2": ("pool-b", "serving", 3),
    "b3": ("pool-b", None, 1),
}


def make_fleet():
    teams = {
        "research": TeamFactory(name="Research", slug="research"),
        "serving": TeamFactory(name="Serving", slug="serving"),
    }
    pools = {}
    for slug, (gpus, price, team) in POOLS.items():
        pools[slug] = PoolFactory(
            name=slug.upper(),
            slug=slug,
            gpu_count=gpus,
            on_demand_price_per_gpu_hour_usd=Decimal(price),
            team=teams.get(team),
            in_service_from=MONTH_START - timedelta(days=60),
        )
    workloads = {}
    for slug, (pool, team, _per_hour) in ATTRIBUTED.items():
        workloads[slug] = WorkloadFactory(
            name=slug, slug=slug, pool=pools[pool], team=teams.get(team), gpu_count=1
        )
    workloads["d1"] = WorkloadFactory(
        name="d1", slug="d1", pool=pools["pool-d"], team=teams["research"], gpu_count=1
    )
    status_history(workloads["d1"], (MONTH_START - timedelta(days=60), WorkloadStatus.RUNNING))
    hours = [USAGE_START + timedelta(hours=step) for step in range(USAGE_HOURS)]
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pools[slug],
            hour=hour,
            reporting_gpus=pools[slug].gpu_count,
            capacity_gpu_hours=pools[slug].gpu_count,
            busy_gpu_hours=pools[slug].gpu_count / 2,
            avg_utilization_pct=50,
            max_utilization_pct=50,
        )
        for slug in ("pool-a", "pool-b")
        for hour in hours
    )
    WorkloadHourlyUsage.objects.bulk_create(
        WorkloadHourlyUsage(
            workload=workloads[slug], hour=hour, allocated_gpu_hours=per_hour, busy_gpu_hours=0.5
        )
        for slug, (_pool, _team, per_hour) in ATTRIBUTED.items()
        for hour in hours
    )
    rebuild_days(MONTH_START - timedelta(days=1), MONTH_END + timedelta(days=1))
    return teams, pools, workloads


def hand_split(hours_a=MONTH_HOURS, hours_b=MONTH_HOURS, hours_c=MONTH_HOURS, hours_d=MONTH_HOURS):
    """Each team's USD and the unattributed rest, from the definitions: an attributed
    workload gets its allocated ÷ measured GPU-hours of the pool's measured cost."""
    measured_a = 4 * USAGE_HOURS * 2  # capacity × price over the measured hours
    measured_b = 8 * USAGE_HOURS * 3
    a1 = measured_a * (2 * USAGE_HOURS) / (4 * USAGE_HOURS)
    a2 = measured_a * (1 * USAGE_HOURS) / (4 * USAGE_HOURS)
    b1 = measured_b * (2 * USAGE_HOURS) / (8 * USAGE_HOURS)
    b2 = measured_b * (3 * USAGE_HOURS) / (8 * USAGE_HOURS)
    pool_a, pool_b = 4 * 2 * hours_a, 8 * 3 * hours_b
    pool_c, pool_d = 2 * 1 * hours_c, 1 * 5 * hours_d
    research = (pool_a - a2) + b1 + pool_d  # a1 stays in Research's own pool either way
    serving = a2 + b2 + pool_c
    unattributed = pool_b - b1 - b2  # b3's share and the unlabelled rest
    assert a1 == 40
    return {"research": research, "serving": serving, "unattributed": unattributed}
