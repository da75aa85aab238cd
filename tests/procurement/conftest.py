from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from apps.procurement.models import Scenario, ScenarioOption
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests

START = datetime(2025, 3, 3, 0, tzinfo=UTC)
# Busy GPUs in four measured hours of the test pool (16 × H100 at $2.99 on demand).
BUSY = (2.0, 2.0, 6.0, 10.0)


@pytest.fixture
def procurement_client(client, make_user):
    client.force_login(make_user("procurement"))
    return client


@pytest.fixture
def measured_pool(pool, workload):
    return add_measurements(pool, workload)


@pytest.fixture
def scenario(measured_pool):
    return make_scenario(measured_pool)


def add_measurements(pool, workload):
    """Four hours of rollups for ``pool`` and of requests for ``workload``."""
    for index, busy in enumerate(BUSY):
        hour = START + timedelta(hours=index)
        PoolHourlyUsage.objects.create(
            pool=pool,
            hour=hour,
            reporting_gpus=16,
            capacity_gpu_hours=16,
            busy_gpu_hours=busy,
            avg_utilization_pct=busy / 16 * 100,
        )
        WorkloadHourlyRequests.objects.create(
            workload=workload,
            hour=hour,
            requests=1000,
            input_tokens=500_000,
            output_tokens=250_000,
            errors=0,
        )
    return pool


def make_scenario(measured_pool):
    """Measured pool, 1-month horizon; two options on the pool's GPU: on demand at $2
    and a hybrid reserving at $1."""
    scenario = Scenario.objects.create(
        name="Test scenario",
        slug="test-scenario",
        horizon_months=1,
        demand_source="measured_pool",
        demand_pool=measured_pool,
        window_days=7,
    )
    ScenarioOption.objects.create(
        scenario=scenario,
        position=1,
        name="Rent H100",
        kind="on_demand",
        gpu_model=measured_pool.gpu_model,
        on_demand_price_per_gpu_hour=Decimal("2"),
        region="us-east-1",
        compliance_zone="united_states",
    )
    ScenarioOption.objects.create(
        scenario=scenario,
        position=2,
        name="Hybrid H100",
        kind="hybrid",
        gpu_model=measured_pool.gpu_model,
        on_demand_price_per_gpu_hour=Decimal("2"),
        reserved_price_per_gpu_hour=Decimal("1"),
        region="cn-beijing",
        compliance_zone="mainland_china",
    )
    return scenario
