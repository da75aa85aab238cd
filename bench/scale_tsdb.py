#!/usr/bin/env python
"""Hourly aggregates of a whole fleet pulled from real VictoriaMetrics, one per cluster.

Loads ``--gpus`` GPU series (default 100,000) × ``--hours`` (3) of 1-minute samples of
DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION into
``--sources`` VictoriaMetrics (default 1), each holding ``--gpus``/``--sources`` GPUs of a
cluster of its own (its own hostnames, pools, hostname rules and pull source), each a
Debian ``victoria-metrics`` on a free 127.0.0.1 port with its data in a temporary
directory, loaded in parallel through ``/api/v1/import``, and prints the load time. Then,
for the middle hour, measured in this run:

- the baseline: every VictoriaMetrics answering the seven queries of an hourly pull
  (apps/telemetry/pull/promql.py) at the same time, as the parallel pulls face them, over
  plain HTTP with the pull's queries in flight (``tsdb.FETCH_CONCURRENCY``), bodies read,
  nothing parsed; the slower one's time is the floor, since gpufleet cannot be faster
  than its slowest source. Each one alone is printed too;
- gpufleet pulling that hour from every source in parallel, one process per source
  calling the task beat enqueues per source (``telemetry.pull_source``, as one worker
  process each would run it, with the clock at the hour's end + ``tsdb.SETTLE``): the
  same seven queries, device-hours built, devices registered, rows upserted, pool-hours
  queued; then the drain (``rollup_pending``: pool-hours, attribution, days); on a first
  pull, on the hourly pull, and on a re-pull that replaces the hour's rows;

and the ratio of (pull wall + rollup) to the baseline (aim ≤ 2×) with its wall time (aim
< 60 s). Every source's device-hours and every pool-hour are checked against a
computation from the generated samples.

Usage (from the repository root; see docs/development/benchmarks.md):

    .venv/bin/python bench/scale_tsdb.py                               # 100,000 GPUs
    .venv/bin/python bench/scale_tsdb.py --gpus 200000 --sources 2     # two clusters
    .venv/bin/python bench/scale_tsdb.py --gpus 10000                  # a quicker look

It uses its own database (``--database-url``, default
postgres://postgres@127.0.0.1:5432/gpufleet_bench_tsdb), creates it when missing,
migrates it and empties the telemetry tables first.
"""

import argparse
import multiprocessing
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock
from urllib.parse import urlencode

REPOSITORY = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/gpufleet_bench_tsdb"
GPUS_PER_NODE = 8
GPUS_PER_POOL = 1000
MODEL_NAME = "NVIDIA H100 80GB HBM3"
DRIVER_VERSION = "580.105.08"
# Distinct one-minute curves, shared by the series (generating 100,000 × 3 curves would
# time Python's random module, not the pull).
PATTERNS = 1009
HOUR = timedelta(hours=1)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine_load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f}, {five:.1f}, {fifteen:.1f}"


# --------------------------------------------------------------------------- servers


def prepare_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1].split("?", 1)[0]
    server = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(server, autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')
            log(f"created database {name}")


def setup_django(url: str, *, migrate: bool = True) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
    if str(REPOSITORY) not in sys.path:
        sys.path.insert(0, str(REPOSITORY))
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def sql(statement: str, params=None):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else cursor.rowcount


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http(url: str, *, data: bytes | None = None, timeout: float = 600) -> bytes:
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")  # noqa: S310
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - 127.0.0.1
        return response.read()


def start_victoria_metrics(directory: Path):
    binary = shutil.which(os.environ.get("VICTORIA_METRICS", "victoria-metrics"))
    if binary is None:
        sys.exit("victoria-metrics is not installed: run scripts/ensure_victoria_metrics.sh")
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_file = (directory / "victoria-metrics.log").open("w")
    process = subprocess.Popen(  # noqa: S603 - the packaged binary, our arguments
        [
            binary,
            f"-storageDataPath={directory / 'data'}",
            f"-httpListenAddr=127.0.0.1:{port}",
            "-retentionPeriod=100y",
            "-loggerLevel=ERROR",
            # 100,000 series × 7 queries: the default 30 s and 300,000-series limits are
            # for dashboards, not for a fleet-wide hourly pull.
            "-search.maxUniqueTimeseries=10000000",
            "-search.maxQueryDuration=600s",
        ],
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            http(f"{base_url}/health", timeout=2)
            return process, base_url
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"victoria-metrics did not start: {(directory / 'victoria-metrics.log')}")
            time.sleep(0.2)


def wait_until_settled(base_urls: list[str], *, timeout_seconds: float = 600) -> float:
    """Wait until no VictoriaMetrics merges parts in the background (``vm_active_merges``
    and ``vm_pending_rows`` at 0 on three polls in a row): the merges that follow a large
    import take the same cores as the queries for minutes, and would be timed as part of
    whichever measurement they overlap. Returns the seconds waited."""
    started = time.perf_counter()
    quiet_polls = 0
    while quiet_polls < 3 and time.perf_counter() - started < timeout_seconds:
        busy = 0.0
        for base_url in base_urls:
            for line in http(f"{base_url}/metrics", timeout=30).decode().splitlines():
                if line.startswith(("vm_active_merges{", "vm_pending_rows{")):
                    busy += float(line.rsplit(" ", 1)[1])
        quiet_polls = quiet_polls + 1 if busy == 0 else 0
        time.sleep(1)
    return time.perf_counter() - started


# --------------------------------------------------------------------------- the fleet


@dataclass(frozen=True)
class Block:
    """The GPUs of one cluster (one source): consecutive numbers, and the number of its
    first pool (pools are numbered across the fleet, so no two clusters share one)."""

    cluster: int
    gpus: range
    first_pool: int

    @property
    def pools(self) -> int:
        return -(-len(self.gpus) // GPUS_PER_POOL)


def source_blocks(gpus: int, sources: int) -> list[Block]:
    """Each source's cluster: consecutive GPU numbers, as equal in count as they go."""
    per_source, extra = divmod(gpus, sources)
    blocks: list[Block] = []
    first = first_pool = 0
    for index in range(sources):
        count = per_source + (1 if index < extra else 0)
        blocks.append(Block(index, range(first, first + count), first_pool))
        first += count
        first_pool += blocks[-1].pools
    return blocks


def pool_of(number: int, block: Block) -> int:
    """The pool of GPU ``number``: GPUS_PER_POOL consecutive GPUs of its cluster."""
    return block.first_pool + (number - block.gpus.start) // GPUS_PER_POOL


def pool_slug(pool: int) -> str:
    return f"bench-p{pool}"


def gpu_labels(number: int, block: Block) -> str:
    """The labels of GPU ``number`` in cluster ``cluster`` as JSON text (dcgm-exporter's,
    as in the scrapes under tests/data/dcgm-exporter/scrapes/); one GPU in eight runs a
    labelled pod. Hostnames carry the cluster: each cluster names its own nodes."""
    pool = pool_of(number, block)
    node, gpu = divmod((number - block.gpus.start) % GPUS_PER_POOL, GPUS_PER_NODE)
    pod = f',"namespace":"bench","pod":"infer-{pool}-{node}","container":"main"' if gpu == 0 else ""
    return (
        f'"UUID":"GPU-bench-{number:08d}","gpu":"{gpu}","device":"nvidia{gpu}",'
        f'"Hostname":"bench-c{block.cluster}-p{pool}-n{node:04d}","modelName":"{MODEL_NAME}",'
        f'"DCGM_FI_DRIVER_VERSION":"{DRIVER_VERSION}"{pod}'
    )


def patterns(first_hour: datetime, hours: int) -> tuple[dict[str, list[str]], dict]:
    """Per metric, PATTERNS JSON fragments ``"values":[…],"timestamps":[…]``, and the
    values themselves (for the independent check of the hourly rows)."""
    rng = random.Random(16)  # noqa: S311 - test data, not secrets
    start_ms = round(first_hour.timestamp() * 1000)
    stamps = ",".join(str(start_ms + minute * 60_000) for minute in range(60 * hours))
    fragments: dict[str, list[str]] = {}
    raw: dict[str, list[list[int]]] = {}
    for metric in ("util", "fb", "energy"):
        fragments[metric], raw[metric] = [], []
        for _ in range(PATTERNS):
            if metric == "util":
                values = [rng.randint(0, 100) for _ in range(60 * hours)]
            elif metric == "fb":
                values = [rng.randint(1_000, 80_000) for _ in range(60 * hours)]
            else:
                counter, values = rng.randint(10**9, 10**11), []
                for _ in range(60 * hours):
                    counter += rng.randint(60, 700) * 60 * 1000
                    values.append(counter)
            fragments[metric].append(
                f'"values":[{",".join(map(str, values))}],"timestamps":[{stamps}]'
            )
            raw[metric].append(values)
    return fragments, raw


def pattern_of(number: int, metric: str) -> int:
    """Which of the PATTERNS curves GPU ``number`` reports for ``metric``."""
    return (number * 7 + len(metric)) % PATTERNS


METRIC_NAMES = {
    "util": "DCGM_FI_DEV_GPU_UTIL",
    "fb": "DCGM_FI_DEV_FB_USED",
    "energy": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
}


def load_fleet(base_url: str, block: Block, first_hour: datetime, hours: int, batch: int) -> float:
    """Send a cluster's GPUs to its VictoriaMetrics; returns the seconds taken.
    Run in a process of its own per cluster (the JSON lines are Python's work)."""
    fragments, _raw = patterns(first_hour, hours)
    started = time.perf_counter()
    lines: list[str] = []

    def send():
        http(f"{base_url}/api/v1/import", data=("\n".join(lines) + "\n").encode())
        lines.clear()

    for sent, number in enumerate(block.gpus):
        labels = gpu_labels(number, block)
        for metric, name in METRIC_NAMES.items():
            fragment = fragments[metric][pattern_of(number, metric)]
            lines.append(f'{{"metric":{{"__name__":"{name}",{labels}}},{fragment}}}')
        if len(lines) >= batch:
            send()
        if sent and sent % 20_000 == 0:
            log(f"  cluster {block.cluster}: {sent:,} GPUs sent")
    if lines:
        send()
    http(f"{base_url}/internal/force_flush")
    return time.perf_counter() - started


def create_fleet(blocks: list[Block]) -> list:
    """Per block a cluster with its pools (one hostname rule and one labelled inference
    workload each); returns the clusters."""
    from apps.catalog.models import GpuModel
    from apps.clusters.models import Cluster
    from apps.pools.models import Pool, Workload
    from apps.telemetry.models import HostnameRule

    gpu_model = GpuModel.objects.filter(slug="h100-sxm").first() or GpuModel.objects.first()
    clusters = []
    for block in blocks:
        index = block.cluster
        cluster, _ = Cluster.objects.update_or_create(
            slug=f"bench-c{index}",
            defaults={"name": f"Bench cluster {index}", "kind": Cluster.Kind.KUBERNETES},
        )
        clusters.append(cluster)
        for number in range(block.first_pool, block.first_pool + block.pools):
            pool, _ = Pool.objects.update_or_create(
                slug=pool_slug(number),
                defaults={
                    "name": f"Bench pool {number}",
                    "cluster": cluster,
                    "purpose": "inference",
                    "deployment": "bare_metal",
                    "gpu_model": gpu_model,
                    "gpu_count": GPUS_PER_POOL,
                    "in_service_from": datetime(2020, 1, 1, tzinfo=UTC),
                },
            )
            HostnameRule.objects.filter(pool=pool).delete()
            HostnameRule.objects.create(pool=pool, hostname_pattern=f"bench-c{index}-p{number}-*")
            Workload.objects.update_or_create(
                slug=f"bench-infer-{number}",
                defaults={
                    "name": f"Bench inference {number}",
                    "pool": pool,
                    "kind": "online_inference",
                    "model_architecture": None,
                    "gpu_count": 8,
                    "k8s_namespace": "bench",
                    "pod_name_prefix": f"infer-{number}-",
                },
            )
    return clusters


def reset_telemetry() -> None:
    sql(
        "TRUNCATE telemetry_gpudevicehour, telemetry_poolhourlyusage, telemetry_pendingrollup, "
        "telemetry_gpudevice, telemetry_importrun, telemetry_pullsource, "
        "reports_workloadhourlyusage, reports_pooldailyusage RESTART IDENTITY CASCADE"
    )
    from apps.pools.models import Pool, Workload
    from apps.telemetry.models import HostnameRule

    # The pools of an earlier run with other --gpus or --sources: each run holds its own.
    Workload.objects.filter(slug__startswith="bench-infer-").delete()
    HostnameRule.objects.filter(pool__slug__startswith="bench-p").delete()
    Pool.objects.filter(slug__startswith="bench-p").delete()


# --------------------------------------------------------------------------- checking


def expected_pool_hours(
    blocks: list[Block], first_hour: datetime, hours: int, hour: datetime
) -> dict:
    """Per pool slug, what the hour's rollup must say, computed here from the generated
    values and not through gpufleet or the TSDB: the hour [h, h + 1 h) holds the samples
    of minutes 60·k … 60·k + 59 after ``first_hour``; a GPU's share is the mean of its
    utilisation samples ÷ 100 (FORMULAS.md, "busy GPU-hours"); a pool's busy GPU-hours are
    the sum of its GPUs' shares, its peak memory the highest sample of any of its GPUs."""
    _fragments, raw = patterns(first_hour, hours)
    offset = round((hour - first_hour) / HOUR) * 60
    minutes = slice(offset, offset + 60)
    pools: dict[str, dict] = {}
    for block in blocks:
        for number in block.gpus:
            slug = pool_slug(pool_of(number, block))
            utilisation = raw["util"][pattern_of(number, "util")][minutes]
            memory = raw["fb"][pattern_of(number, "fb")][minutes]
            pool = pools.setdefault(slug, {"gpus": 0, "busy": 0.0, "memory": 0})
            pool["gpus"] += 1
            pool["busy"] += sum(utilisation) / len(utilisation) / 100
            pool["memory"] = max(pool["memory"], max(memory))
    return pools


def check_against_independent(
    blocks: list[Block], sources: list, first_hour: datetime, hours: int, hour
) -> list[str]:
    """Differences between the stored rows and the independent computation: every
    source's device-hours (one per GPU of its cluster, in its cluster's pools), the
    pool-hours and their day; empty when every figure agrees to 1e-9 relative."""
    from apps.telemetry.models import GpuDeviceHour, PoolDailyUsage, PoolHourlyUsage

    problems = []
    for block, source in zip(blocks, sources, strict=True):
        rows = GpuDeviceHour.objects.filter(source=source, hour=hour)
        written = rows.count()
        elsewhere = rows.exclude(device__pool__cluster_id=source.cluster_id).count()
        if written != len(block.gpus) or elsewhere:
            problems.append(
                f"{source.slug}: {written:,} device-hours ({elsewhere} outside its cluster's "
                f"pools), expected {len(block.gpus):,}"
            )
    expected = expected_pool_hours(blocks, first_hour, hours, hour)
    stored = {
        row.pool.slug: row
        for row in PoolHourlyUsage.objects.filter(hour=hour).select_related("pool")
    }
    if set(stored) != set(expected):
        problems.append(f"pools with an hour: {len(stored)}, expected {len(expected)}")
    for slug, want in expected.items():
        row = stored.get(slug)
        if row is None:
            continue
        if row.reporting_gpus != want["gpus"]:
            problems.append(f"{slug}: {row.reporting_gpus} GPUs reporting, expected {want['gpus']}")
        if abs(row.busy_gpu_hours - want["busy"]) > 1e-9 * max(1.0, want["busy"]):
            problems.append(f"{slug}: {row.busy_gpu_hours} busy GPU-h, expected {want['busy']}")
        if row.max_memory_used_mib != want["memory"]:
            problems.append(f"{slug}: {row.max_memory_used_mib} MiB, expected {want['memory']}")
    day_busy = sum(
        PoolDailyUsage.objects.filter(day=hour.date()).values_list("busy_gpu_hours", flat=True)
    )
    hours_busy = sum(
        PoolHourlyUsage.objects.filter(hour__date=hour.date()).values_list(
            "busy_gpu_hours", flat=True
        )
    )
    if abs(day_busy - hours_busy) > 1e-6 * max(1.0, hours_busy):
        problems.append(f"the day's busy GPU-h {day_busy} differ from its hours' {hours_busy}")
    return problems


def pages_show_the_fleet(pool_count: int) -> list[str]:
    """The Overview, the pool list and the 30-day report, served as a signed-in reader
    sees them, name the fleet's pools."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    # Everyone who can sign in reads every page (apps/core/roles.py).
    user, _ = get_user_model().objects.get_or_create(username="bench-reader")
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(user)
    problems = []
    for path, expected in (
        ("/", "Bench pool"),
        ("/pools/", f"{pool_count:,} pools"),
        ("/reports/?group_by=pool", "Bench pool"),
    ):
        response = client.get(path, HTTP_HOST="127.0.0.1")
        body = response.content.decode()
        if response.status_code != 200 or expected not in body:
            problems.append(f"{path}: {response.status_code}, {expected!r} not shown")
    return problems


# --------------------------------------------------------------------------- measuring


def baseline_seconds(base_url: str, hour: datetime) -> tuple[float, int]:
    """One VictoriaMetrics answering the hourly pull's queries for ``hour``, as many in
    flight as the pull sends (``tsdb.FETCH_CONCURRENCY``): (seconds, bytes)."""
    from apps.telemetry.pull import promql, tsdb

    instant = f"{promql.evaluation_instant(hour).timestamp():.3f}"

    def ask(query) -> int:
        params = urlencode(
            {
                "query": query.promql,
                "start": instant,
                "end": instant,
                "step": "3600",
                "nocache": "1",
                "timeout": "599s",
            }
        )
        return len(http(f"{base_url}/api/v1/query_range?{params}"))

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=tsdb.FETCH_CONCURRENCY) as pool:
        size = sum(pool.map(ask, promql.hourly_queries()))
    return time.perf_counter() - started, size


def baselines(base_urls: list[str], hour: datetime) -> dict:
    """Every TSDB answering at the same time (the slower one's seconds: the floor of
    parallel pulls), then each alone."""
    together: list[tuple[float, int]] = [(0.0, 0)] * len(base_urls)

    def answer(index: int) -> None:
        together[index] = baseline_seconds(base_urls[index], hour)

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(len(base_urls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    alone = [baseline_seconds(url, hour)[0] for url in base_urls]
    return {
        "together": [seconds for seconds, _size in together],
        "slower": max(seconds for seconds, _size in together),
        "alone": alone,
        "bytes": sum(size for _seconds, size in together),
    }


PHASES: dict[str, float] = {}


def time_phases() -> None:
    """Wrap the pull's three stages so each run also says where its time went."""
    from apps.telemetry.pull import tsdb

    for name, label in (
        ("fetch_chunk", "queries answered and decoded"),
        ("device_hours_from_answers", "device-hours built"),
        ("store_device_hours", "stored (devices, COPY upsert, queue)"),
    ):
        original = getattr(tsdb, name)

        def timed(*args, _original=original, _label=label, **kwargs):
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                PHASES[_label] = PHASES.get(_label, 0.0) + time.perf_counter() - started

        setattr(tsdb, name, timed)


# --- One worker process per source, as Celery's prefork pool runs the pulls.


def start_worker(database_url: str) -> None:
    """A pull worker's start: Django set up, its connection open, before any pull."""
    setup_django(database_url, migrate=False)
    time_phases()
    sql("SELECT 1")


def worker_ready(_number: int) -> int:
    """Held long enough that every worker takes one: the pool is up before any timing."""
    time.sleep(0.5)
    return os.getpid()


def pull_in_worker(source_id: int, hour_iso: str) -> tuple[float, dict, str, str]:
    """``telemetry.pull_source`` as beat enqueues it for a due source, with the clock at
    the moment ``hour`` is complete: the task pulls that one hour. Returns (seconds,
    phases, status, the source's message)."""
    from apps.telemetry.models import PullSource
    from apps.telemetry.pull import tsdb
    from apps.telemetry.pull.tasks import pull_source_task

    hour = datetime.fromisoformat(hour_iso)
    PHASES.clear()
    started = time.perf_counter()
    with mock.patch("django.utils.timezone.now", return_value=hour + HOUR + tsdb.SETTLE):
        status = pull_source_task(source_id, only_if_due=True)
    seconds = time.perf_counter() - started
    message = PullSource.objects.get(pk=source_id).last_message
    return seconds, dict(PHASES), status, message


def pull_all(workers, sources: list, hour: datetime) -> dict:
    """Every source's hour pulled at once, one worker process each, then the drain."""
    from apps.telemetry.models import PullSource
    from apps.telemetry.rollups import hourly

    # Each source due and resuming at ``hour`` (a re-pull of it, too).
    PullSource.objects.filter(pk__in=[s.pk for s in sources]).update(
        pulled_until=hour, last_pulled_at=None
    )
    started = time.perf_counter()
    results = workers.starmap(pull_in_worker, [(s.pk, hour.isoformat()) for s in sources])
    pulled = time.perf_counter()
    hourly.rollup_pending()
    rolled = time.perf_counter()
    return {
        "pull": pulled - started,
        "rollup": rolled - pulled,
        "sources": results,
        "load": machine_load(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=100_000)
    parser.add_argument(
        "--sources", type=int, default=1, help="clusters, each its own VictoriaMetrics"
    )
    parser.add_argument("--hours", type=int, default=3, help="at least 2")
    parser.add_argument("--batch-lines", type=int, default=6000, help="series per import")
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    )
    args = parser.parse_args(argv)
    if args.sources < 1 or args.gpus < args.sources:
        parser.error("--sources must be between 1 and --gpus")

    prepare_database(args.database_url)
    setup_django(args.database_url)
    from django.db import connections
    from django.utils import timezone

    from apps.pools.hours import floor_hour
    from apps.telemetry.models import GpuDeviceHour, PoolHourlyUsage, PullSource

    blocks = source_blocks(args.gpus, args.sources)
    reset_telemetry()
    clusters = create_fleet(blocks)
    sql("ANALYZE")
    first_hour = floor_hour(timezone.now()) - (args.hours + 1) * HOUR
    # The first hour registers the devices; the next one is the steady hourly pull.
    measured_hour = first_hour + HOUR
    directories = [
        Path(tempfile.mkdtemp(prefix=f"gpufleet-bench-vm{index}-")) for index in range(args.sources)
    ]
    servers = [start_victoria_metrics(directory) for directory in directories]
    base_urls = [base_url for _process, base_url in servers]
    spawn = multiprocessing.get_context("spawn")
    try:
        samples = args.gpus * len(METRIC_NAMES) * 60 * args.hours
        log(
            f"loading {args.gpus:,} GPUs × {args.hours} h × 3 metrics = {samples:,} samples "
            f"into {args.sources} VictoriaMetrics"
        )
        started = time.perf_counter()
        with spawn.Pool(args.sources) as loaders:
            loaders.starmap(
                load_fleet,
                [
                    (url, block, first_hour, args.hours, args.batch_lines)
                    for url, block in zip(base_urls, blocks, strict=True)
                ],
            )
        load_seconds = time.perf_counter() - started
        log(f"loaded in {load_seconds:.1f} s ({samples / load_seconds:,.0f} samples/s)")
        settle_seconds = wait_until_settled(base_urls)
        log(f"background merges done {settle_seconds:.0f} s later")

        before = baselines(base_urls, measured_hour)
        before["load"] = machine_load()
        log(f"baseline {before['slower']:.2f} s (load {before['load']})")
        sources = [
            PullSource.objects.create(
                name=f"bench vm {index}",
                slug=f"bench-vm-{index}",
                kind=PullSource.Kind.PROMETHEUS_HOURLY,
                url=url,
                cluster=cluster,
            )
            for index, (url, cluster) in enumerate(zip(base_urls, clusters, strict=True))
        ]
        connections.close_all()
        timings = {}
        with spawn.Pool(
            args.sources, initializer=start_worker, initargs=(args.database_url,)
        ) as workers:
            # Each worker sets Django up first: the pulls start once all have.
            for _attempt in range(60):
                ready = set(workers.map(worker_ready, range(args.sources), chunksize=1))
                if len(ready) == args.sources:
                    break
            for label, hour in (
                ("first pull (every device registered)", first_hour),
                ("the next hour (the hourly pull)", measured_hour),
                ("re-pull of that hour (rows replaced)", measured_hour),
            ):
                timings[label] = pull_all(workers, sources, hour)
                said = timings[label]
                log(
                    f"{label}: pull {said['pull']:.2f} s + rollup {said['rollup']:.2f} s "
                    f"(load {said['load']})"
                )
                for _seconds, _phases, status, message in said["sources"]:
                    log(f"  {status}: {message}")
        after = baselines(base_urls, measured_hour)
        after["load"] = machine_load()
        baseline = (before["slower"] + after["slower"]) / 2
        rows = GpuDeviceHour.objects.filter(hour=measured_hour).count()
        pool_hours = PoolHourlyUsage.objects.filter(hour=measured_hour).count()
        problems = check_against_independent(blocks, sources, first_hour, args.hours, measured_hour)
        problems += pages_show_the_fleet(sum(block.pools for block in blocks))
    finally:
        for process, _base_url in servers:
            process.terminate()
            process.wait(timeout=60)
        for directory in directories:
            shutil.rmtree(directory, ignore_errors=True)

    print()
    print(
        f"GPUs {args.gpus:,} in {args.sources} VictoriaMetrics; {args.hours} h × 1-min samples "
        f"of 3 metrics = {samples:,} samples"
    )
    print(
        f"load into VictoriaMetrics: {load_seconds:.1f} s ({samples / load_seconds:,.0f}/s); "
        f"its background merges done {settle_seconds:.0f} s later"
    )
    print(
        f"one hour: {rows:,} device-hours, {pool_hours} pool-hours, answers "
        f"{before['bytes'] / 2**20:.1f} MiB"
    )
    print()
    print("| measured | seconds | ratio to baseline | machine load (1, 5, 15 min) |")
    print("|---|---:|---:|---|")
    for name, said in (("before", before), ("after", after)):
        together = ", ".join(f"{seconds:.2f}" for seconds in said["together"])
        alone = ", ".join(f"{seconds:.2f}" for seconds in said["alone"])
        print(
            f"| TSDBs {name} the pulls: at the same time {together}; each alone {alone} | "
            f"{said['slower']:.2f} | | {said['load']} |"
        )
    print(
        f"| baseline: the slower TSDB answering the 7 queries while the others do (mean of "
        f"before/after) | {baseline:.2f} | 1.00× | |"
    )
    for label, said in timings.items():
        total = said["pull"] + said["rollup"]
        each = ", ".join(f"{seconds:.2f}" for seconds, *_rest in said["sources"])
        print(
            f"| gpufleet, {label}: pull {said['pull']:.2f} (each source {each}) + rollup "
            f"{said['rollup']:.2f} | {total:.2f} | {total / baseline:.2f}× | {said['load']} |"
        )
    print()
    for label, said in timings.items():
        for index, (_seconds, phases, _status, _message) in enumerate(said["sources"]):
            parts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.items())
            print(f"{label}, source {index}: {parts}")
    steady = timings["the next hour (the hourly pull)"]
    steady_total = steady["pull"] + steady["rollup"]
    aims = [
        (
            f"hourly pull + rollup ≤ 2× the slower TSDB's own answers: "
            f"{steady_total / baseline:.2f}×",
            steady_total <= 2 * baseline,
        ),
        (f"hourly pull + rollup under 60 s wall: {steady_total:.1f} s", steady_total < 60),
    ]
    print()
    for said, met in aims:
        print(f"{'met' if met else 'MISSED'}: {said}")
    print()
    if problems:
        print("the hourly rows disagree with the independent computation:")
        for problem in problems[:20]:
            print(f"  {problem}")
        return 1
    print(
        f"check: every source's {rows // args.sources:,} device-hours are in its cluster's "
        f"pools; the {pool_hours} pool-hours (GPUs reporting, busy GPU-h, peak MiB) equal a "
        "computation from the generated samples; the day equals its hours; the Overview, the "
        "pool list and the report show the fleet"
    )
    return 0 if all(met for _said, met in aims) else 1


if __name__ == "__main__":
    sys.exit(main())
