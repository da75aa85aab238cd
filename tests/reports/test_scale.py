"""The Overview and the reports at fleet scale: the number of queries a page makes is the
same for 100 pools as for 1,000, computed in the request and cached alike (the figures
are aggregated in SQL, never read pool by pool)."""

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.clusters.models import default_cluster_pk
from apps.pools.models import (
    Deployment,
    Pool,
    Purpose,
    Workload,
    WorkloadKind,
    WorkloadStatus,
)
from apps.reports.cache import bump_reports_version
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests
from apps.telemetry.rollups.days import rebuild_days

HOURS = 30  # a day and some edge hours: the reports read daily rows and hourly edges


def _busy_gpus(index: int) -> int:
    return index % 8


def _grow_fleet(gpu_model, upto: int) -> None:
    """Pools 0 … ``upto`` − 1 (the ones missing), in bulk: 8 GPUs at 2.00 USD/GPU-h, in
    service for the last ``HOURS`` + 1 hours; every third purpose, every fifth pool shared
    by two workloads, every seventh with none; each with ``HOURS`` hourly rows (the
    latest ``HOURS`` hours, ``_busy_gpus(index)`` busy GPUs of 8 reporting) and, for its
    online-inference workloads (odd pools), 100 requests an hour; and their daily sums."""
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    first = Pool.objects.count()
    pools = []
    # bulk_create skips Pool.save, which would put each pool in the default cluster.
    cluster_id = default_cluster_pk()
    for index in range(first, upto):
        pool = Pool(
            cluster_id=cluster_id,
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
                    status=WorkloadStatus.RUNNING,
                )
            )
    workloads = Workload.objects.bulk_create(workloads)
    # The second workload of a shared pool started running mid-range, at half past an
    # hour: the split cuts those pools' hours there (the others, without any status
    # record, hold their current status throughout).
    Workload.history.bulk_history_create(
        [workload for workload in workloads if workload.slug.endswith("-1")],
        default_date=now - timedelta(hours=HOURS // 2, minutes=30),
    )
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=now - timedelta(hours=step),
            reporting_gpus=8,
            capacity_gpu_hours=8,
            busy_gpu_hours=_busy_gpus(int(pool.slug.rsplit("-", 1)[1])),
            avg_utilization_pct=100 * _busy_gpus(int(pool.slug.rsplit("-", 1)[1])) / 8,
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


def _row_keys(page: str) -> list[str]:
    table = page[
        page.index('id="report-table"') : page.index("</table>", page.index('id="report-table"'))
    ]
    return re.findall(r'<tr data-key="([^"]+)"', table)


@pytest.mark.django_db
def test_the_report_table_pages_through_every_row_in_its_order(client, make_user, gpu_model):
    """120 pools: pages of 25 rows (the last 20), every pool once, in the table's order
    across pages; the total row is the whole report's on every page.

    Independently: each pool's idle cost over the 30 days is 30 measured hours × 2.00 USD
    × (8 − busy GPUs), so sorted by idle cost, most first, the pools come by busy GPUs
    (``_busy_gpus``) ascending, ties by name, descending too (the column sorts by idle
    cost, then name). Total cost: 120 pools × 31 paid hours (in
    service from an hour before the first row) × 8 GPUs × 2.00 USD = 59,520 USD."""
    _grow_fleet(gpu_model, 120)
    client.force_login(make_user("reader"))
    url = reverse("reports:report")
    slugs = [f"scale-{index:04d}" for index in range(120)]
    pages = [client.get(url, {"group_by": "pool", "page": n}).content.decode() for n in range(1, 6)]
    keys = [_row_keys(page) for page in pages]
    assert [len(found) for found in keys] == [25, 25, 25, 25, 20]
    assert sum(keys, []) == slugs  # by name, as the report lists them
    assert "Showing 26–50 of 120" in pages[1]
    for page in pages:
        footer = page[page.index("<tfoot>") : page.index("</tfoot>")]
        assert "$59,520" in footer
    by_idle = [
        _row_keys(
            client.get(url, {"group_by": "pool", "sort": "-idle", "page": n}).content.decode()
        )
        for n in range(1, 6)
    ]
    # The sort is by (idle cost, name), both descending: ties by name, last first.
    expected = sorted(range(120), key=lambda index: (8 - _busy_gpus(index), index), reverse=True)
    assert sum(by_idle, []) == [f"scale-{index:04d}" for index in expected]
    # A page past the end is the last page, as Paginator.get_page does.
    assert _row_keys(client.get(url, {"group_by": "pool", "page": 9}).content.decode()) == keys[4]
    export = client.get(url, {"group_by": "pool", "page": 2, "export": "csv"}).content.decode()
    assert all(slug in export for slug in slugs)  # the export holds every row


@pytest.mark.django_db
def test_the_peak_split_lists_its_first_pools_and_says_how_many_more(client, make_user, gpu_model):
    """Of 120 pools, the odd ones run an online-inference workload that logs requests,
    but every seventh pool has none: 60 − 9 (7, 21, …, 119) = 51 pools serve requests."""
    _grow_fleet(gpu_model, 120)
    serving = [index for index in range(120) if index % 2 and index % 7]
    assert len(serving) == 51
    client.force_login(make_user("reader"))
    page = client.get(reverse("reports:report"), {"group_by": "pool"}).content.decode()
    table = page[
        page.index('id="peak-table"') : page.index("</table>", page.index('id="peak-table"'))
    ]
    names = re.findall(r">(Scale pool \d{4})</a>", table)
    assert names == [f"Scale pool {index:04d}" for index in serving[:25]]
    assert "The first 25 of 51 pools, by name" in page
