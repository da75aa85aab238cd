"""The pull channels against real servers: a local HTTP server serving the real dcgm-exporter
scrapes, and a real Prometheus (Debian's ``prometheus``, ``scripts/ensure_prometheus.sh``)
scraping it. Expected values are read from the scrape files and the stored Prometheus API
answers here, independently of the parsers."""

import copy
import gzip
import json
import re
import socket
import subprocess
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from apps.telemetry.ingest.parsers import TelemetryFormatError
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    ImportRun,
    PendingRollup,
    PoolHourlyUsage,
    PullSource,
)
from apps.telemetry.pull import base, prometheus, scrapes
from apps.telemetry.pull.tasks import (
    pull_due_sources_task,
    pull_scrape_batch_task,
    pull_source_task,
)
from apps.telemetry.rollups import hourly
from apps.telemetry.tasks import rollup_pending_task
from tests.factories import PullSourceFactory
from tests.telemetry import tsdb_servers
from tests.waiting import wait_until

DATA = Path(__file__).resolve().parent.parent / "data"
SCRAPES = sorted((DATA / "dcgm-exporter" / "scrapes").glob("*.prom"))
# Stored Prometheus API answers (sources in tests/data/SOURCES.md).
PROMETHEUS_API = DATA / "prometheus-api"
DOCS_QUERY_RANGE = PROMETHEUS_API / "prometheus_docs_query_range_example_up.json"
AICR_GPU_UTIL = PROMETHEUS_API / "aicr_instant_query_DCGM_FI_DEV_GPU_UTIL.json"
AICR_FB_USED = PROMETHEUS_API / "aicr_instant_query_DCGM_FI_DEV_FB_USED.json"
PROMETHEUS_STARTUP_SECONDS = 60

prometheus_mark = pytest.mark.prometheus


# --- What the scrape files hold, read with a regex of our own ----------------------------

_LINE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)\{(?P<labels>.*)\}\s+(?P<value>\S+)\s*$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="([^"]*)"')


def expected_gpus(path: Path) -> dict[str, dict]:
    """UUID → utilization (GR_ENGINE_ACTIVE×100 where present, else GPU_UTIL), FB used,
    hostname and pod, as the file says."""
    readings: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        gpu = readings.setdefault(
            labels["UUID"], {"hostname": labels.get("Hostname", ""), "pod": ""}
        )
        gpu["pod"] = gpu["pod"] or labels.get("pod", "")
        gpu[match["name"]] = float(match["value"])
    expected = {}
    for uuid, gpu in readings.items():
        engine_active = gpu.get("DCGM_FI_PROF_GR_ENGINE_ACTIVE")
        expected[uuid] = {
            "utilization_pct": (
                engine_active * 100 if engine_active is not None else gpu["DCGM_FI_DEV_GPU_UTIL"]
            ),
            "memory_used_mib": gpu.get("DCGM_FI_DEV_FB_USED"),
            "hostname": gpu["hostname"],
            "pod": gpu["pod"],
        }
    return expected


ALL_EXPECTED = {uuid: gpu for path in SCRAPES for uuid, gpu in expected_gpus(path).items()}


def test_the_scrapes_hold_the_gpus_this_module_expects():
    # 8×H100 + T4 + L4 + L40S + vGPU; the T4 is the one busy GPU, and its GR_ENGINE_ACTIVE
    # (0.156205) differs from its GPU_UTIL (91): the preference rule is visible.
    assert len(ALL_EXPECTED) == 12
    t4 = ALL_EXPECTED["GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469a"]
    assert t4["utilization_pct"] == pytest.approx(15.6205)


# --- A local dcgm-exporter stand-in ------------------------------------------------------


class ScrapeHandler(BaseHTTPRequestHandler):
    """``/metrics/<file stem>`` serves that scrape (``/gzip/<file stem>`` gzip-encoded, as
    Go's promhttp does); ``/not-metrics`` plain text that is not dcgm; ``/slow`` answers
    after 2 s; anything else 404."""

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path.startswith("/gzip/"):
            path = DATA / "dcgm-exporter" / "scrapes" / f"{self.path.removeprefix('/gzip/')}.prom"
            if path in SCRAPES:
                body = gzip.compress(path.read_bytes())
                return self._send(200, body, "text/plain; version=0.0.4", encoding="gzip")
        if self.path.startswith("/metrics/"):
            path = (
                DATA / "dcgm-exporter" / "scrapes" / f"{self.path.removeprefix('/metrics/')}.prom"
            )
            if path.parent.name == "scrapes" and path in SCRAPES:
                return self._send(200, path.read_bytes(), "text/plain; version=0.0.4")
        if self.path == "/not-metrics":
            return self._send(200, b"# just a page\nhello_world 1\n", "text/plain")
        if self.path == "/slow":
            time.sleep(2)  # an exporter slower than the pull's timeout: the delay is the test
            return self._send(200, SCRAPES[0].read_bytes(), "text/plain")
        return self._send(404, b"404 page not found\n", "text/plain")

    def _send(self, status: int, body: bytes, content_type: str, encoding: str = ""):
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if encoding:
                self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout test)

    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def scrape_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScrapeHandler)
    server.daemon_threads, server.block_on_close = True, False  # /slow must not hold us up
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- pull_dcgm_exporter ------------------------------------------------------------------

NOW = datetime(2026, 11, 1, 10, 15, tzinfo=UTC)


@pytest.mark.django_db
@pytest.mark.parametrize("path", SCRAPES, ids=lambda path: path.stem)
def test_pull_dcgm_exporter_stores_a_live_scrape_once(
    path, scrape_server, pool, django_capture_on_commit_callbacks
):
    url = f"{scrape_server}/metrics/{path.stem}"
    source = PullSourceFactory(name="node", kind="dcgm_exporter", url=url, pool=pool)
    expected = expected_gpus(path)

    with django_capture_on_commit_callbacks() as enqueued_after_commit:
        run = scrapes.pull_dcgm_exporter(source, now=NOW)

    assert (run.status, run.source, run.format, run.filename) == (
        "succeeded",
        "scrape",
        "dcgm",
        url,
    )
    assert (run.rows_accepted, run.rows_duplicate, run.rows_rejected) == (len(expected), 0, 0)
    assert run.skip_bad_rows and run.pool == pool
    # No rollup task per scrape: the pool-hour is queued for the beat drain instead.
    assert enqueued_after_commit == []
    hour = NOW.replace(minute=0)
    assert list(PendingRollup.objects.values_list("pool_id", "hour")) == [(pool.pk, hour)]
    samples = {s.device.uuid: s for s in GpuSample.objects.select_related("device")}
    assert set(samples) == set(expected)
    for uuid, gpu in expected.items():
        sample = samples[uuid]
        assert sample.timestamp == NOW
        assert sample.utilization_pct == pytest.approx(gpu["utilization_pct"])
        assert sample.memory_used_mib == gpu["memory_used_mib"]
        assert sample.device.hostname == gpu["hostname"]
        assert sample.pod == gpu["pod"]
    assert set(GpuDevice.objects.values_list("pool_id", "assignment")) == {(pool.pk, "import")}
    source.refresh_from_db()
    assert (source.last_pulled_at, source.last_status) == (NOW, "ok")
    assert source.last_message == run.message

    again = scrapes.pull_dcgm_exporter(source, now=NOW)
    assert (again.status, again.rows_accepted, again.rows_duplicate) == (
        "succeeded",
        0,
        len(expected),
    )
    assert GpuSample.objects.count() == len(expected)
    assert ImportRun.objects.filter(source="scrape").count() == 2
    assert PendingRollup.objects.count() == 1  # queued once however often touched

    assert hourly.rollup_pending() == (1, 1)
    assert not PendingRollup.objects.exists()
    usage = PoolHourlyUsage.objects.get(pool=pool)
    assert usage.hour == hour
    assert usage.reporting_gpus == len(expected)
    assert usage.busy_gpu_hours == pytest.approx(
        sum(gpu["utilization_pct"] for gpu in expected.values()) / 100
    )


@pytest.mark.django_db
def test_unreachable_or_wrong_endpoints_record_a_failed_run_and_raise_nothing(
    scrape_server, monkeypatch
):
    closed = f"http://127.0.0.1:{free_port()}/metrics"
    cases = [
        (closed, "failed", "could not reach"),
        (f"{scrape_server}/nowhere", "failed", "answered HTTP 404: 404 page not found"),
        (f"{scrape_server}/not-metrics", "rejected", "no dcgm-exporter GPU metrics found"),
        (f"{scrape_server}/slow", "failed", "did not answer within"),
    ]
    monkeypatch.setattr(base, "HTTP_TIMEOUT_SECONDS", 0.5)
    for number, (url, status, reason) in enumerate(cases):
        source = PullSourceFactory(name=f"bad {number}", kind="dcgm_exporter", url=url)
        run = scrapes.pull_dcgm_exporter(source, now=NOW)
        assert run.status == status, (url, run.message)
        assert reason in run.message, run.message
        assert url in run.message
        assert run.finished_at is not None and run.rows_accepted == 0
        source.refresh_from_db()
        assert (source.last_status, source.last_pulled_at) == ("error", NOW)
        assert reason in source.last_message
    assert "Connection refused" in PullSource.objects.get(name="bad 0").last_message
    assert not GpuSample.objects.exists()


@pytest.mark.django_db
def test_a_gzip_encoded_scrape_reads_the_same(scrape_server):
    path = SCRAPES[1]
    source = PullSourceFactory(
        name="gzip", kind="dcgm_exporter", url=f"{scrape_server}/gzip/{path.stem}"
    )
    run = scrapes.pull_dcgm_exporter(source, now=NOW)
    assert (run.status, run.rows_accepted) == ("succeeded", len(expected_gpus(path)))
    utilization = dict(GpuSample.objects.values_list("device__uuid", "utilization_pct"))
    assert utilization == {
        uuid: pytest.approx(gpu["utilization_pct"]) for uuid, gpu in expected_gpus(path).items()
    }


def test_only_http_urls_are_pulled():
    with pytest.raises(base.PullError, match="only http:// and https://"):
        base.http_get("file:///etc/passwd", accept="text/plain")


# --- The Celery tasks ---------------------------------------------------------------------


@pytest.mark.django_db
def test_pull_due_sources_enqueues_enabled_sources_whose_interval_has_passed(monkeypatch):
    now = timezone.now()
    due = [
        PullSourceFactory(name="never", kind="dcgm_exporter", url="http://a:9400/metrics"),
        PullSourceFactory(
            name="stale",
            kind="prometheus",
            url="http://prom:9090",
            interval_seconds=60,
            last_pulled_at=now - timedelta(seconds=61),
        ),
    ]
    PullSourceFactory(
        name="fresh",
        kind="dcgm_exporter",
        url="http://b:9400/metrics",
        interval_seconds=300,
        last_pulled_at=now - timedelta(seconds=100),
    )
    PullSourceFactory(
        name="disabled", kind="dcgm_exporter", url="http://c:9400/metrics", enabled=False
    )
    enqueued, batches = [], []
    monkeypatch.setattr(
        pull_source_task,
        "apply_async",
        lambda args, kwargs, **options: enqueued.append((args, kwargs, options)),
    )
    monkeypatch.setattr(
        pull_scrape_batch_task,
        "apply_async",
        lambda args, kwargs, **options: batches.append((args, kwargs, options)),
    )

    assert pull_due_sources_task() == 2
    # The Prometheus source is pulled alone, the dcgm-exporter one in a batch (of one).
    assert enqueued == [((due[1].pk,), {"only_if_due": True}, {"expires": 60})]
    # A pull nobody started within its source's interval is superseded by a later tick.
    assert batches == [(([due[0].pk],), {"only_if_due": True}, {"expires": 60})]


@pytest.mark.django_db
def test_a_15_second_interval_is_honoured_and_shorter_ones_are_refused(monkeypatch):
    tick = settings.CELERY_BEAT_SCHEDULE["pull-telemetry-sources"]
    assert tick["task"] == pull_due_sources_task.name
    assert tick["schedule"] == timedelta(seconds=15)
    assert tick["options"]["expires"] < 15  # a missed tick is not run late, twice
    now = timezone.now()
    fast = PullSourceFactory(
        name="fast",
        kind="dcgm_exporter",
        url="http://gpu-node-1.example.com:9400/metrics",
        interval_seconds=15,
        last_pulled_at=now - timedelta(seconds=15),
    )
    # Pulled 10 s ago by the previous tick's task, which a worker started 5 s late: due
    # again now, not a tick later (every 30 s).
    late = PullSourceFactory(
        name="pulled late",
        kind="dcgm_exporter",
        url="http://b:9400/metrics",
        interval_seconds=15,
        last_pulled_at=now - timedelta(seconds=10),
    )
    PullSourceFactory(
        name="just pulled",
        kind="dcgm_exporter",
        url="http://c:9400/metrics",
        interval_seconds=15,
        last_pulled_at=now - timedelta(seconds=5),
    )
    enqueued = []
    monkeypatch.setattr(
        pull_scrape_batch_task,
        "apply_async",
        lambda args, kwargs, **options: enqueued.append((args, options)),
    )
    assert pull_due_sources_task() == 2
    assert enqueued == [(([fast.pk, late.pk],), {"expires": 15})]

    fast.interval_seconds = 14
    with pytest.raises(ValidationError, match="greater than or equal to 15"):
        fast.full_clean()
    fast.interval_seconds = 15
    fast.full_clean()


def test_beat_drains_the_pending_rollups_every_minute():
    drain = settings.CELERY_BEAT_SCHEDULE["rollup-pending-telemetry"]
    assert drain["task"] == rollup_pending_task.name == "telemetry.rollup_pending"
    assert drain["schedule"] == timedelta(seconds=60)
    assert rollup_pending_task.acks_late and rollup_pending_task.reject_on_worker_lost


@pytest.mark.django_db
def test_pull_source_task_pulls_once_per_interval(scrape_server, pool):
    source = PullSourceFactory(
        name="t4",
        kind="dcgm_exporter",
        url=f"{scrape_server}/metrics/ericsson_T4_loaded_driver590_nohelp",
        pool=pool,
    )
    assert pull_source_task.name == "telemetry.pull_source"
    assert pull_source_task.acks_late and pull_source_task.time_limit
    assert pull_source_task(source.pk, only_if_due=True) == "succeeded"
    # Enqueued twice while the workers were busy: the second finds it already pulled.
    assert pull_source_task(source.pk, only_if_due=True) == "skipped"
    assert GpuSample.objects.count() == 1
    PullSource.objects.filter(pk=source.pk).update(enabled=False)
    assert pull_source_task(source.pk) == "skipped"
    assert pull_source_task(source.pk + 1000) == "skipped"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_pulls_then_the_drain_rolls_the_hour_up(
    scrape_server, pool, celery_worker_process
):
    """Through Redis to a real worker: the pull stores and queues, the drain rolls up."""
    path = SCRAPES[0]
    expected = expected_gpus(path)
    source = PullSourceFactory(
        name="h100 node",
        kind="dcgm_exporter",
        url=f"{scrape_server}/metrics/{path.stem}",
        pool=pool,
    )
    assert pull_source_task.delay(source.pk).get(timeout=60) == "succeeded"
    assert GpuSample.objects.count() == len(expected)
    (pending,) = PendingRollup.objects.all()
    assert not PoolHourlyUsage.objects.exists()  # not rolled up per scrape

    assert rollup_pending_task.delay().get(timeout=60) == 1
    assert not PendingRollup.objects.exists()
    usage = PoolHourlyUsage.objects.get(pool=pool)
    assert usage.hour == pending.hour
    assert usage.busy_gpu_hours == pytest.approx(
        sum(gpu["utilization_pct"] for gpu in expected.values()) / 100
    )


# --- Prometheus answers → rows, from the stored real API responses ----------------------


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def as_matrix(vector_payload: dict, offsets_seconds=(0, 60)) -> dict:
    """An instant-query vector reshaped into a query_range matrix: each series' value
    repeated at the given offsets from its timestamp."""
    data = copy.deepcopy(vector_payload["data"])
    for series in data["result"]:
        timestamp, value = series.pop("value")
        series["values"] = [[timestamp + offset, value] for offset in offsets_seconds]
    data["resultType"] = "matrix"
    return data


def moment(timestamp_seconds) -> datetime:
    # Decimal: the JSON's 1773114089.184 is not exactly representable as a float.
    milliseconds = int(Decimal(str(timestamp_seconds)) * 1000)
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=milliseconds)


def test_documented_query_range_example_reads_as_series_of_points():
    payload = load(DOCS_QUERY_RANGE)
    series = list(prometheus.series_points(prometheus.prometheus_data(payload, query="up")))
    assert [labels for labels, _points in series] == [
        item["metric"] for item in payload["data"]["result"]
    ]
    assert series[1][1] == [(1435781430781, "0"), (1435781445781, "0"), (1435781460781, "1")]
    assert moment(1435781430.781) == datetime(2015, 7, 1, 20, 10, 30, 781000, tzinfo=UTC)
    # "up" is not a DCGM metric: refused, not silently read as utilization.
    with pytest.raises(TelemetryFormatError, match="up is not one of the DCGM metrics"):
        prometheus.rows_from_prometheus([("up", payload["data"])])


def test_aicr_gpu_util_as_a_matrix_gives_one_row_per_gpu_and_instant():
    payload = load(AICR_GPU_UTIL)
    result = prometheus.rows_from_prometheus([("DCGM_FI_DEV_GPU_UTIL", as_matrix(payload))])
    assert result.errors == []
    rows = {(row.device.uuid, row.timestamp): row for row in result.rows}
    assert len(rows) == 2 * len(payload["data"]["result"]) == 32
    for item in payload["data"]["result"]:
        labels, (timestamp, value) = item["metric"], item["value"]
        for offset in (0, 60):
            row = rows[(labels["UUID"], moment(timestamp) + timedelta(seconds=offset))]
            assert row.utilization_pct == float(value)
            assert row.memory_used_mib is None
            assert row.device.gpu_instance_id is None
            assert (row.hostname, row.gpu_index) == (labels["Hostname"], int(labels["gpu"]))
            assert (row.model_name, row.driver_version) == (
                "NVIDIA H100 80GB HBM3",
                labels["DCGM_FI_DRIVER_VERSION"],
            )
            # Idle GPUs carry the exporter's own pod (named after its job): not a workload.
            if labels["pod"].startswith(labels["job"] + "-"):
                assert (row.pod, row.namespace, row.container) == ("", "", "")
            else:
                assert (row.pod, row.namespace, row.container) == (
                    labels["pod"],
                    labels["namespace"],
                    labels["container"],
                )
    assert sum(1 for row in result.rows if row.pod) == 2  # GPU 0 of gpu-node-1, twice


def test_metrics_of_one_gpu_at_one_instant_merge_into_one_row():
    util, used = load(AICR_GPU_UTIL), load(AICR_FB_USED)
    # Put the FB_USED answer on the GPU_UTIL answer's instants, as query_range would.
    used_matrix = as_matrix(used)
    used_timestamp = used["data"]["result"][0]["value"][0]
    util_timestamp = util["data"]["result"][0]["value"][0]
    for series in used_matrix["result"]:
        for point in series["values"]:
            point[0] += util_timestamp - used_timestamp
    result = prometheus.rows_from_prometheus(
        [("DCGM_FI_DEV_GPU_UTIL", as_matrix(util)), ("DCGM_FI_DEV_FB_USED", used_matrix)]
    )
    assert result.errors == []
    assert len(result.rows) == 32
    used_by_uuid = {
        item["metric"]["UUID"]: float(item["value"][1]) for item in used["data"]["result"]
    }
    for row in result.rows:
        assert row.memory_used_mib == used_by_uuid[row.device.uuid]
        assert row.utilization_pct == 0.0
    assert used_by_uuid["GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005"] == 74166.0


def test_an_instant_vector_converts_too():
    used = load(AICR_FB_USED)
    result = prometheus.rows_from_prometheus([("DCGM_FI_DEV_FB_USED", used["data"])])
    assert len(result.rows) == len(used["data"]["result"]) == 16
    assert {row.timestamp for row in result.rows} == {moment(1773114089.444)}
    assert {row.device.uuid: row.memory_used_mib for row in result.rows} == {
        item["metric"]["UUID"]: float(item["value"][1]) for item in used["data"]["result"]
    }


T0 = 1_764_547_200  # 2025-12-01 00:00 UTC, in the unix seconds Prometheus answers


def matrix(name: str, labels: dict, points: list) -> dict:
    return {
        "resultType": "matrix",
        "result": [{"metric": {"__name__": name, **labels}, "values": points}],
    }


def test_dcgm_rules_hold_for_prometheus_series():
    t4 = {"UUID": "GPU-t4", "Hostname": "cp-bm14r7", "gpu": "0"}
    mig = {"UUID": "GPU-h100", "GPU_I_ID": "3", "GPU_I_PROFILE": "1g.10gb", "instance": "n1:9400"}
    exported = {
        "UUID": "GPU-l4",
        "instance": "[fd00::7]:9400",
        "pod": "dcgm-exporter-x1",
        "exported_pod": "trainer-0",
        "exported_namespace": "ml",
        "exported_container": "main",
    }
    not_supported = "9223372036854775808"  # DCGM's 9223372036854775794 as float64
    result = prometheus.rows_from_prometheus(
        [
            (
                "DCGM_FI_DEV_GPU_UTIL",
                matrix("DCGM_FI_DEV_GPU_UTIL", t4, [[T0 + 100, "91"], [T0 + 160, "140"]]),
            ),
            (
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                matrix("DCGM_FI_PROF_GR_ENGINE_ACTIVE", t4, [[T0 + 100, "0.156205"]]),
            ),
            ("DCGM_FI_DEV_GPU_UTIL", matrix("DCGM_FI_DEV_GPU_UTIL", exported, [[T0 + 100, "NaN"]])),
            (
                "DCGM_FI_DEV_POWER_USAGE",
                matrix("DCGM_FI_DEV_POWER_USAGE", exported, [[T0 + 100, "72"]]),
            ),
            (
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                matrix(
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", mig, [[T0 + 100, "0.5"], [T0 + 160, "1.5"]]
                ),
            ),
            (
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                matrix("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", mig, [[T0 + 100, not_supported]]),
            ),
            ("DCGM_FI_DEV_FB_USED", matrix("DCGM_FI_DEV_FB_USED", {"gpu": "1"}, [[T0 + 100, "5"]])),
            ("DCGM_FI_DEV_FB_USED", matrix("DCGM_FI_DEV_FB_USED", t4, [[T0 + 100, "12"]])),
            ("DCGM_FI_DEV_FB_USED", matrix("DCGM_FI_DEV_FB_USED", t4, [[T0 + 100, "13"]])),
        ]
    )
    at_100 = datetime(2025, 12, 1, 0, 1, 40, tzinfo=UTC)
    rows = {
        (row.device.uuid, row.device.gpu_instance_id, row.timestamp): row for row in result.rows
    }
    assert set(rows) == {("GPU-l4", None, at_100), ("GPU-h100", 3, at_100)}
    l4, mig_slice = rows[("GPU-l4", None, at_100)], rows[("GPU-h100", 3, at_100)]
    assert (l4.utilization_pct, l4.power_w, l4.hostname) == (None, 72.0, "fd00::7")
    assert (l4.pod, l4.namespace, l4.container) == ("trainer-0", "ml", "main")
    assert (mig_slice.utilization_pct, mig_slice.energy_mj) == (50.0, None)
    assert (mig_slice.hostname, mig_slice.mig_profile) == ("n1", "1g.10gb")
    messages = [error.message for error in result.errors]
    assert len(messages) == 4, messages
    assert any("DCGM_FI_DEV_GPU_UTIL" in m and "'140' is outside 0–100" in m for m in messages)
    assert any("'1.5' is outside 0–1" in m and 'GPU_I_ID="3"' in m for m in messages)
    assert any("has no UUID label" in m for m in messages)
    assert any("'13' contradicts 12" in m for m in messages)
    # The T4 at 100 s is left out for the contradiction; had it not been, its utilization
    # would be GR_ENGINE_ACTIVE × 100:
    result = prometheus.rows_from_prometheus(
        [
            ("DCGM_FI_DEV_GPU_UTIL", matrix("DCGM_FI_DEV_GPU_UTIL", t4, [[T0 + 100, "91"]])),
            (
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                matrix("DCGM_FI_PROF_GR_ENGINE_ACTIVE", t4, [[T0 + 100, "0.156205"]]),
            ),
        ]
    )
    assert [row.utilization_pct for row in result.rows] == [pytest.approx(15.6205)]


def test_labels_missing_from_one_series_are_filled_from_another_at_that_instant_only():
    bare = {"UUID": "GPU-x"}
    labelled = {"UUID": "GPU-x", "Hostname": "node-7", "pod": "trainer-0", "namespace": "ml"}
    result = prometheus.rows_from_prometheus(
        [
            (
                "DCGM_FI_DEV_GPU_UTIL",
                matrix("DCGM_FI_DEV_GPU_UTIL", bare, [[T0 + 100, "5"], [T0 + 160, "6"]]),
            ),
            ("DCGM_FI_DEV_FB_USED", matrix("DCGM_FI_DEV_FB_USED", labelled, [[T0 + 100, "1024"]])),
        ]
    )
    rows = sorted(result.rows, key=lambda row: row.timestamp)
    assert [(r.utilization_pct, r.memory_used_mib, r.hostname, r.pod) for r in rows] == [
        (5.0, 1024.0, "node-7", "trainer-0"),
        (6.0, None, "", ""),
    ]


def test_prometheus_error_answers_are_explained():
    payload = {
        "status": "error",
        "errorType": "timeout",
        "error": "query timed out in expression evaluation",
    }
    with pytest.raises(base.PullError) as caught:
        prometheus.prometheus_data(payload, query="DCGM_FI_DEV_GPU_UTIL")
    assert str(caught.value) == (
        "Prometheus refused the query DCGM_FI_DEV_GPU_UTIL (timeout): "
        "query timed out in expression evaluation"
    )
    with pytest.raises(base.PullError, match="is not a Prometheus API response"):
        prometheus.prometheus_data({"hello": "world"}, query="x")


def test_pull_ranges_sit_on_the_step_grid_and_are_capped():
    now = datetime(2026, 11, 1, 10, 15, 42, 500000, tzinfo=UTC)
    start, end = prometheus.prometheus_range(
        None, now, step_seconds=60, max_window=timedelta(hours=6)
    )
    assert (start, end) == (
        datetime(2026, 11, 1, 9, 15, tzinfo=UTC),
        datetime(2026, 11, 1, 10, 15, tzinfo=UTC),
    )
    behind = now - timedelta(days=2)
    start, end = prometheus.prometheus_range(
        behind, now, step_seconds=60, max_window=timedelta(hours=6)
    )
    assert (start, end - start) == (datetime(2026, 10, 30, 10, 15, tzinfo=UTC), timedelta(hours=6))
    # 1 s steps: Prometheus's 11,000 points per series cap the window before 6 hours do.
    start, end = prometheus.prometheus_range(
        behind, now, step_seconds=1, max_window=timedelta(hours=6)
    )
    assert end - start == timedelta(seconds=10_999)
    # A pulled_until ahead of now (a clock put back) asks for the current instant only.
    start, end = prometheus.prometheus_range(
        now + timedelta(hours=1), now, step_seconds=60, max_window=timedelta(hours=6)
    )
    assert start == end == datetime(2026, 11, 1, 10, 15, tzinfo=UTC)


# --- A real Prometheus scraping the local server -----------------------------------------


def api_get(base_url: str, path: str) -> dict:
    with urllib.request.urlopen(f"{base_url}{path}", timeout=5) as response:  # noqa: S310
        return json.loads(response.read())


@pytest.fixture(scope="module")
def prometheus_server(scrape_server, tmp_path_factory):
    """Debian's prometheus on a free 127.0.0.1 port, its own config and data directory,
    scraping every sample scrape once a second; stopped at the end of the module."""
    process, base_url, log_path = tsdb_servers.start_scraping_prometheus(
        scrape_server, SCRAPES, tmp_path_factory.mktemp("prometheus")
    )
    try:
        deadline, last_error = time.monotonic() + PROMETHEUS_STARTUP_SECONDS, None
        while True:
            if process.poll() is not None:
                pytest.fail(f"prometheus exited ({process.returncode}):\n{log_path.read_text()}")
            try:
                answer = api_get(base_url, "/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL")
                uuids = {item["metric"].get("UUID") for item in answer["data"]["result"]}
                if uuids == set(ALL_EXPECTED):
                    break
                last_error = f"{len(uuids)} of {len(ALL_EXPECTED)} GPUs so far"
            except OSError as error:
                last_error = error
            if time.monotonic() > deadline:
                pytest.fail(
                    f"prometheus had no DCGM_FI_DEV_GPU_UTIL for every GPU within "
                    f"{PROMETHEUS_STARTUP_SECONDS} s ({last_error}):\n{log_path.read_text()}"
                )
            time.sleep(0.25)
        # Two more scrapes of every target, so that every instant pulled below has every
        # target's data.
        all_seen_at = time.time()

        def scraped_twice_since():
            answer = api_get(base_url, "/api/v1/query?query=timestamp(DCGM_FI_DEV_GPU_UTIL)")
            stamps = {
                item["metric"].get("UUID"): float(item["value"][1])
                for item in answer["data"]["result"]
            }
            return set(stamps) == set(ALL_EXPECTED) and min(stamps.values()) >= all_seen_at + 2

        wait_until(scraped_twice_since, timeout_seconds=30, what="two more scrapes of every target")
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@prometheus_mark
@pytest.mark.django_db
def test_pull_prometheus_from_a_real_prometheus(prometheus_server, pool):
    source = PullSourceFactory(
        name="prometheus", kind="prometheus", url=prometheus_server, pool=pool
    )
    now = timezone.now()
    run = prometheus.pull_prometheus(source, now=now, step_seconds=1)

    assert (run.status, run.source, run.format, run.rows_rejected) == (
        "succeeded",
        "prometheus",
        "prometheus",
        0,
    ), run.message
    assert run.rows_accepted == GpuSample.objects.count() >= 2 * len(ALL_EXPECTED)
    source.refresh_from_db()
    end = now.replace(microsecond=0)
    assert (source.pulled_until, source.last_pulled_at, source.last_status) == (end, now, "ok")
    samples = list(GpuSample.objects.select_related("device"))
    assert {sample.device.uuid for sample in samples} == set(ALL_EXPECTED)
    for sample in samples:
        gpu = ALL_EXPECTED[sample.device.uuid]
        assert sample.utilization_pct == pytest.approx(gpu["utilization_pct"])
        assert sample.memory_used_mib == gpu["memory_used_mib"]
        assert (sample.device.hostname, sample.pod) == (gpu["hostname"], gpu["pod"])
        assert sample.timestamp.microsecond == 0 and sample.timestamp <= end
        assert sample.device.pool_id == pool.pk
    t4 = [s for s in samples if s.device.uuid == "GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469a"]
    assert all(s.utilization_pct == pytest.approx(15.6205) for s in t4)
    assert {(s.power_w, s.temperature_c) for s in t4} == {(68.244, 74.0)}

    # The same range again stores nothing.
    PullSource.objects.filter(pk=source.pk).update(pulled_until=None)
    source.refresh_from_db()
    again = prometheus.pull_prometheus(source, now=now, step_seconds=1)
    assert (again.status, again.rows_accepted, again.rows_duplicate) == (
        "succeeded",
        0,
        run.rows_accepted,
    )

    # The next pull continues from pulled_until: one row per GPU and new second, and the
    # boundary instant once more as a duplicate.
    time.sleep(2.2)  # new seconds to pull: the clock moving on is what the pull continues over
    later = timezone.now()
    following = prometheus.pull_prometheus(source, now=later, step_seconds=1)
    new_seconds = int(later.timestamp()) - int(now.timestamp())
    assert new_seconds >= 2
    assert (following.rows_accepted, following.rows_duplicate) == (
        len(ALL_EXPECTED) * new_seconds,
        len(ALL_EXPECTED),
    )
    source.refresh_from_db()
    assert source.pulled_until == later.replace(microsecond=0)


@prometheus_mark
@pytest.mark.django_db
def test_pull_prometheus_caps_a_long_gap_and_reports_an_empty_range(prometheus_server):
    now = timezone.now()
    behind = (now - timedelta(hours=10)).replace(second=0, microsecond=0)
    source = PullSourceFactory(
        name="behind", kind="prometheus", url=prometheus_server, pulled_until=behind
    )
    run = prometheus.pull_prometheus(source, now=now)
    assert (run.status, run.rows_total) == ("succeeded", 0)
    assert "holds none of the DCGM metrics" in run.message
    source.refresh_from_db()
    assert source.pulled_until == behind + timedelta(hours=6)
    assert source.last_status == "warning"


@prometheus_mark
@pytest.mark.django_db
def test_prometheus_errors_are_reported_not_raised(prometheus_server, scrape_server):
    now = timezone.now()
    with pytest.raises(base.PullError) as caught:
        prometheus.query_range(
            prometheus_server,
            "DCGM_FI_DEV_GPU_UTIL",
            start=now,
            end=now - timedelta(hours=1),
            step_seconds=60,
        )
    message = str(caught.value)
    assert message.startswith("Prometheus refused the query DCGM_FI_DEV_GPU_UTIL (bad_data): ")
    assert "end timestamp must not be before start time" in message
    with pytest.raises(base.PullError, match=r"\(bad_data\): .*parse error"):
        prometheus.query_range(
            prometheus_server, "DCGM_FI_DEV_GPU_UTIL{", start=now, end=now, step_seconds=60
        )

    # Not a Prometheus (the dcgm stand-in answers 404), and nothing listening at all.
    for number, (url, reason) in enumerate(
        [
            (scrape_server, "answered HTTP 404"),
            (f"http://127.0.0.1:{free_port()}", "could not reach"),
        ]
    ):
        source = PullSourceFactory(name=f"not prometheus {number}", kind="prometheus", url=url)
        run = prometheus.pull_prometheus(source, now=now)
        assert run.status == "failed" and reason in run.message, run.message
        source.refresh_from_db()
        assert (source.last_status, source.pulled_until) == ("error", None)
        assert reason in source.last_message
