"""Two clusters, each with its own real VictoriaMetrics, pulled as two sources into one
fleet.

The clusters share a hostname (``gpu-001``, as two clusters' first nodes often do) and
each has a hostname rule ``gpu-*`` for its own pool: a source places new GPUs by its own
cluster's rules, so each cluster's GPUs land in its pool. The Overview's GPU count and
utilisation then equal a computation straight from the samples loaded into both servers:
per GPU and hour the mean of its samples, per pool-hour their sum ÷ 100 (busy GPU-hours),
the utilisation Σ busy ÷ Σ capacity of the hours with telemetry.
"""

from collections import defaultdict
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.dashboard import selectors as overview_selectors
from apps.pools.hours import floor_hour
from apps.reports.cost.report import cost_report
from apps.telemetry.models import GpuDevice, ImportRun, PullSource
from apps.telemetry.pull import tsdb
from apps.telemetry.rollups import hourly
from tests.factories import ClusterFactory, HostnameRuleFactory, PoolFactory, PullSourceFactory
from tests.telemetry import tsdb_servers
from tests.telemetry.tsdb_servers import Series, victoria_metrics  # noqa: F401 - a fixture

pytestmark = [pytest.mark.victoria_metrics, pytest.mark.django_db]

HOUR = timedelta(hours=1)
HOURS_LOADED = 2
SAMPLE_MINUTES = 5
# cluster → {hostname: GPUs on it}; both have a gpu-001.
NODES = {
    "east": {"gpu-001": 2, "gpu-002": 2},
    "west": {"gpu-001": 4},
}
POOL_GPUS = {"east": 4, "west": 4}


@pytest.fixture(scope="module")
def second_victoria_metrics(tmp_path_factory):
    """The west cluster's own VictoriaMetrics, one for this module (the east's is the
    session's)."""
    directory = tmp_path_factory.mktemp("victoria-metrics-west")
    process, base_url = tsdb_servers.start_victoria_metrics(directory)
    try:
        yield tsdb_servers.VictoriaMetrics(base_url)
    finally:
        tsdb_servers.stop(process)


def _ms(moment) -> int:
    return round(moment.timestamp() * 1000)


def _series(cluster: str, first_hour, tag: str) -> list[Series]:
    """Every GPU of ``cluster``: one utilisation sample every 5 minutes for two hours,
    a value of its own at each sample."""
    series = []
    for node_index, (host, gpus) in enumerate(NODES[cluster].items()):
        for gpu in range(gpus):
            seed = 7 * node_index + 3 * gpu + (11 if cluster == "west" else 0)
            points = [
                (
                    _ms(first_hour + timedelta(minutes=minute)),
                    float((seed * 13 + minute * 7) % 101),
                )
                for minute in range(0, 60 * HOURS_LOADED, SAMPLE_MINUTES)
            ]
            labels = {
                "UUID": f"GPU-{cluster}-{host}-{gpu}",
                "gpu": str(gpu),
                "Hostname": host,
                "modelName": "NVIDIA H100 80GB HBM3",
                "test": tag,
            }
            series.append(Series("DCGM_FI_DEV_GPU_UTIL", labels, points))
    return series


def _busy_by_hour(series: list[Series]) -> dict:
    """hour start (ms) → Σ over GPUs of the mean of their samples in the hour ÷ 100."""
    busy = defaultdict(float)
    for one in series:
        by_hour = defaultdict(list)
        for timestamp, value in one.points:
            by_hour[timestamp - timestamp % 3_600_000].append(value)
        for hour, values in by_hour.items():
            busy[hour] += sum(values) / len(values) / 100
    return busy


def test_two_victoria_metrics_pulled_for_two_clusters_add_up_to_one_fleet(
    victoria_metrics,  # noqa: F811 - the session's, the east's
    second_victoria_metrics,
    client,
    make_user,
):
    now = timezone.now()
    first_hour = floor_hour(now) - 4 * HOUR
    servers = {"east": victoria_metrics, "west": second_victoria_metrics}
    loaded, sources, pools = {}, {}, {}
    for name, server in servers.items():
        cluster = ClusterFactory(slug=name, name=name.title())
        pools[name] = PoolFactory(
            name=f"{name} H100",
            slug=f"{name}-h100",
            cluster=cluster,
            gpu_count=POOL_GPUS[name],
            in_service_from=first_hour - 30 * 24 * HOUR,
        )
        # The same pattern in both clusters: only the source's cluster decides.
        HostnameRuleFactory(pool=pools[name], hostname_pattern="gpu-*")
        tag = f"clusters-{name}"
        loaded[name] = _series(name, first_hour, tag)
        server.load(loaded[name])
        sources[name] = PullSourceFactory(
            name=f"{name} victoria",
            kind=PullSource.Kind.PROMETHEUS_HOURLY,
            url=server.base_url,
            label_filters=f'test="{tag}"',
            cluster=cluster,
        )

    for source in sources.values():
        run = tsdb.pull_hourly(source, now=now, start=first_hour, end=first_hour + 3 * HOUR)
        assert run.status == ImportRun.Status.SUCCEEDED, run.message
    hourly.rollup_pending()

    # Each cluster's GPUs in its own pool, by UUID, the shared hostname notwithstanding.
    for name in servers:
        uuids = {one.labels["UUID"] for one in loaded[name]}
        devices = GpuDevice.objects.filter(uuid__in=uuids)
        assert devices.count() == sum(NODES[name].values())
        assert set(devices.values_list("pool__cluster__slug", flat=True)) == {name}

    # The independent computation, over both servers' samples.
    busy = {name: sum(_busy_by_hour(loaded[name]).values()) for name in servers}
    capacity = {name: POOL_GPUS[name] * HOURS_LOADED for name in servers}
    fleet_utilization = 100 * sum(busy.values()) / sum(capacity.values())

    figures = overview_selectors.overview_figures(now)
    assert figures["gpu_total"] == sum(POOL_GPUS.values())
    assert figures["usage_24h"][0] == pytest.approx(sum(busy.values()), rel=1e-9)
    assert figures["usage_24h"][1] == pytest.approx(sum(capacity.values()), rel=1e-9)
    assert figures["utilization_24h_pct"] == pytest.approx(fleet_utilization, rel=1e-9)
    by_cluster = {row["slug"]: row for row in figures["cluster_rows"]}
    for name in servers:
        assert by_cluster[name]["gpus"] == POOL_GPUS[name]
        assert by_cluster[name]["utilization_24h_pct"] == pytest.approx(
            100 * busy[name] / capacity[name], rel=1e-9
        )
        filtered = overview_selectors.overview_figures(now, cluster=name)
        assert filtered["gpu_total"] == POOL_GPUS[name]
        assert filtered["utilization_24h_pct"] == pytest.approx(
            100 * busy[name] / capacity[name], rel=1e-9
        )

    # The report by cluster: the busy GPU-hours of each source, adding up to the fleet's.
    window = (first_hour, first_hour + 3 * HOUR)
    rows = {row.key: row for row in cost_report(*window, "cluster")}
    for name in servers:
        assert rows[name].busy_gpu_hours == pytest.approx(busy[name], rel=1e-9)
    fleet = sum(row.busy_gpu_hours for row in cost_report(*window, "pool"))
    assert fleet == pytest.approx(sum(busy.values()), rel=1e-9)

    # The page shows the same fleet.
    client.force_login(make_user("procurement"))
    page = client.get(reverse("dashboard:overview")).content.decode()
    gpus_kpi = page.split('id="kpi-gpus"')[1].split("</div></div></div>")[0]
    assert f">{sum(POOL_GPUS.values())}<" in gpus_kpi
    for name in servers:
        assert f'data-cluster="{name}"' in page
