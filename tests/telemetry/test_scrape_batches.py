"""Direct scrapes in batches (apps/telemetry/pull/scrapes.py, ``pull_dcgm_exporters``): the
scrapes of several nodes stored in one transaction with one COPY, each source keeping a
run of its own; and two real Celery workers scraping and draining one queue at once,
their pool-hours checked against Python over the stored samples.

Expected values come from the scrape files (read with test_pull's own regex) or from the
values the test's node server served, never from the parsers."""

import re
import statistics
import threading
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg
import pytest
from django.db import connection
from django.utils import translation

from apps.pools.models import Pool
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    ImportRun,
    PendingRollup,
    PoolHourlyUsage,
    PullSource,
)
from apps.telemetry.pull import scrapes
from apps.telemetry.pull.tasks import pull_scrape_batch_task
from apps.telemetry.rollups import hourly
from apps.telemetry.tasks import rollup_pending_task
from config.celery_app import app as celery_app
from tests.conftest import CeleryWorker
from tests.factories import PoolFactory, PullSourceFactory
from tests.telemetry.test_pull import SCRAPES, expected_gpus, free_port
from tests.waiting import wait_until

NOW = datetime(2026, 11, 1, 10, 15, tzinfo=UTC)


def _sources(urls, pool):
    return [
        PullSourceFactory(name=f"node {number}", kind="dcgm_exporter", url=url, pool=pool)
        for number, url in enumerate(urls)
    ]


@pytest.mark.django_db
def test_a_batch_stores_every_scrape_once_and_each_source_keeps_its_run(scrape_server):
    # 12 GPUs in the five real scrapes: declared 16, so nothing is capped.
    pool = PoolFactory(gpu_count=16)
    good = [f"{scrape_server}/metrics/{path.stem}" for path in SCRAPES]
    bad = {
        f"{scrape_server}/nowhere": ("failed", "answered HTTP 404: 404 page not found"),
        f"{scrape_server}/not-metrics": ("rejected", "no dcgm-exporter GPU metrics found"),
        f"http://127.0.0.1:{free_port()}/metrics": ("failed", "could not reach"),
    }
    # The failing endpoints sit between the good ones: none of them costs another its scrape.
    urls = [good[0], *list(bad)[:2], *good[1:], list(bad)[2]]
    sources = _sources(urls, pool)

    runs = scrapes.pull_dcgm_exporters(sources, now=NOW)

    assert [run.filename for run in runs] == urls
    expected = {url: expected_gpus(path) for url, path in zip(good, SCRAPES, strict=True)}
    for run in runs:
        run.refresh_from_db()  # what was stored, not what is in memory
        assert (run.source, run.format, run.pool, run.scraped_at) == ("scrape", "dcgm", pool, NOW)
        assert run.finished_at is not None
        if run.filename in bad:
            status, reason = bad[run.filename]
            assert (run.status, run.rows_accepted) == (status, 0)
            assert reason in run.message and run.filename in run.message
        else:
            gpus = len(expected[run.filename])
            assert (run.status, run.rows_accepted, run.rows_duplicate, run.rows_rejected) == (
                "succeeded",
                gpus,
                0,
                0,
            )
            assert run.message.startswith(f"{gpus} rows accepted, 0 duplicates skipped")
    for source in PullSource.objects.all():
        assert source.last_pulled_at == NOW
        assert source.last_status == ("error" if source.url in bad else "ok")
        assert source.last_message == next(r.message for r in runs if r.filename == source.url)

    all_expected = {uuid: gpu for gpus in expected.values() for uuid, gpu in gpus.items()}
    stored = {s.device.uuid: s for s in GpuSample.objects.select_related("device")}
    assert set(stored) == set(all_expected)
    for uuid_, gpu in all_expected.items():
        assert stored[uuid_].timestamp == NOW
        assert stored[uuid_].utilization_pct == pytest.approx(gpu["utilization_pct"])
        assert stored[uuid_].device.hostname == gpu["hostname"]
    assert set(GpuDevice.objects.values_list("pool_id", "assignment")) == {(pool.pk, "import")}
    assert list(PendingRollup.objects.values_list("pool_id", "hour")) == [
        (pool.pk, NOW.replace(minute=0))
    ]

    # The same batch delivered again (a retried task) at the same instant adds nothing.
    again = scrapes.pull_dcgm_exporters(
        PullSource.objects.filter(url__in=good).order_by("pk"), now=NOW
    )
    assert [(run.rows_accepted, run.rows_duplicate) for run in again] == [
        (0, len(expected[url])) for url in good
    ]
    assert GpuSample.objects.count() == len(all_expected)

    assert hourly.rollup_pending() == (1, 1)
    usage = PoolHourlyUsage.objects.get(pool=pool)
    assert usage.reporting_gpus == 12
    # By hand: each GPU's one reading ÷ 100, summed over the files' GPUs.
    assert usage.busy_gpu_hours == pytest.approx(
        sum(gpu["utilization_pct"] for gpu in all_expected.values()) / 100
    )


@pytest.mark.django_db
def test_two_sources_of_one_node_in_a_batch_count_its_rows_once(scrape_server, pool):
    url = f"{scrape_server}/metrics/{SCRAPES[0].stem}"
    gpus = len(expected_gpus(SCRAPES[0]))
    sources = _sources([url, url], pool)
    first, second = scrapes.pull_dcgm_exporters(sources, now=NOW)
    # Stamped at the same instant, the second source's rows are the first's keys.
    assert (first.rows_accepted, first.rows_duplicate) == (gpus, 0)
    assert (second.rows_accepted, second.rows_duplicate) == (0, gpus)
    assert GpuSample.objects.count() == gpus


@pytest.mark.django_db(transaction=True)
def test_a_scrape_that_cannot_be_stored_loses_only_itself(scrape_server):
    kept_pool = PoolFactory(gpu_count=16)
    gone_pool = PoolFactory(gpu_count=16)
    urls = [f"{scrape_server}/metrics/{path.stem}" for path in SCRAPES[:3]]
    sources = [
        PullSourceFactory(name=f"n{number}", kind="dcgm_exporter", url=url, pool=pool)
        for number, (url, pool) in enumerate(
            zip(urls, (kept_pool, gone_pool, kept_pool), strict=True)
        )
    ]
    sources = list(PullSource.objects.select_related("pool").order_by("pk"))
    # The middle source's pool is deleted after the batch read its sources: its new GPUs
    # reference a pool that no longer exists, which the database refuses at the commit.
    Pool.objects.filter(pk=gone_pool.pk).delete()

    runs = scrapes.pull_dcgm_exporters(sources, now=NOW)

    assert [run.status for run in runs] == ["succeeded", "failed", "succeeded"]
    failed = ImportRun.objects.get(filename=urls[1])
    assert failed.status == "failed" and failed.rows_accepted == 0
    assert "storing the scrape failed" in failed.message
    assert "nothing of it was kept" in failed.message and urls[1] in failed.message
    with translation.override("zh-hans"):  # stored with its msgid, read in Chinese
        assert "保存这次采集失败" in failed.message_in_language()
        assert urls[1] in failed.message_in_language()
    kept = {uuid for path in (SCRAPES[0], SCRAPES[2]) for uuid in expected_gpus(path)}
    assert set(GpuSample.objects.values_list("device__uuid", flat=True)) == kept
    assert ImportRun.objects.filter(status="succeeded").count() == 2
    assert PullSource.objects.get(url=urls[1]).last_status == "error"


# --- Two real workers scraping and draining one queue ------------------------------------

TEMPLATE = SCRAPES[0].read_text()  # the 8×H100 node with pod labels
assert "aicr_8xH100" in SCRAPES[0].stem
_UUID = re.compile(r'UUID="(GPU-[0-9a-f-]+)"')
_UTIL_LINE = re.compile(r"^(DCGM_FI_DEV_GPU_UTIL\{[^}]*\}) \S+$", re.MULTILINE)
_GPU_LABEL = re.compile(r'gpu="(\d+)"')


class FleetServer:
    """A fleet of 8-GPU nodes, each answering the real 8×H100 scrape with its own UUIDs
    and hostname and a new GPU_UTIL per GPU at every request; it keeps every value it
    served, so the test knows what the workers were told."""

    def __init__(self, nodes: int):
        self.nodes = nodes
        self.served: dict[str, list[float]] = defaultdict(list)  # UUID → values served
        self.requests = defaultdict(int)
        self.lock = threading.Lock()
        fleet = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                node = int(self.path.rsplit("/", 1)[1])
                body = fleet.scrape(node).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @staticmethod
    def uuid_of(original: str, node: int) -> str:
        return f"{original[:-4]}{node:04x}"

    def scrape(self, node: int) -> str:
        with self.lock:
            request = self.requests[node]
            self.requests[node] += 1
            text = _UUID.sub(lambda m: f'UUID="{self.uuid_of(m[1], node)}"', TEMPLATE)
            text = text.replace('Hostname="gpu-node-1"', f'Hostname="gpu-node-{node}"')

            def utilization(match):
                line = match[1]
                gpu = int(_GPU_LABEL.search(line)[1])
                value = (node * 13 + gpu * 7 + request * 29) % 101
                self.served[self.uuid_of(_UUID.search(line)[1], node)].append(float(value))
                return f"{line} {value}"

            return _UTIL_LINE.sub(utilization, text)


def _pool_hours_from_samples() -> dict:
    """(pool id, hour) → (reporting GPUs, busy GPU-hours, max utilization %), in Python
    from the stored samples: per GPU the mean of its readings in the hour ÷ 100."""
    readings = defaultdict(list)
    for pool_id, uuid_, timestamp, utilization in GpuSample.objects.values_list(
        "device__pool_id", "device__uuid", "timestamp", "utilization_pct"
    ):
        hour = timestamp.replace(minute=0, second=0, microsecond=0)
        readings[(pool_id, hour, uuid_)].append(utilization)
    per_pool_hour = defaultdict(list)
    for (pool_id, hour, _uuid), values in readings.items():
        per_pool_hour[(pool_id, hour)].append(statistics.fmean(values) / 100)
    return {
        key: (len(shares), sum(shares), 100 * max(shares)) for key, shares in per_pool_hour.items()
    }


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_two_workers_scraping_and_draining_at_once_count_every_sample_once():
    pools = [PoolFactory(gpu_count=64), PoolFactory(gpu_count=64)]
    fleet = FleetServer(nodes=12)
    fleet.thread.start()
    sources = [
        PullSourceFactory(
            name=f"gpu-node-{node}",
            kind="dcgm_exporter",
            url=f"{fleet.url}/metrics/{node}",
            pool=pools[node % 2],
            interval_seconds=15,
        )
        for node in range(fleet.nodes)
    ]
    ids = [source.pk for source in sources]
    batches = [ids[0:5], ids[5:10], ids[10:12]]
    queue = f"gpufleet-two-{uuid.uuid4().hex[:8]}"
    environment = {"REPORTS_WARM_UP": "false"}
    workers = []
    settings = connection.settings_dict
    locker = psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        user=settings["USER"],
        dbname=settings["NAME"],
        autocommit=False,
    )
    try:
        for name in ("one", "two"):
            workers.append(CeleryWorker(queue, f"celery-{name}-of-two.log", environment, node=name))
        for worker in workers:
            worker.wait_until_ready()

        def scrape_round():
            results = [
                pull_scrape_batch_task.apply_async((batch,), queue=queue) for batch in batches
            ]
            return [result.get(timeout=120) for result in results]

        assert scrape_round() == [{"succeeded": 5}, {"succeeded": 5}, {"succeeded": 2}]

        # Both drains inside their rollups at once: the table lock holds the first at its
        # DELETE, the second waits for the pool's advisory lock the first holds.
        locker.execute("LOCK TABLE telemetry_poolhourlyusage IN ACCESS EXCLUSIVE MODE")
        drains = [rollup_pending_task.apply_async(queue=queue) for _ in range(2)]

        def both_drains_wait():
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT wait_event FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                )
                return sorted(row[0] for row in cursor.fetchall()) == ["advisory", "relation"]

        wait_until(both_drains_wait, timeout_seconds=60, what="two drains in their rollups")
        locker.rollback()
        assert all(drain.get(timeout=120) >= 1 for drain in drains)

        # Then scrapes and drains interleaved on both workers, three rounds.
        for _round in range(3):
            pending = [
                pull_scrape_batch_task.apply_async((batch,), queue=queue) for batch in batches
            ]
            pending += [rollup_pending_task.apply_async(queue=queue) for _ in range(2)]
            for result in pending:
                result.get(timeout=120)
        rollup_pending_task.apply_async(queue=queue).get(timeout=120)
    finally:
        locker.close()
        for worker in workers:
            worker.stop()
        celery_app.control.purge()
        fleet.server.shutdown()
        fleet.server.server_close()

    # Every value served was stored once: 12 nodes × 8 GPUs × 4 scrapes each.
    stored = defaultdict(list)
    for uuid_, utilization in GpuSample.objects.values_list("device__uuid", "utilization_pct"):
        stored[uuid_].append(utilization)
    assert {key: sorted(values) for key, values in stored.items()} == {
        key: sorted(values) for key, values in fleet.served.items()
    }
    assert sum(len(values) for values in stored.values()) == 12 * 8 * 4
    assert not PendingRollup.objects.exists()
    assert ImportRun.objects.filter(source="scrape", status="succeeded").count() == 12 * 4

    expected = _pool_hours_from_samples()
    rows = {(row.pool_id, row.hour): row for row in PoolHourlyUsage.objects.filter(pool__in=pools)}
    assert set(rows) == set(expected)
    # Each pool's 6 nodes × 8 GPUs report in every hour the test ran in.
    assert {reporting for reporting, _busy, _max in expected.values()} == {48}
    for key, (reporting, busy_gpu_hours, max_utilization_pct) in expected.items():
        assert rows[key].reporting_gpus == reporting
        assert rows[key].busy_gpu_hours == pytest.approx(busy_gpu_hours, rel=1e-9)
        assert rows[key].max_utilization_pct == pytest.approx(max_utilization_pct, rel=1e-9)
