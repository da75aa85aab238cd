"""``/metrics``: who may read it, what gpufleet's gauges say (against a hand computation
of the hours written), django-prometheus's request and database metrics beside them, the
Debian Prometheus scraping a live server with the bearer token and answering a query on
a gauge, and a Grafana dashboard whose every expression reads a metric the endpoint
emits."""

import json
import re
import subprocess
import urllib.parse
import urllib.request
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.checks import run_checks
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from apps.alerts import services
from apps.core.models import OutboxTask
from tests.alerts.conftest import overdue_drill_policy, write_usage
from tests.alerts.factories import make_channel, make_rule
from tests.factories import PoolFactory, PullSourceFactory
from tests.telemetry import tsdb_servers
from tests.telemetry.tsdb_servers import free_port
from tests.waiting import wait_until

TOKEN = "metrics-test-token-0123456789"
DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "gpufleet.json"


@pytest.fixture
def metrics_token(settings):
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_ADDRESSES = []


def _get(client, **headers):
    return client.get("/metrics", headers=headers)


def samples(text: str) -> dict[tuple, float]:
    """(name, sorted label pairs) → value, read with prometheus_client's own parser."""
    values = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values


@pytest.mark.django_db
def test_metrics_are_off_until_a_token_or_an_address_is_configured(client, settings):
    settings.METRICS_TOKEN, settings.METRICS_ALLOWED_ADDRESSES = "", []
    assert _get(client).status_code == 404
    assert _get(client, Authorization="Bearer anything").status_code == 404


@pytest.mark.django_db
def test_the_bearer_token_opens_the_metrics(client, metrics_token):
    response = _get(client, Authorization=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    for wrong in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {TOKEN}"}):
        refused = _get(client, **wrong)
        assert refused.status_code == 401, wrong
        assert refused["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.django_db
def test_an_allowed_address_opens_the_metrics_without_a_token(client, settings):
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_ADDRESSES = ["127.0.0.0/8", "10.1.0.0/16"]
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.1.200.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 403
    # With a token configured as well, an outsider is asked for it.
    settings.METRICS_TOKEN = TOKEN
    assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 401
    assert (
        client.get(
            "/metrics", REMOTE_ADDR="10.2.0.1", headers={"Authorization": f"Bearer {TOKEN}"}
        ).status_code
        == 200
    )


def test_a_malformed_allowed_address_stops_the_server_at_its_checks(settings):
    settings.METRICS_ALLOWED_ADDRESSES = ["10.0.0.0/33"]
    errors = [error for error in run_checks() if error.id == "alerts.E001"]
    assert len(errors) == 1 and "10.0.0.0/33" in errors[0].msg


@pytest.fixture
def fleet(hour_end, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    idle = PoolFactory(
        name="Idle",
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("3.00"),
        in_service_from=hour_end - timedelta(days=60),
    )
    busy = PoolFactory(
        name="Busy",
        gpu_count=4,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
        in_service_from=hour_end - timedelta(days=60),
    )
    PoolFactory(name="Silent", in_service_from=hour_end - timedelta(days=60))
    write_usage(idle, hours=10 * 24, busy_fraction=0.25, end=hour_end)
    write_usage(busy, hours=48, busy_fraction=0.75, end=hour_end)
    overdue_drill_policy(busy, days_ago=45)
    overdue_drill_policy(idle, days_ago=10)
    make_rule("Overdue", kind="drill_overdue", channel=make_channel(kind="email"))
    services.evaluate_rules()
    now = timezone.now()
    PullSourceFactory(
        name="tsdb",
        kind="prometheus_hourly",
        url="http://vm.example:8428",
        pulled_until=now - timedelta(hours=2),
    )
    PullSourceFactory(
        name="node-1",
        kind="dcgm_exporter",
        url="http://node-1:9400/metrics",
        last_pulled_at=now - timedelta(seconds=40),
        last_status="error",
    )
    OutboxTask.objects.create(name="alerts.deliver")
    return {"idle": idle, "busy": busy, "now": now}


def hand_idle_usd(gpus, price, busy, hours_of_data, window_hours) -> float:
    """GPUs × price × (1 − busy) for each hour of the window that has data (the window's
    hour-slots, the current one included)."""
    return gpus * price * (1 - busy) * min(hours_of_data, window_hours)


@pytest.mark.django_db
def test_the_gauges_say_what_a_hand_computation_says(client, metrics_token, fleet):
    values = samples(_get(client, Authorization=f"Bearer {TOKEN}").content.decode())

    def gauge(name, **labels):
        # Pool and pull source series name their cluster: here every one's is ``default``.
        if name.startswith(("gpufleet_pool_", "gpufleet_telemetry_")):
            labels = {"cluster": "default", **labels}
        return values[(name, tuple(sorted(labels.items())))]

    for pool, gpus, price, busy, hours in (("idle", 8, 3.0, 0.25, 240), ("busy", 4, 2.0, 0.75, 48)):
        assert gauge("gpufleet_pool_utilisation_ratio", pool=pool) == pytest.approx(busy)
        for window, window_hours in (("24h", 24), ("7d", 168), ("30d", 720)):
            assert gauge("gpufleet_pool_idle_cost_usd", pool=pool, window=window) == pytest.approx(
                hand_idle_usd(gpus, price, busy, hours, window_hours)
            ), (pool, window)
    # No telemetry: no utilisation, and no idle cost to speak of.
    assert (
        "gpufleet_pool_utilisation_ratio",
        (("cluster", "default"), ("pool", "silent")),
    ) not in values
    assert gauge("gpufleet_pool_idle_cost_usd", pool="silent", window="30d") == 0
    assert gauge("gpufleet_drills_overdue") == 1
    assert gauge("gpufleet_drills_failing") == 0
    assert gauge("gpufleet_alerts_firing", kind="drill_overdue") == 1
    assert gauge("gpufleet_alerts_firing", kind="idle_cost") == 0
    assert gauge("gpufleet_telemetry_lag_seconds", source="tsdb") == pytest.approx(7200, abs=60)
    assert gauge("gpufleet_telemetry_lag_seconds", source="node-1") == pytest.approx(40, abs=60)
    assert gauge("gpufleet_telemetry_source_up", source="node-1") == 0
    assert gauge("gpufleet_worker_queue_depth", queue="outbox") == 1
    # No team has a budget: no budget figure is made up.
    assert not [key for key in values if key[0].startswith("gpufleet_team_budget")]


@pytest.mark.django_db
def test_the_queue_depth_counts_the_celery_queue_on_redis(client, metrics_token, settings):
    import redis

    settings.CELERY_TASK_DEFAULT_QUEUE = "alerts-metrics-test"
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.delete("alerts-metrics-test", "alerts-metrics-test\x06\x163")
    try:
        broker.lpush("alerts-metrics-test", "a", "b")
        broker.lpush("alerts-metrics-test\x06\x163", "c")  # kombu's list for priority 3
        values = samples(_get(client, Authorization=f"Bearer {TOKEN}").content.decode())
        assert values[("gpufleet_worker_queue_depth", (("queue", "alerts-metrics-test"),))] == 3
    finally:
        broker.delete("alerts-metrics-test", "alerts-metrics-test\x06\x163")


@pytest.mark.django_db
def test_django_prometheus_counts_requests_and_queries(client, metrics_token, make_user):
    client.force_login(make_user("reader"))
    client.get("/pools/")
    text = _get(client, Authorization=f"Bearer {TOKEN}").content.decode()
    values = samples(text)
    # The database wrapper counts the queries of the PostgreSQL backend (vendor unchanged).
    assert values[("django_db_execute_total", (("alias", "default"), ("vendor", "postgresql")))] > 0
    assert any(
        name == "django_http_requests_total_by_method_total" and dict(labels).get("method") == "GET"
        for name, labels in values
    )


# --- Grafana --------------------------------------------------------------------------

PROMQL_WORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "vector",
}


def metric_names_in(expr: str) -> set[str]:
    """The metric names an expression reads: identifiers that are not functions (followed
    by "("), keywords, label names in matchers or groupings, or strings."""
    text = re.sub(r'"[^"]*"', "", expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        following = text[match.end() :].lstrip()
        if following.startswith("(") or match.group() in PROMQL_WORDS:
            continue
        names.add(match.group())
    return names


def emitted_names(text: str) -> set[str]:
    """Every series name the exposition can hold: its samples', and for each family
    declared (some have no sample until something happens) the names its type gives."""
    names = {sample_name for sample_name, _labels in samples(text)}
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)", text, re.M):
        names.add(name)
        if kind == "histogram":
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return names


def test_the_expression_reader_finds_metric_names_only():
    assert metric_names_in('sum by (le) (rate(x_bucket{job="a"}[5m])) / y') == {"x_bucket", "y"}
    assert metric_names_in("count(up == 0) or vector(0)") == {"up"}


@pytest.mark.django_db
def test_every_grafana_expression_reads_a_metric_the_endpoint_emits(client, metrics_token):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert len(exprs) >= 15
    emitted = emitted_names(_get(client, Authorization=f"Bearer {TOKEN}").content.decode())
    read = set().union(*(metric_names_in(expr) for expr in exprs))
    assert read - emitted == set()
    gpufleet_families = {name for name in emitted if name.startswith("gpufleet_")}
    assert gpufleet_families <= read, "every gpufleet gauge has a panel"
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}"


# --- A real Prometheus scraping a live server -------------------------------------------


def _prometheus_query(base_url: str, query: str) -> list:
    url = f"{base_url}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - 127.0.0.1
        return json.loads(response.read())["data"]["result"]


@pytest.fixture
def prometheus(live_server, tmp_path, settings):
    """Debian's Prometheus scraping the live server's /metrics every second with the
    bearer token; (its URL, its log)."""
    settings.METRICS_TOKEN = TOKEN
    binary = tsdb_servers._binary("PROMETHEUS", "prometheus", "scripts/ensure_prometheus.sh")
    target = urllib.parse.urlsplit(live_server.url).netloc.replace("localhost", "127.0.0.1")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n"
        "  - job_name: gpufleet\n"
        "    metrics_path: /metrics\n"
        "    authorization:\n"
        "      type: Bearer\n"
        f"      credentials: {TOKEN}\n"
        "    static_configs:\n"
        f"      - targets: ['{target}']\n"
    )
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "prometheus.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        tsdb_servers._wait_for(process, f"{base_url}/-/ready", log_path, "prometheus")
        yield base_url, log_path
    finally:
        tsdb_servers.stop(process)


@pytest.mark.prometheus
@pytest.mark.django_db(transaction=True)
def test_prometheus_scrapes_the_metrics_with_the_token_and_answers_a_query(prometheus, hour_end):
    base_url, log_path = prometheus
    pool = PoolFactory(
        name="Scraped",
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("3.00"),
        in_service_from=hour_end - timedelta(days=60),
    )
    write_usage(pool, hours=48, busy_fraction=0.5, end=hour_end)
    overdue_drill_policy(pool, days_ago=40)

    def scraped():
        try:
            up = _prometheus_query(base_url, 'up{job="gpufleet"}')
            idle = _prometheus_query(
                base_url, 'gpufleet_pool_idle_cost_usd{pool="scraped",window="24h"}'
            )
        except OSError:
            return False
        return bool(up) and up[0]["value"][1] == "1" and bool(idle)

    try:
        wait_until(scraped, timeout_seconds=60, what="Prometheus scraping gpufleet's /metrics")
    except Exception:
        print(log_path.read_text())
        raise
    # 8 GPUs × $3.00 × 50 % idle × 24 hours (the last 24 hour-slots, the current one
    # included).
    (idle,) = _prometheus_query(
        base_url, 'gpufleet_pool_idle_cost_usd{pool="scraped",window="24h"}'
    )
    assert float(idle["value"][1]) == pytest.approx(8 * 3.0 * 0.5 * 24)
    (overdue,) = _prometheus_query(base_url, "gpufleet_drills_overdue")
    assert float(overdue["value"][1]) == 1
    # The scrapes themselves are requests django-prometheus counts.
    assert _prometheus_query(base_url, "sum(django_http_requests_total_by_method_total) > 0")
