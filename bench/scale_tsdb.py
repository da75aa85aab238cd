#!/usr/bin/env python
"""Hourly aggregates of a whole fleet pulled from a real VictoriaMetrics.

Loads ``--gpus`` GPU series (default 100,000) × ``--hours`` (3) of 1-minute samples of
DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION into a
VictoriaMetrics of its own (Debian's ``victoria-metrics`` on a free 127.0.0.1 port, data
in a temporary directory), through ``/api/v1/import`` in batches, and prints the load
time. Then, for the middle hour, measured in this run:

- the baseline: VictoriaMetrics' own time to answer the seven queries of an hourly pull
  (apps/telemetry/pull/promql.py) over plain HTTP, bodies read, nothing parsed — the floor,
  since gpufleet cannot be faster than its source;
- gpufleet pulling that hour (``pull_hourly``: the same seven queries, device-hours built,
  devices registered, rows upserted, pool-hours queued) and rolling it up
  (``rollup_pending``: pool-hours, attribution, days), on a first pull and on a re-pull
  that replaces the hour's rows;

and the ratio of each to the baseline (aim ≤ 3×) with its wall time (aim < 60 s).

Usage (from the repository root; see bench/README.md):

    .venv/bin/python bench/scale_tsdb.py                  # 100,000 GPUs
    .venv/bin/python bench/scale_tsdb.py --gpus 10000     # a quicker look

It uses its own database (``--database-url``, default
postgres://postgres@127.0.0.1:5432/gpufleet_bench_tsdb), creates it when missing,
migrates it and empties the telemetry tables first.
"""

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
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


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
    sys.path.insert(0, str(REPOSITORY))
    import django

    django.setup()
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


# --------------------------------------------------------------------------- the fleet


def gpu_labels(number: int) -> str:
    """The labels of GPU ``number`` as JSON text (dcgm-exporter's, as in the scrapes under
    tests/data/dcgm-exporter/scrapes/); one GPU in eight runs a labelled pod."""
    pool, within = divmod(number, GPUS_PER_POOL)
    node, gpu = divmod(within, GPUS_PER_NODE)
    pod = f',"namespace":"bench","pod":"infer-{pool}-{node}","container":"main"' if gpu == 0 else ""
    return (
        f'"UUID":"GPU-bench-{number:08d}","gpu":"{gpu}","device":"nvidia{gpu}",'
        f'"Hostname":"bench-p{pool}-n{node:04d}","modelName":"{MODEL_NAME}",'
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


def load_fleet(base_url: str, gpus: int, first_hour: datetime, hours: int, batch: int) -> float:
    fragments, _raw = patterns(first_hour, hours)
    started = time.perf_counter()
    lines: list[str] = []

    def send():
        http(f"{base_url}/api/v1/import", data=("\n".join(lines) + "\n").encode())
        lines.clear()

    for number in range(gpus):
        labels = gpu_labels(number)
        for metric, name in METRIC_NAMES.items():
            fragment = fragments[metric][pattern_of(number, metric)]
            lines.append(f'{{"metric":{{"__name__":"{name}",{labels}}},{fragment}}}')
        if len(lines) >= batch:
            send()
        if number and number % 20_000 == 0:
            log(f"  {number:,} GPUs sent")
    if lines:
        send()
    http(f"{base_url}/internal/force_flush")
    return time.perf_counter() - started


def create_pools(gpus: int) -> None:
    from apps.catalog.models import GpuModel
    from apps.pools.models import Pool, Workload
    from apps.telemetry.models import HostnameRule

    gpu_model = GpuModel.objects.filter(slug="h100-sxm").first() or GpuModel.objects.first()
    for number in range((gpus + GPUS_PER_POOL - 1) // GPUS_PER_POOL):
        pool, _ = Pool.objects.update_or_create(
            slug=f"bench-p{number}",
            defaults={
                "name": f"Bench pool {number}",
                "purpose": "inference",
                "deployment": "bare_metal",
                "gpu_model": gpu_model,
                "gpu_count": GPUS_PER_POOL,
                "in_service_from": datetime(2020, 1, 1, tzinfo=UTC),
            },
        )
        HostnameRule.objects.get_or_create(pool=pool, hostname_pattern=f"bench-p{number}-*")
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


def reset_telemetry() -> None:
    sql(
        "TRUNCATE telemetry_gpudevicehour, telemetry_poolhourlyusage, telemetry_pendingrollup, "
        "telemetry_gpudevice, telemetry_importrun, telemetry_pullsource, "
        "reports_workloadhourlyusage, reports_pooldailyusage RESTART IDENTITY CASCADE"
    )


# --------------------------------------------------------------------------- checking


def expected_pool_hours(gpus: int, first_hour: datetime, hours: int, hour: datetime) -> dict:
    """Per pool slug, what the hour's rollup must say, computed here from the generated
    values and not through gpufleet or the TSDB: the hour [h, h + 1 h) holds the samples
    of minutes 60·k … 60·k + 59 after ``first_hour``; a GPU's share is the mean of its
    utilisation samples ÷ 100 (FORMULAS.md, "busy GPU-hours"); a pool's busy GPU-hours are
    the sum of its GPUs' shares, its peak memory the highest sample of any of its GPUs."""
    _fragments, raw = patterns(first_hour, hours)
    offset = round((hour - first_hour) / HOUR) * 60
    minutes = slice(offset, offset + 60)
    pools: dict[str, dict] = {}
    for number in range(gpus):
        slug = f"bench-p{number // GPUS_PER_POOL}"
        utilisation = raw["util"][pattern_of(number, "util")][minutes]
        memory = raw["fb"][pattern_of(number, "fb")][minutes]
        pool = pools.setdefault(slug, {"gpus": 0, "busy": 0.0, "memory": 0})
        pool["gpus"] += 1
        pool["busy"] += sum(utilisation) / len(utilisation) / 100
        pool["memory"] = max(pool["memory"], max(memory))
    return pools


def check_against_independent(gpus: int, first_hour: datetime, hours: int, hour) -> list[str]:
    """Differences between the stored pool-hours (and their day) and the independent
    computation; empty when every figure agrees to 1e-9 relative."""
    from apps.telemetry.models import PoolDailyUsage, PoolHourlyUsage

    expected = expected_pool_hours(gpus, first_hour, hours, hour)
    stored = {
        row.pool.slug: row
        for row in PoolHourlyUsage.objects.filter(hour=hour).select_related("pool")
    }
    problems = []
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
    """VictoriaMetrics answering the hourly pull's queries for ``hour``: (seconds, bytes)."""
    from apps.telemetry.pull import promql

    instant = f"{promql.evaluation_instant(hour).timestamp():.3f}"
    started, size = time.perf_counter(), 0
    for query in promql.hourly_queries():
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
        size += len(http(f"{base_url}/api/v1/query_range?{params}"))
    return time.perf_counter() - started, size


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


def gpufleet_seconds(source, hour: datetime) -> tuple[float, float, object]:
    from apps.telemetry.pull import tsdb
    from apps.telemetry.rollups import hourly

    PHASES.clear()
    started = time.perf_counter()
    run = tsdb.pull_hourly(source, start=hour, end=hour + HOUR, timeout_seconds=600)
    pulled = time.perf_counter()
    hourly.rollup_pending()
    rolled = time.perf_counter()
    return pulled - started, rolled - pulled, run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=100_000)
    parser.add_argument("--hours", type=int, default=3, help="at least 2")
    parser.add_argument("--batch-lines", type=int, default=6000, help="series per import")
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    )
    args = parser.parse_args(argv)

    prepare_database(args.database_url)
    setup_django(args.database_url)
    from django.utils import timezone

    from apps.pools.hours import floor_hour
    from apps.telemetry.models import GpuDeviceHour, PoolHourlyUsage, PullSource

    reset_telemetry()
    create_pools(args.gpus)
    sql("ANALYZE")
    time_phases()
    first_hour = floor_hour(timezone.now()) - (args.hours + 1) * HOUR
    # The first hour registers the devices; the next one is the steady hourly pull.
    measured_hour = first_hour + HOUR
    directory = Path(tempfile.mkdtemp(prefix="gpufleet-bench-vm-"))
    process, base_url = start_victoria_metrics(directory)
    try:
        samples = args.gpus * len(METRIC_NAMES) * 60 * args.hours
        log(f"loading {args.gpus:,} GPUs × {args.hours} h × 3 metrics = {samples:,} samples")
        load_seconds = load_fleet(base_url, args.gpus, first_hour, args.hours, args.batch_lines)
        log(f"loaded in {load_seconds:.1f} s ({samples / load_seconds:,.0f} samples/s)")

        base_before, size = baseline_seconds(base_url, measured_hour)
        log(f"baseline {base_before:.2f} s, {size / 2**20:.1f} MiB")
        source = PullSource.objects.create(
            name="bench vm", slug="bench-vm", kind=PullSource.Kind.PROMETHEUS_HOURLY, url=base_url
        )
        timings = {}
        for label, hour in (
            ("first pull (every device registered)", first_hour),
            ("the next hour (the hourly pull)", measured_hour),
            ("re-pull of that hour (rows replaced)", measured_hour),
        ):
            pulled, rolled, run = gpufleet_seconds(source, hour)
            timings[label] = (pulled, rolled, dict(PHASES))
            log(f"{label}: pull {pulled:.2f} s + rollup {rolled:.2f} s: {run.message}")
        base_after, _size = baseline_seconds(base_url, measured_hour)
        baseline = (base_before + base_after) / 2
        rows = GpuDeviceHour.objects.filter(hour=measured_hour).count()
        pool_hours = PoolHourlyUsage.objects.filter(hour=measured_hour).count()
        problems = check_against_independent(args.gpus, first_hour, args.hours, measured_hour)
        problems += pages_show_the_fleet(-(-args.gpus // GPUS_PER_POOL))
    finally:
        process.terminate()
        process.wait(timeout=60)
        shutil.rmtree(directory, ignore_errors=True)

    print()
    print(f"GPUs {args.gpus:,}; {args.hours} h × 1-min samples of 3 metrics = {samples:,} samples")
    print(f"load into VictoriaMetrics: {load_seconds:.1f} s ({samples / load_seconds:,.0f}/s)")
    print(
        f"one hour: {rows:,} device-hours, {pool_hours} pool-hours, answers {size / 2**20:.1f} MiB"
    )
    print()
    print("| measured | seconds | ratio to baseline |")
    print("|---|---:|---:|")
    print(
        f"| baseline: VictoriaMetrics answers the 7 queries (mean of before/after: "
        f"{base_before:.2f}, {base_after:.2f}) | {baseline:.2f} | 1.00× |"
    )
    for label, (pulled, rolled, _phases) in timings.items():
        total = pulled + rolled
        print(
            f"| gpufleet, {label}: pull {pulled:.2f} + rollup {rolled:.2f} | {total:.2f} | "
            f"{total / baseline:.2f}× |"
        )
    print()
    for label, (_pulled, _rolled, phases) in timings.items():
        said = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.items())
        print(f"{label}: {said}")
    steady_pulled, steady_rolled, _phases = timings["the next hour (the hourly pull)"]
    steady = steady_pulled + steady_rolled
    aims = [
        (
            f"hourly pull + rollup ≤ 3× the TSDB's own answers: {steady / baseline:.2f}×",
            steady <= 3 * baseline,
        ),
        (f"hourly pull + rollup under 60 s wall: {steady:.1f} s", steady < 60),
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
        f"check: the {pool_hours} pool-hours (GPUs reporting, busy GPU-h, peak MiB) equal a "
        "computation from the generated samples; the day equals its hours; the Overview, the "
        "pool list and the report show the fleet"
    )
    return 0 if all(met for _said, met in aims) else 1


if __name__ == "__main__":
    sys.exit(main())
