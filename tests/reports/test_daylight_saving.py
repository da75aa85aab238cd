"""Hour-of-day curves across daylight-saving changes (apps/reports/usage/clock.py reads a row's
local hour by offset arithmetic per period, not ``AT TIME ZONE`` per row).

Expected values come from Python's zoneinfo applied hour by hour (``astimezone``), the
IANA database's rules, independently of the SQL. The US changes are the Energy Policy Act
of 2005's: second Sunday of March at 02:00 local (2026-03-08 07:00 UTC), first Sunday of
November at 02:00 local (2026-11-01 06:00 UTC). India (UTC+5:30) checks half-hour zones.
"""

import statistics
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from apps.pools.models import Deployment, Pool, Purpose, Workload, WorkloadKind
from apps.pools.services import save_pool
from apps.reports.span import Span
from apps.reports.usage.clock import offset_periods
from apps.reports.usage.curves import usage_profile, weekday_hour_heatmap
from apps.reports.usage.peaks import peak_split
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests
from tests.factories import SERVICE_START

NEW_YORK = ZoneInfo("America/New_York")
# Ten days around each US change; the hours in between are not written.
WINDOWS = (
    (datetime(2026, 3, 3, 0, tzinfo=UTC), 240),
    (datetime(2026, 10, 27, 0, tzinfo=UTC), 240),
)
PRICE_USD = Decimal("2.00")


def test_offset_periods_find_the_us_changes_of_2026():
    span = Span(datetime(2026, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    boundaries, offsets = offset_periods(span, ("America/New_York", "Asia/Kolkata", "UTC"))
    assert boundaries == (
        datetime(2026, 3, 8, 7, tzinfo=UTC),
        datetime(2026, 11, 1, 6, tzinfo=UTC),
    )
    assert offsets == {
        "America/New_York": [-300, -240, -300],
        "Asia/Kolkata": [330, 330, 330],
        "UTC": [0, 0, 0],
    }


def _utilization(hour: datetime) -> float:
    # Differs by UTC hour and by day, so a row on the wrong local hour shows.
    return float((hour.hour * 7 + hour.day * 3) % 97)


def _requests(hour: datetime) -> int:
    return 100 + hour.hour * 10 + hour.day


@pytest.fixture
def new_york_pool(gpu_model):
    pool = Pool(
        name="East inference",
        slug="east-inference",
        purpose=Purpose.INFERENCE,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=gpu_model,
        gpu_count=4,
        gpus_per_node=4,
        on_demand_price_per_gpu_hour_usd=PRICE_USD,
        in_service_from=SERVICE_START,
        timezone="America/New_York",
        peak_hours="9-17",
    )
    save_pool(pool)
    workload = Workload.objects.create(
        name="East chat",
        slug="east-chat",
        kind=WorkloadKind.ONLINE_INFERENCE,
        pool=pool,
        gpu_count=4,
    )
    hours = [start + timedelta(hours=step) for start, count in WINDOWS for step in range(count)]
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=hour,
            reporting_gpus=4,
            capacity_gpu_hours=4,
            busy_gpu_hours=4 * _utilization(hour) / 100,
            avg_utilization_pct=_utilization(hour),
        )
        for hour in hours
    )
    WorkloadHourlyRequests.objects.bulk_create(
        WorkloadHourlyRequests(
            workload=workload,
            hour=hour,
            requests=_requests(hour),
            input_tokens=0,
            output_tokens=0,
            errors=0,
        )
        for hour in hours
    )
    return pool, hours


@pytest.mark.django_db
@pytest.mark.parametrize("zone_name", ["America/New_York", "Asia/Kolkata"])
def test_profile_and_heatmap_follow_the_zone_across_its_changes(new_york_pool, zone_name):
    pool, hours = new_york_pool
    zone = ZoneInfo(zone_name)
    start, end = WINDOWS[0][0], WINDOWS[-1][0] + timedelta(hours=WINDOWS[-1][1])
    utilization = {hour: [] for hour in range(24)}
    requests = {hour: 0 for hour in range(24)}
    cells = {}
    for hour in hours:
        local = hour.astimezone(zone)
        utilization[local.hour].append(_utilization(hour))
        requests[local.hour] += _requests(hour)
        cells.setdefault((local.isoweekday(), local.hour), []).append(_utilization(hour))
    occurrences = {hour: 0 for hour in range(24)}
    moment = start
    while moment < end:
        occurrences[moment.astimezone(zone).hour] += 1
        moment += timedelta(hours=1)

    profile = usage_profile(start, end, zone, pool=pool)
    for row in profile:
        values = utilization[row.hour_of_day]
        assert row.avg_utilization_pct == pytest.approx(statistics.fmean(values)), row
        expected_p95 = statistics.quantiles(values, n=100, method="inclusive")[94]
        assert row.p95_utilization_pct == pytest.approx(expected_p95), row
        assert row.mean_requests_per_hour == pytest.approx(
            requests[row.hour_of_day] / occurrences[row.hour_of_day]
        )

    grid = weekday_hour_heatmap(start, end, zone)
    for weekday in range(1, 8):
        for hour in range(24):
            values = cells.get((weekday, hour))
            expected = statistics.fmean(values) if values else None
            assert grid[weekday - 1][hour] == pytest.approx(expected), (weekday, hour)


@pytest.mark.django_db
def test_peak_split_puts_each_hour_on_the_pools_local_clock(new_york_pool):
    """Peak is 09–17 New York time: 14–22 UTC in winter, 13–21 UTC in summer."""
    pool, hours = new_york_pool
    start, end = WINDOWS[0][0], WINDOWS[-1][0] + timedelta(hours=WINDOWS[-1][1])
    peak_cost = offpeak_cost = 0.0
    peak_requests = offpeak_requests = 0
    for hour in hours:
        cost = 4 * float(PRICE_USD)
        if 9 <= hour.astimezone(NEW_YORK).hour <= 17:
            peak_cost += cost
            peak_requests += _requests(hour)
        else:
            offpeak_cost += cost
            offpeak_requests += _requests(hour)
    (row,) = peak_split(start, end)
    assert row.pool == pool and row.peak_hours_configured
    assert row.peak_cost_usd == pytest.approx(peak_cost)
    assert row.offpeak_cost_usd == pytest.approx(offpeak_cost)
    assert (row.peak_requests, row.offpeak_requests) == (peak_requests, offpeak_requests)


@pytest.mark.parametrize(
    "zone_name", ["UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
)
def test_local_hour_counts_match_an_hour_by_hour_walk(zone_name):
    """Lord Howe shifts by 30 minutes for daylight saving: its local hours move by half."""
    import random

    from apps.reports.usage.clock import local_hour_counts

    zone = ZoneInfo(zone_name)
    generator = random.Random(20261129)
    for _ in range(25):
        start = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(hours=generator.randint(0, 20_000))
        span = Span(start, start + timedelta(hours=generator.randint(0, 9_000)))
        expected = [0] * 24
        moment = span.start
        while moment < span.end:
            expected[moment.astimezone(zone).hour] += 1
            moment += timedelta(hours=1)
        assert local_hour_counts(span, zone) == expected, span
