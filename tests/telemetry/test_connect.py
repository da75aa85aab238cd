"""Connect your fleet, against real servers: a real Prometheus (Debian's) scraping the real
dcgm-exporter texts of tests/data/dcgm-exporter/ from a local server, an authenticating
proxy in front of it, a Prometheus backfilled with an hour of those GPUs for the first
pull, and a real Celery worker. Expected figures are read from the scrape files with a
regex of this module, not through the parsers."""

import base64
import json
import re
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.catalog.models import GpuModel
from apps.pools.models import Pool
from apps.telemetry.models import GpuDevice, ImportRun, PoolHourlyUsage, PullSource
from apps.telemetry.pull import base, connect, prometheus
from tests.telemetry import tsdb_servers
from tests.telemetry.test_pull import expected_gpus, free_port
from tests.telemetry.tsdb_servers import Series
from tests.waiting import wait_until

DATA = Path(__file__).resolve().parent.parent / "data" / "dcgm-exporter"
SCRAPES = sorted((DATA / "scrapes").glob("*.prom"))
MIG_SCRAPE = DATA / "mig" / "princeton_della_A100_MIG_line.prom"
TARGETS = [*SCRAPES, MIG_SCRAPE]
USER, PASSWORD, TOKEN = "gpufleet", "s3cret: with a colon", "token-5f2a"

prometheus_mark = pytest.mark.prometheus

# --- What the scrape files hold, read with a regex of our own --------------------------------

_LINE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)\{(?P<labels>.*)\}\s+(?P<value>\S+)\s*$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="([^"]*)"')


def scrape_lines(paths) -> list[tuple[str, dict, float]]:
    """(metric, labels, value) of every line of the metrics the pull reads."""
    lines = []
    for path in paths:
        for line in path.read_text().splitlines():
            match = _LINE.match(line)
            if match and match["name"] in prometheus.PROMETHEUS_METRICS:
                lines.append(
                    (match["name"], dict(_LABEL.findall(match["labels"])), float(match["value"]))
                )
    return lines


def expected_findings(paths) -> dict:
    lines = scrape_lines(paths)
    model_of = {labels["UUID"]: labels.get("modelName", "") for _name, labels, _value in lines}
    devices_per_metric = {
        metric: len(
            {
                (labels["UUID"], labels.get("GPU_I_ID"))
                for name, labels, _value in lines
                if name == metric
            }
        )
        for metric in prometheus.PROMETHEUS_METRICS
    }
    return {
        "gpu_count": len(model_of),
        "devices": len({(labels["UUID"], labels.get("GPU_I_ID")) for _n, labels, _v in lines}),
        "models": sorted(Counter(model_of.values()).items(), key=lambda item: (-item[1], item[0])),
        "hostnames": sorted({labels["Hostname"] for _name, labels, _value in lines}),
        "present": [(name, count) for name, count in devices_per_metric.items() if count],
        "missing": [name for name, count in devices_per_metric.items() if not count],
        "mig": any("GPU_I_ID" in labels for _name, labels, _value in lines),
    }


def test_the_files_hold_what_this_module_expects():
    expected = expected_findings(TARGETS)
    # 8×H100, T4, L4, L40S, a vGPU and the MIG slice of an A100: 13 GPUs, 13 devices.
    assert (expected["gpu_count"], expected["devices"], expected["mig"]) == (13, 13, True)
    assert ("NVIDIA H100 80GB HBM3", 8) in expected["models"]
    assert expected["missing"] == []


# --- Local servers ---------------------------------------------------------------------------


def serve(handler_class):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_class)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def shut(server, thread):
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


class ExporterHandler(BaseHTTPRequestHandler):
    """``/metrics/<file stem>``: that scrape, as dcgm-exporter serves it; ``/page``: an HTML
    page (a web server that is not Prometheus); anything else 404."""

    def do_GET(self):  # noqa: N802 - http.server's name
        for path in TARGETS:
            if self.path == f"/metrics/{path.stem}":
                return self._send(200, path.read_bytes(), "text/plain; version=0.0.4")
        if self.path.startswith("/page"):
            return self._send(200, b"<!doctype html><title>Wiki</title><p>hello", "text/html")
        return self._send(404, b"404 page not found\n", "text/plain")

    def _send(self, status, body, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def exporter():
    server, thread = serve(ExporterHandler)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        shut(server, thread)


def api_get(base_url: str, query: str) -> dict:
    url = f"{base_url}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - 127.0.0.1
        return json.loads(response.read())


@pytest.fixture(scope="module")
def scraping_prometheus(exporter, tmp_path_factory):
    """Debian's prometheus scraping every target once a second, as a fleet's does."""
    process, base_url, _ = tsdb_servers.start_scraping_prometheus(
        exporter, TARGETS, tmp_path_factory.mktemp("prometheus-connect")
    )
    expected = expected_findings(TARGETS)

    def every_device_seen():
        try:
            answer = api_get(base_url, 'group by (UUID, GPU_I_ID) ({__name__=~"DCGM_FI_.*"})')
        except OSError:
            return False
        return len(answer["data"]["result"]) == expected["devices"]

    try:
        wait_until(every_device_seen, timeout_seconds=60, what="prometheus to scrape every GPU")
        yield base_url
    finally:
        tsdb_servers.stop(process)


class AuthProxy:
    """A reverse proxy in front of a server that lets in HTTP basic authentication as
    ``USER``/``PASSWORD`` or the bearer token ``TOKEN`` (as an nginx in front of a
    Prometheus does), answering 401 otherwise; it records the Authorization headers."""

    def __init__(self, upstream: str):
        self.seen: list[str] = []
        proxy = self
        basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                authorization = self.headers.get("Authorization", "")
                proxy.seen.append(authorization)
                if authorization not in (basic, f"Bearer {TOKEN}"):
                    body = b"401 Unauthorized\n"
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="prometheus"')
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                with urllib.request.urlopen(f"{upstream}{self.path}", timeout=10) as answer:  # noqa: S310
                    body = answer.read()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format, *args):
                pass

        self.server, self.thread = serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        shut(self.server, self.thread)


@pytest.fixture(scope="module")
def auth_proxy(scraping_prometheus):
    proxy = AuthProxy(scraping_prometheus)
    try:
        yield proxy
    finally:
        proxy.close()


# --- Probing ---------------------------------------------------------------------------------


@prometheus_mark
@pytest.mark.django_db
def test_probing_a_real_prometheus_finds_what_the_scrapes_hold(scraping_prometheus):
    expected = expected_findings(TARGETS)
    findings = connect.probe(f"{scraping_prometheus}/graph?g0.expr=up")
    assert findings.base_url == scraping_prometheus
    assert findings.gpu_count == expected["gpu_count"] == 13
    assert len(findings.devices) == expected["devices"]
    assert findings.models == expected["models"]
    assert findings.hostnames == expected["hostnames"]
    assert findings.metrics_present == expected["present"]
    assert findings.metrics_missing == expected["missing"]
    assert (findings.mig, findings.mig_slice_count) == (True, 1)
    assert findings.unidentified_gpus == []
    (slice_,) = [device for device in findings.devices if device.gpu_instance_id is not None]
    assert (slice_.key, slice_.mig_profile, slice_.hostname) == (
        "GPU-d6dd33b9-e50e-997c-f303-c8f7312fa498/7",
        "1g.10gb",
        "della-l01g1",
    )


@prometheus_mark
@pytest.mark.django_db
def test_the_page_shows_the_findings_and_proposes_a_pool_per_model_and_host_prefix(
    client, make_user, scraping_prometheus
):
    client.force_login(make_user("lead"))
    response = client.post(
        reverse("telemetry:connect"),
        {"url": scraping_prometheus, "action": "probe"},
        headers={"HX-Request": "true", "HX-Target": "connect-findings"},
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="connect-findings"'), body[:200]
    expected = expected_findings(TARGETS)
    assert re.search(r'id="connect-gpu-count">13 · 1 MIG slice<', body)
    for model, count in expected["models"]:
        assert f"<li>{model} × {count}</li>" in body
    assert ", ".join(expected["hostnames"]) in body
    for name, count in expected["present"]:
        assert re.search(rf"<code>{name}</code> · {count} GPUs? or slices?<", body), name
    page = client.post(
        reverse("telemetry:connect"), {"url": scraping_prometheus, "action": "probe"}
    )
    assert "<html" in page.content.decode()
    proposals = {
        form.proposal.model_name: (form.initial["name"], form.initial["gpu_model"], form.proposal)
        for form in page.context["pool_forms"]
    }
    assert len(proposals) == len(expected["models"])
    name, gpu_model, h100 = proposals["NVIDIA H100 80GB HBM3"]
    assert (name, gpu_model.slug, h100.gpu_count, h100.gpus_per_node) == (
        "H100 SXM gpu-node",
        "h100-sxm",
        8,
        8,
    )
    # "GRID A100-40C" (a vGPU profile) names no form factor: every A100 40GB fits, none is
    # chosen for the person.
    _name, grid_model, grid = proposals["GRID A100-40C"]
    assert grid_model is None and {model.slug for model in grid.catalog_matches} >= {
        "a100-pcie-40gb",
        "a100-sxm-40gb",
    }
    assert proposals["NVIDIA A100 80GB PCIe"][1].slug == "a100-pcie-80gb"
    assert proposals["Tesla T4"][0] == "T4 cp-bm14r"


def test_hostname_prefixes():
    assert connect.hostname_prefix("gpu-node-07.dc1.example.com") == "gpu-node"
    assert connect.hostname_prefix("dgx12") == "dgx"
    assert connect.hostname_prefix("10.0.3.17") == ""
    assert connect.hostname_prefix("1234") == "1234"
    assert connect.base_url_of("http://vm:8481/select/0/prometheus/api/v1/query?x=1") == (
        "http://vm:8481/select/0/prometheus"
    )


@prometheus_mark
@pytest.mark.django_db
def test_credentials_are_sent_and_a_refusal_says_what_to_do(auth_proxy):
    with pytest.raises(connect.ProbeError, match=r"asks for credentials \(HTTP 401\): enter"):
        connect.probe(auth_proxy.url)
    wrong = connect.Credentials(username=USER, password="nope")
    with pytest.raises(connect.ProbeError, match=r"refused the credentials \(HTTP 401\): check"):
        connect.probe(auth_proxy.url, wrong)
    by_password = connect.probe(auth_proxy.url, connect.Credentials(USER, PASSWORD))
    by_token = connect.probe(auth_proxy.url, connect.Credentials(bearer_token=TOKEN))
    assert by_password.gpu_count == by_token.gpu_count == 13
    assert f"Bearer {TOKEN}" in auth_proxy.seen


@prometheus_mark
@pytest.mark.django_db
def test_servers_that_cannot_answer_get_sentences_a_person_can_act_on(exporter):
    nothing = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(connect.ProbeError) as refused:
        connect.probe(nothing)
    assert str(refused.value) == (
        f"Nothing answers at {nothing} (connection refused): check the host and port, and "
        "that the server runs and listens on an address gpufleet can reach."
    )
    with pytest.raises(connect.ProbeError) as not_found:
        connect.probe(exporter)
    assert str(not_found.value).startswith(
        f"{exporter} answered HTTP 404 but not as a Prometheus API does: enter the base URL"
    )
    with pytest.raises(connect.ProbeError, match=r"answered HTTP 200 but not as a Prometheus"):
        connect.probe(f"{exporter}/page")
    with pytest.raises(connect.ProbeError, match="not a host name gpufleet can resolve"):
        connect.probe("http://no-such-host.invalid:9090")


@prometheus_mark
@pytest.mark.django_db
def test_a_prometheus_without_dcgm_metrics_asks_whether_dcgm_exporter_is_scraped(tmp_path):
    now_ms = round(time.time() * 1000)
    process, base_url = tsdb_servers.start_prometheus_with(
        [Series("node_load1", {"instance": "gpu-node-1:9100"}, [(now_ms - 60_000, 0.5)])],
        tmp_path,
    )
    try:
        with pytest.raises(connect.ProbeError) as caught:
            connect.probe(base_url)
    finally:
        tsdb_servers.stop(process)
    assert str(caught.value) == (
        "No series named DCGM_FI_DEV_GPU_UTIL (nor any other DCGM metric gpufleet reads): is "
        "dcgm-exporter scraped by this server?"
    )


@pytest.mark.django_db
def test_a_refused_connection_shows_on_the_page(client, make_user):
    client.force_login(make_user("admin"))
    nothing = f"http://127.0.0.1:{free_port()}"
    response = client.post(
        reverse("telemetry:connect"),
        {"url": nothing, "password": "typed", "action": "probe"},
        headers={"HX-Request": "true", "HX-Target": "connect-findings"},
    )
    body = response.content.decode()
    assert "Nothing answers at" in body and "connection refused" in body
    assert "typed" not in body
    missing = client.post(
        reverse("telemetry:connect"),
        {"url": "ftp://files", "action": "probe"},
        headers={"HX-Request": "true", "HX-Target": "connect-findings"},
    )
    assert "Prometheus or VictoriaMetrics URL: Enter the server" in missing.content.decode()


# --- Permissions -----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "status"), [("lead", 200), ("admin", 200), ("ops", 403)])
def test_only_technical_leads_and_superusers_may_connect(client, make_user, role, status):
    client.force_login(make_user(role))
    assert client.get(reverse("telemetry:connect")).status_code == status
    before = (Pool.objects.count(), PullSource.objects.count())
    posted = client.post(
        reverse("telemetry:connect"),
        {"url": f"http://127.0.0.1:{free_port()}", "action": "accept"},
    )
    assert posted.status_code == status
    assert (Pool.objects.count(), PullSource.objects.count()) == before


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["ops", "reader", "procurement"])
def test_ops_finance_and_procurement_cannot_accept(client, make_user, role):
    client.force_login(make_user(role))
    response = client.post(
        reverse("telemetry:connect"), {"url": "http://127.0.0.1:1", "action": "accept"}
    )
    assert response.status_code == 403
    assert not Pool.objects.exists()


# --- The empty Overview ----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_empty_overview_links_to_the_page_for_those_who_may_connect(client, make_user, pool):
    client.force_login(make_user("lead"))
    Pool.objects.all().delete()
    empty = client.get(reverse("dashboard:overview")).content.decode()
    assert f'href="{reverse("telemetry:connect")}"' in empty
    assert "Connect your fleet" in empty
    client.force_login(make_user("ops"))
    assert (
        reverse("telemetry:connect")
        not in client.get(reverse("dashboard:overview")).content.decode()
    )


@pytest.mark.django_db
def test_an_overview_with_pools_keeps_its_look(client, make_user, pool):
    client.force_login(make_user("lead"))
    page = client.get(reverse("dashboard:overview")).content.decode()
    assert 'id="kpis"' in page and "connect-call-to-action" not in page


# --- Accepting, with a real worker -----------------------------------------------------------

HOUR_LOADED = timedelta(minutes=75)


def backfilled_fleet(now) -> list[Series]:
    """Every line of the five scrapes as a series of one-minute samples over the last
    75 minutes, at the value the file gives."""
    start_ms = round((now - HOUR_LOADED).timestamp() * 1000)
    end_ms = round(now.timestamp() * 1000)
    stamps = list(range(start_ms, end_ms, 60_000))
    return [
        Series(name, labels, [(stamp, value) for stamp in stamps])
        for name, labels, value in scrape_lines(SCRAPES)
    ]


@pytest.fixture
def backfilled_prometheus(tmp_path):
    process, base_url = tsdb_servers.start_prometheus_with(
        backfilled_fleet(timezone.now()), tmp_path
    )
    try:
        yield base_url
    finally:
        tsdb_servers.stop(process)


def accepted_form(response, url: str, changes: dict) -> dict:
    """The POST of "Connect the fleet" after ``response``'s findings: each proposal's
    fields as drawn, changed per reported model by ``changes``."""
    data = {"url": url, "action": "accept"}
    for form in response.context["pool_forms"]:
        values = {
            "key": form.initial["key"],
            "include": "on",
            "name": form.initial["name"],
            "gpu_model": form.initial["gpu_model"].pk if form.initial["gpu_model"] else "",
            "purpose": form.initial["purpose"],
        }
        values.update(changes.get(form.proposal.model_name, {}))
        data.update({f"{form.prefix}-{key}": value for key, value in values.items() if value})
    return data


@prometheus_mark
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_accepting_creates_pools_and_gpus_and_a_worker_rolls_up_the_last_hour(
    client, make_user, backfilled_prometheus, celery_worker_process
):
    lead = make_user("lead")
    client.force_login(lead)
    url = reverse("telemetry:connect")
    tried = client.post(url, {"url": backfilled_prometheus, "action": "probe"})
    assert tried.status_code == 200
    findings = tried.context["findings"]
    assert (findings.gpu_count, findings.mig) == (12, False)
    a100_40 = GpuModel.objects.get(slug="a100-pcie-40gb")
    data = accepted_form(
        tried,
        backfilled_prometheus,
        {
            "NVIDIA H100 80GB HBM3": {"name": "Training H100", "purpose": "training"},
            "GRID A100-40C": {"gpu_model": a100_40.pk},
            "NVIDIA L4": {"include": ""},
        },
    )
    accepted = client.post(url, data)
    assert accepted.status_code == 302, accepted.context and accepted.context.get("accept_error")
    run = ImportRun.objects.get()
    assert accepted.url == reverse("telemetry:connect_run", kwargs={"pk": run.pk})

    pools = {pool.name: pool for pool in Pool.objects.select_related("gpu_model")}
    assert set(pools) == {
        "Training H100",
        "GRID A100-40C test-ai-1-node-pool-40c-d5ds8-br9r6-9tb2c",
        "L40S gpu1-wl8sg",
        "T4 cp-bm14r",
    }
    h100 = pools["Training H100"]
    assert (h100.purpose, h100.gpu_count, h100.gpus_per_node, h100.gpu_model.slug) == (
        "training",
        8,
        8,
        "h100-sxm",
    )
    assert h100.effective_price_per_gpu_hour_usd == h100.gpu_model.reference_price_per_gpu_hour_usd
    source = PullSource.objects.get()
    assert (source.kind, source.url, source.pool) == ("prometheus", backfilled_prometheus, None)
    expected = {uuid: gpu for path in SCRAPES for uuid, gpu in expected_gpus(path).items()}
    l4_uuid = "GPU-c2f76b33-7953-256e-8f33-1343419b1a1c"
    assert set(GpuDevice.objects.values_list("uuid", flat=True)) == set(expected) - {l4_uuid}

    def done():
        page = client.get(reverse("telemetry:connect_run", kwargs={"pk": run.pk}))
        return page if page.context["done"] else None

    page = wait_until(done, timeout_seconds=120, what="the first pull and its rollups")
    run.refresh_from_db()
    assert run.status == "succeeded" and run.rows_rejected == 0, run.message
    # The pull found the GPUs it was given by their keys: none twice; the unticked L4 waits
    # unassigned.
    assert GpuDevice.objects.count() == len(expected)
    assert GpuDevice.objects.get(uuid=l4_uuid).pool is None

    rows = {row.pool.name: row for row in page.context["pools"]}
    assert set(rows) == set(pools)
    for name, pool in pools.items():
        gpus = {device.uuid for device in GpuDevice.objects.filter(pool=pool)}
        busy_per_hour = sum(expected[uuid]["utilization_pct"] for uuid in gpus) / 100
        hours = list(PoolHourlyUsage.objects.filter(pool=pool).order_by("hour"))
        assert 1 <= len(hours) <= 2, name
        for usage in hours:
            assert usage.reporting_gpus == pool.gpu_count
            assert usage.busy_gpu_hours == pytest.approx(busy_per_hour)
        idle = (
            sum(Decimal(str(round(pool.gpu_count - busy_per_hour, 6))) for _usage in hours)
            * pool.effective_price_per_gpu_hour_usd
        )
        row = rows[name]
        assert row.hours == len(hours)
        assert row.idle_cost_usd == idle.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        assert row.utilization_pct == pytest.approx(100 * busy_per_hour / pool.gpu_count)
    body = page.content.decode()
    assert f'href="{h100.get_absolute_url()}"' in body


@pytest.mark.django_db
def test_nobody_sees_the_stored_secrets_again(client, make_user):
    source = PullSource.objects.create(
        name="secret",
        slug="secret",
        kind="prometheus",
        url="http://prometheus:9090",
        username=USER,
        password=PASSWORD,
        bearer_token=TOKEN,
    )
    client.force_login(make_user("admin"))
    for page in (
        client.get(reverse("telemetry:pull_source_list")),
        client.get(reverse("telemetry:pull_source_edit", kwargs={"slug": source.slug})),
        client.get(reverse("pull-source-detail", kwargs={"slug": source.slug})),
    ):
        assert page.status_code == 200
        body = page.content.decode()
        assert PASSWORD not in body and TOKEN not in body
    assert base.source_headers(source) == {"Authorization": f"Bearer {TOKEN}"}


@pytest.mark.django_db
def test_the_source_form_keeps_replaces_or_forgets_the_secrets(client, make_user):
    source = PullSource.objects.create(
        name="secret",
        slug="secret",
        kind="prometheus",
        url="http://127.0.0.1:9090",
        username=USER,
        password=PASSWORD,
    )
    client.force_login(make_user("lead"))
    url = reverse("telemetry:pull_source_edit", kwargs={"slug": source.slug})
    fields = {
        "name": "secret",
        "slug": "secret",
        "kind": "prometheus",
        "url": "http://127.0.0.1:9090",
        "interval_seconds": "60",
        "enabled": "on",
        "username": USER,
    }
    assert client.post(url, fields).status_code == 302
    source.refresh_from_db()
    assert (source.username, source.password, source.bearer_token) == (USER, PASSWORD, "")
    assert client.post(url, {**fields, "bearer_token": f" {TOKEN} "}).status_code == 302
    source.refresh_from_db()
    assert (source.password, source.bearer_token) == (PASSWORD, TOKEN)
    assert client.post(url, {**fields, "forget_secrets": "on"}).status_code == 302
    source.refresh_from_db()
    assert (source.username, source.password, source.bearer_token) == (USER, "", "")
