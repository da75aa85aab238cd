"""Grouping and filtering by cluster: the cost report (page, CSV, API), the Overview.

Two clusters, three cloud on-demand pools with hourly rows written directly. Every
figure is summed by hand below from the same inputs (cost = GPUs × price per hour, idle =
cost × (1 − busy ÷ capacity)); a cluster's figures are the sums over its pools, and the
unfiltered totals the sums over the clusters.
"""

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.pools.hours import floor_hour
from apps.pools.models import Purpose
from apps.telemetry.models import PoolHourlyUsage
from tests.factories import ClusterFactory, PoolFactory

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 10, 2, tzinfo=UTC)
HOURS = 6
# slug → (cluster, GPUs, USD per GPU-hour, purpose)
POOLS = {
    "north-train": ("north", 16, "2.99", Purpose.TRAINING),
    "north-serve": ("north", 8, "2.50", Purpose.INFERENCE),
    "south-train": ("south", 8, "3.00", Purpose.TRAINING),
}


def _utilization(index: int, step: int) -> float:
    return (17 * step + 31 * index) % 100


def _make_fleet(start: datetime) -> dict:
    clusters = {
        "north": ClusterFactory(slug="north", name="North", region="eu-north"),
        "south": ClusterFactory(slug="south", name="South", region="ap-south"),
    }
    usage = []
    for index, (slug, (cluster, gpus, price, purpose)) in enumerate(POOLS.items()):
        pool = PoolFactory(
            name=slug,
            slug=slug,
            cluster=clusters[cluster],
            gpu_count=gpus,
            purpose=purpose,
            on_demand_price_per_gpu_hour_usd=Decimal(price),
            in_service_from=start - timedelta(days=40),
        )
        for step in range(HOURS):
            util = _utilization(index, step)
            usage.append(
                PoolHourlyUsage(
                    pool=pool,
                    hour=start + timedelta(hours=step),
                    reporting_gpus=gpus,
                    capacity_gpu_hours=gpus,
                    busy_gpu_hours=gpus * util / 100,
                    avg_utilization_pct=util,
                    max_utilization_pct=util,
                )
            )
    PoolHourlyUsage.objects.bulk_create(usage)
    return clusters


def _hand(slugs) -> dict:
    """Σ over ``slugs``' pools of the report's figures, hour by hour; a pool's idle cost
    is its cost × (1 − its busy ÷ its capacity), the idle costs then summed."""
    cost, idle, busy, capacity, gpus = Decimal(0), Decimal(0), 0.0, 0.0, 0
    for index, (slug, (_cluster, pool_gpus, price, _purpose)) in enumerate(POOLS.items()):
        if slug not in slugs:
            continue
        pool_cost = pool_gpus * Decimal(price) * HOURS
        pool_busy = sum(pool_gpus * _utilization(index, step) / 100 for step in range(HOURS))
        pool_capacity = pool_gpus * HOURS
        cost += pool_cost
        idle += pool_cost * (1 - Decimal(str(pool_busy / pool_capacity)))
        busy += pool_busy
        capacity += pool_capacity
        gpus += pool_gpus
    return {"cost": cost, "busy": busy, "capacity": capacity, "idle": idle, "gpus": gpus}


def _of(cluster: str) -> list[str]:
    return [slug for slug, spec in POOLS.items() if spec[0] == cluster]


API_RANGE = {"start": START.isoformat(), "end": (START + timedelta(hours=HOURS)).isoformat()}


def _cents(value) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.01"))


def _assert_row(row: dict, hand: dict):
    assert _cents(row["cost_usd"]) == _cents(hand["cost"])
    assert _cents(row["idle_cost_usd"]) == _cents(hand["idle"])
    assert row["busy_gpu_hours"] == pytest.approx(hand["busy"])
    assert row["measured_capacity_gpu_hours"] == pytest.approx(hand["capacity"])
    assert row["utilization_pct"] == pytest.approx(100 * hand["busy"] / hand["capacity"])


def test_the_cost_api_filters_and_groups_by_cluster(client, make_user):
    _make_fleet(START)
    client.force_login(make_user("procurement"))
    url = reverse("api-report-cost")

    north = client.get(url, {**API_RANGE, "cluster": "north"}).json()
    assert {row["key"] for row in north} == set(_of("north"))
    assert {row["cluster"] for row in north} == {"north"}
    for row in north:
        _assert_row(row, _hand([row["key"]]))

    by_cluster = {
        row["key"]: row for row in client.get(url, {**API_RANGE, "group_by": "cluster"}).json()
    }
    assert set(by_cluster) == {"north", "south"}
    for slug, row in by_cluster.items():
        _assert_row(row, _hand(_of(slug)))
        assert row["cluster"] == slug
        # The cluster's row is its filtered report's total.
        filtered = client.get(url, {**API_RANGE, "cluster": slug}).json()
        assert _cents(row["cost_usd"]) == sum(_cents(item["cost_usd"]) for item in filtered)

    # Unfiltered, by pool: the sum over the clusters.
    every = client.get(url, API_RANGE).json()
    total = sum((Decimal(row["cost_usd"]) for row in every), Decimal(0))
    assert _cents(total) == _cents(_hand(POOLS)["cost"])
    assert _cents(total) == sum(_cents(row["cost_usd"]) for row in by_cluster.values())
    by_purpose = client.get(url, {**API_RANGE, "group_by": "purpose"}).json()
    assert {row["cluster"] for row in by_purpose if row["key"] == "training"} == {None}

    missing = client.get(url, {**API_RANGE, "cluster": "nowhere"})
    assert missing.status_code == 404 and "nowhere" in missing.json()["detail"]

    # The hour-of-day curve of one cluster: at each UTC hour, 100 × Σ busy ÷ Σ reporting
    # GPUs of its pools.
    profile = client.get(reverse("api-usage-profile"), {**API_RANGE, "cluster": "south"}).json()
    by_hour = {row["hour_of_day"]: row["avg_utilization_pct"] for row in profile}
    index = list(POOLS).index("south-train")
    for step in range(HOURS):
        hour = (START + timedelta(hours=step)).hour
        assert by_hour[hour] == pytest.approx(_utilization(index, step))


def test_the_report_page_and_csv_name_the_cluster(client, make_user):
    _make_fleet(START)
    client.force_login(make_user("procurement"))
    filters = {"start": "2026-03-10", "end": "2026-03-10", "group_by": "pool", "cluster": "south"}
    page = client.get(reverse("reports:report"), filters).content.decode()
    assert '<option value="south" selected>South</option>' in page
    response = client.get(reverse("reports:report"), {**filters, "export": "csv"})
    lines = list(csv.reader(io.StringIO(response.content.decode())))
    header = lines[0]
    assert "Cluster" in header
    rows = {line[0]: line for line in lines[1:] if line[0]}
    assert set(rows) == {"south-train"}
    assert rows["south-train"][header.index("Cluster")] == "south"
    cost_column = header.index("Cost (USD)")
    # The page reports whole UTC days: 24 paid hours, 18 of them unmeasured, all at the price.
    assert Decimal(rows["south-train"][cost_column]) == 8 * Decimal("3.00") * 24


def test_the_overview_filters_by_cluster_and_lists_the_clusters(client, make_user):
    # The last six whole hours, inside the last 24 h and, unless it is the 1st before
    # 06:00 UTC, inside the month to date.
    now = timezone.now()
    start = floor_hour(now) - timedelta(hours=HOURS)
    _make_fleet(start)
    client.force_login(make_user("procurement"))
    url = reverse("dashboard:overview")
    page = client.get(url).content.decode()
    assert 'id="clusters"' in page and 'id="cluster-filter"' in page
    fleet = _hand(POOLS)
    for slug in ("north", "south"):
        hand = _hand(_of(slug))
        filtered = client.get(url, {"cluster": slug}).content.decode()
        gpus_kpi = filtered.split('id="kpi-gpus"')[1].split("</div></div></div>")[0]
        assert f">{hand['gpus']}<" in gpus_kpi
        assert 'id="clusters"' not in filtered  # one cluster: no table of clusters
        row = page.split(f'data-cluster="{slug}"')[1].split("</tr>")[0]
        assert f'data-figure="gpus">{hand["gpus"]}<' in row
        utilization = 100 * hand["busy"] / hand["capacity"]
        assert f'data-figure="utilization_24h_pct">{utilization:.1f}' in row
    fleet_kpi = page.split('id="kpi-gpus"')[1].split("</div></div></div>")[0]
    assert f">{fleet['gpus']}<" in fleet_kpi
    # A KPI's explanation is of the cluster the Overview shows.
    assert "kpi=gpus&amp;cluster=north" in client.get(url, {"cluster": "north"}).content.decode()
    explain_url = reverse("dashboard:overview_explain")
    explained = client.get(explain_url, {"kpi": "gpus", "cluster": "north"}).content.decode()
    # Σ by purpose, in the Overview's order of purposes: north's pools only.
    terms = " + ".join(
        str(sum(spec[1] for spec in POOLS.values() if spec[0] == "north" and spec[3] == purpose))
        for purpose in Purpose
    )
    assert terms in explained
    assert client.get(url, {"cluster": "nowhere"}).status_code == 404


def _month_cost(slugs) -> Decimal:
    """March 2026 whole: 31 × 24 paid hours of each pool at its price (the pools are in
    service all month; the unmeasured hours cost the same price)."""
    return sum(
        (spec[1] * Decimal(spec[2]) * 31 * 24 for slug, spec in POOLS.items() if slug in slugs),
        Decimal(0),
    )


def test_showback_and_the_focus_export_filter_by_cluster(client, make_user):
    _make_fleet(START)
    client.force_login(make_user("finance"))
    showback_url = reverse("api-showback")
    totals = {}
    for slug in ("north", "south"):
        data = client.get(showback_url, {"month": "2026-03", "cluster": slug}).json()
        # The pools have no team: their whole cost is the unattributed row.
        totals[slug] = Decimal(data["total_usd"])
        assert totals[slug] == _month_cost(_of(slug))
    every = client.get(showback_url, {"month": "2026-03"}).json()
    assert Decimal(every["total_usd"]) == totals["north"] + totals["south"]
    assert client.get(showback_url, {"month": "2026-03", "cluster": "nowhere"}).status_code == 404
    page = client.get(reverse("showback:showback"), {"month": "2026-03", "cluster": "south"})
    assert '<option value="south" selected>South</option>' in page.content.decode()

    focus_url = reverse("api-export-focus")
    day = {"start": "2026-03-10", "end": "2026-03-11"}
    response = client.get(focus_url, {**day, "cluster": "north"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {row["x_Cluster"] for row in rows} == {"north"}
    assert {row["x_ClusterName"] for row in rows} == {"North"}
    assert {row["x_PoolSlug"] for row in rows} == set(_of("north"))
    # One UTC day: 24 paid hours of each of north's pools.
    expected = sum(
        (spec[1] * Decimal(spec[2]) * 24 for spec in POOLS.values() if spec[0] == "north"),
        Decimal(0),
    )
    assert sum(Decimal(row["BilledCost"]) for row in rows) == expected
    every_rows = list(csv.DictReader(io.StringIO(client.get(focus_url, day).content.decode())))
    assert {row["x_Cluster"] for row in every_rows} == {"north", "south"}
    assert client.get(focus_url, {**day, "cluster": "nowhere"}).status_code == 404


def test_metrics_label_each_pool_with_its_cluster():
    from apps.alerts import metrics

    now = timezone.now()
    _make_fleet(floor_hour(now) - timedelta(hours=HOURS))
    samples = [
        sample
        for family in metrics.pool_figures(now)
        for sample in family.samples
        if sample.name == "gpufleet_pool_utilisation_ratio"
    ]
    clusters = {sample.labels["pool"]: sample.labels["cluster"] for sample in samples}
    assert clusters == {slug: spec[0] for slug, spec in POOLS.items()}
    for index, (slug, spec) in enumerate(POOLS.items()):
        busy = sum(spec[1] * _utilization(index, step) / 100 for step in range(HOURS))
        [value] = [s.value for s in samples if s.labels["pool"] == slug]
        assert value == pytest.approx(busy / (spec[1] * HOURS))
