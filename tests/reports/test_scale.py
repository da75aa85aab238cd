"""The Overview and the reports at fleet scale: the number of queries a page makes is the
same for 100 pools as for 1,000, computed in the request and cached alike (the figures
are aggregated in SQL, never read pool by pool)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.pools.models import Deployment, Pool, Purpose, Workload, WorkloadKind
from apps.reports.cache import bump_reports_version
from apps.telemetry.days import rebuild_days
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests

HOURS = 30  # a day and some edge hours: the reports read daily rows and hourly edges


def _grow_fleet(gpu_model, upto: int) -> None:
    """Pools 0 … ``upto`` − 1 (the ones missing), in bulk: every third purpose, every
    fifth pool shared by two workloads, every seventh with none, each with ``HOURS`` of
    hourly rows and request-hours, and their daily sums."""
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    first = Pool.objects.count()
    pools = []
    for index in range(first, upto):
        pool = Pool(
            name=f"Scale pool {index:04d}",
            slug=f"scale-{index:04d}",
            purpose=list(Purpose)[index % 3],
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=gpu_model,
            gpu_count=8,
            gpus_per_node=8,
            on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
            in_service_from=now - timedelta(hours=HOURS),
        )
        pool.refresh_effective_price()
        pools.append(pool)
    pools = Pool.objects.bulk_create(pools)
    workloads = []
    for pool in pools:
        index = int(pool.slug.rsplit("-", 1)[1])
        for share in range(0 if index % 7 == 0 else 2 if index % 5 == 0 else 1):
            workloads.append(
                Workload(
                    name=f"Scale workload {index:04d}-{share}",
                    slug=f"scale-w{index:04d}-{share}",
                    kind=WorkloadKind.ONLINE_INFERENCE if index % 2 else WorkloadKind.PRE_TRAINING,
                    pool=pool,
                    gpu_count=4,
                )
            )
    workloads = Workload.objects.bulk_create(workloads)
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=now - timedelta(hours=step),
            reporting_gpus=8,
            capacity_gpu_hours=8,
            busy_gpu_hours=4,
            avg_utilization_pct=50,
        )
        for pool in pools
        for step in range(HOURS)
    )
    WorkloadHourlyRequests.objects.bulk_create(
        WorkloadHourlyRequests(
            workload=workload,
            hour=now - timedelta(hours=step),
            requests=100,
            input_tokens=4000,
            output_tokens=1000,
            errors=0,
        )
        for workload in workloads
        if workload.kind == WorkloadKind.ONLINE_INFERENCE
        for step in range(HOURS)
    )
    rebuild_days(now - timedelta(hours=HOURS), now + timedelta(hours=1))


def _queries(client, url, *, cached: bool) -> int:
    if not cached:
        bump_reports_version()  # the figures are computed in the request
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(queries.captured_queries)


YEAR_AGO = (datetime.now(UTC) - timedelta(days=364)).date().isoformat()
PAGES = {
    "overview": reverse("dashboard:overview"),
    "report, 30 days by pool": reverse("reports:report"),
    "report, 1 year by pool": reverse("reports:report") + f"?start={YEAR_AGO}&group_by=pool",
    "report, 1 year by purpose": reverse("reports:report") + f"?start={YEAR_AGO}&group_by=purpose",
    "report, 1 year by workload": (
        reverse("reports:report") + f"?start={YEAR_AGO}&group_by=workload"
    ),
}


@pytest.mark.django_db
def test_query_counts_are_the_same_at_100_and_1000_pools(client, make_user, gpu_model):
    client.force_login(make_user("reader"))
    counts = {}
    for size in (100, 1000):
        _grow_fleet(gpu_model, size)
        assert Pool.objects.count() == size
        for name, url in PAGES.items():
            computed = _queries(client, url, cached=False)
            cached = _queries(client, url, cached=True)
            counts[name, size] = (computed, cached)
    for name in PAGES:
        assert counts[name, 100] == counts[name, 1000], (
            f"{name}: (computed, cached) queries {counts[name, 100]} at 100 pools, "
            f"{counts[name, 1000]} at 1,000"
        )
        computed, cached = counts[name, 1000]
        # A cached page reads no aggregate: fewer queries than computing it.
        assert cached < computed, (name, counts[name, 1000])
