"""The demo stays alive: each seed extends the demo usage up to the current hour, the same
curve hour by hour, and a second seed within the hour changes nothing."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db.models import Max, Min, Sum
from django.utils import timezone

from apps.demo.fleet import DEMO_POOLS
from apps.pools.models import Pool, Purpose, Workload, WorkloadKind
from apps.reports.demo import DEMO_DAYS, seed_usage_demo
from apps.telemetry.models import (
    PoolDailyUsage,
    PoolHourlyUsage,
    WorkloadDailyRequests,
    WorkloadHourlyRequests,
)

FIRST_SEED = datetime(2026, 11, 20, 10, 30, tzinfo=UTC)
USAGE_FIELDS = (
    "pool_id",
    "hour",
    "reporting_gpus",
    "capacity_gpu_hours",
    "busy_gpu_hours",
    "avg_utilization_pct",
    "energy_kwh",
)


@pytest.fixture
def serving_pool(pool, architecture):
    """An inference pool with a workload the demo sends requests to (no training job, so
    no interruptions shape its curve), passed to the seeder as the demo's
    infer-l40s-hk and chat-api-asia."""
    pool.purpose = Purpose.INFERENCE
    pool.save()
    pool.demo_workload = Workload.objects.create(
        name="Chat API · Asia",
        slug="chat-api-asia",
        kind=WorkloadKind.ONLINE_INFERENCE,
        model_architecture=architecture,
        pool=pool,
        gpu_count=8,
    )
    return pool


def _seed(pool, now):
    return seed_usage_demo(
        pools={"infer-l40s-hk": pool}, workloads={"chat-api-asia": pool.demo_workload}, now=now
    )


def _usage():
    return list(PoolHourlyUsage.objects.order_by("pool_id", "hour").values_list(*USAGE_FIELDS))


def _requests():
    return list(
        WorkloadHourlyRequests.objects.order_by("hour").values_list("hour", "requests", "errors")
    )


@pytest.mark.django_db
def test_seeding_again_extends_the_history_up_to_the_current_hour(serving_pool):
    # The current hour, 10:00, is written too, so the history ends at 11:00.
    first_end = datetime(2026, 11, 20, 11, 0, tzinfo=UTC)
    assert _seed(serving_pool, FIRST_SEED) == (DEMO_DAYS * 24, DEMO_DAYS * 24)  # 672 each
    hours = PoolHourlyUsage.objects.aggregate(first=Min("hour"), last=Max("hour"))
    assert hours == {
        "first": first_end - timedelta(days=28),
        "last": first_end - timedelta(hours=1),
    }
    usage, requests = _usage(), _requests()

    # Twenty minutes later, still in the same hour: nothing written, nothing changed.
    assert _seed(serving_pool, FIRST_SEED + timedelta(minutes=20)) == (0, 0)
    assert _usage() == usage and _requests() == requests

    # A day and five minutes later: 24 more hours of each, the earlier ones untouched.
    assert _seed(serving_pool, FIRST_SEED + timedelta(days=1, minutes=5)) == (24, 24)
    assert PoolHourlyUsage.objects.count() == 672 + 24
    assert WorkloadHourlyRequests.objects.count() == 672 + 24
    assert _usage()[:672] == usage and _requests()[:672] == requests
    assert PoolHourlyUsage.objects.aggregate(last=Max("hour"))["last"] == (
        first_end + timedelta(days=1) - timedelta(hours=1)
    )

    # The daily sums cover the added hours: every day's sum is its hours' sum.
    hourly_busy = PoolHourlyUsage.objects.aggregate(total=Sum("busy_gpu_hours"))["total"]
    daily_busy = PoolDailyUsage.objects.aggregate(total=Sum("busy_gpu_hours"))["total"]
    assert daily_busy == pytest.approx(hourly_busy)
    hourly_requests = WorkloadHourlyRequests.objects.aggregate(total=Sum("requests"))["total"]
    assert WorkloadDailyRequests.objects.aggregate(total=Sum("requests"))["total"] == (
        hourly_requests
    )
    # 28 days from 11:00 to 11:00, then one more day: 30 UTC days touched.
    assert PoolDailyUsage.objects.count() == 30


@pytest.mark.django_db
def test_an_hour_gets_the_same_figures_whichever_seed_writes_it(serving_pool):
    _seed(serving_pool, FIRST_SEED)
    _seed(serving_pool, FIRST_SEED + timedelta(days=1))
    extended = {row[1]: row for row in _usage()}
    # Started afresh a day later, the history begins a day later; the hours both hold
    # are the same curve, figure for figure.
    PoolHourlyUsage.objects.all().delete()
    WorkloadHourlyRequests.objects.all().delete()
    _seed(serving_pool, FIRST_SEED + timedelta(days=1))
    fresh = {row[1]: row for row in _usage()}
    assert len(fresh) == 672
    assert all(extended[hour] == row for hour, row in fresh.items())


@pytest.mark.django_db
def test_a_pool_gets_no_demo_usage_before_it_entered_service(serving_pool):
    serving_pool.in_service_from = datetime(2026, 11, 19, 10, 15, tzinfo=UTC)
    serving_pool.save()
    # In service from 10:15 on the 19th: its 10:00 hour is partly in service, so the
    # 25 hours from 10:00 on the 19th to 10:00 on the 20th, the current hour included.
    assert _seed(serving_pool, FIRST_SEED) == (25, 25)


@pytest.mark.django_db
def test_demo_pools_are_in_service_from_the_start_of_their_history(role_groups):
    before = timezone.now()
    call_command("seed_demo", verbosity=0)
    first_hours = dict(
        PoolHourlyUsage.objects.values_list("pool__slug").annotate(first=Min("hour"))
    )
    # 28 days up to the end of the current hour, which is written too.
    start = before.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    start -= timedelta(days=DEMO_DAYS)
    if timezone.now().hour != before.hour:  # the command ran across an hour's end
        start += timedelta(hours=1)
    slugs = [spec["slug"] for spec in DEMO_POOLS]
    assert first_hours == dict.fromkeys(slugs, start)
    assert dict(Pool.objects.values_list("slug", "in_service_from")) == dict.fromkeys(slugs, start)
    # Run again at once: the same hour, nothing added, the service start unchanged.
    rows = PoolHourlyUsage.objects.count()
    call_command("seed_demo", verbosity=0)
    if timezone.now().hour == before.hour:
        assert PoolHourlyUsage.objects.count() == rows
    assert set(Pool.objects.values_list("in_service_from", flat=True)) == {start}
