#!/usr/bin/env python
"""Direct scrapes of a mid-size fleet: the sustained rate, batched and unbatched.

A fleet of 10,000 GPUs (1,250 nodes of 8) is scraped every 15 s, one dcgm-exporter
``/metrics`` per node, so it needs 1,250 scrapes per 15 s = 83.3 scrapes/s. Each path
stores the same scrapes and runs the drain beat runs every 60 s (``rollup_pending``)
after every 4 rounds, inline (in production it runs on a worker of the same machine):

- **unbatched** (the baseline, the code before batches): per scrape what
  ``scrapes.pull_dcgm_exporter`` does around its HTTP GET: an ImportRun, parse,
  ``import_gpu_samples`` in its own transaction, the run's result and the source's;
- **batched**: per batch of ``--batch-size`` scrapes what ``telemetry.pull_scrape_batch``
  does after its GETs (``scrapes.store_scrapes``): parse, one transaction with one COPY for
  the batch, the batch's runs and sources.

The two paths alternate block by block (4 rounds and a drain each), so they see the same
noise and the same growing hour. HTTP is left out of both, as in bench/telemetry.py's
lines 12–13: the exporters run on the GPU nodes, not on this machine. It is measured
half-way through an hour three hours back (inside the raw retention, as live scrapes
are) that already holds 30 minutes of the whole fleet's 15-s samples (a rollup reads its
whole pool-hour).

    .venv/bin/python bench/scale_scrape.py                       # 10,000 GPUs, ~5 min
    .venv/bin/python bench/scale_scrape.py --gpus 2000 --blocks 1   # a quick run

It uses its own database (``--database-url``, default
postgres://postgres@127.0.0.1:5432/gpufleet_bench_scrape), creates and migrates it, and
empties the telemetry tables first. Exits 1 when the batched rate is below the need.
"""

import argparse
import gc
import math
import os
import platform
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))
sys.path.insert(0, str(REPOSITORY / "bench"))

import telemetry as fleet_bench  # noqa: E402 - bench/telemetry.py, beside this file

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/gpufleet_bench_scrape"
INTERVAL_SECONDS = fleet_bench.SCRAPE_INTERVAL_SECONDS
ROUNDS_PER_DRAIN = 60 // INTERVAL_SECONDS  # beat drains every 60 s


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=10_000, help="fleet size (default 10000)")
    parser.add_argument("--pools", type=int, default=20, help="pools (default 20)")
    parser.add_argument(
        "--batch-size", type=int, default=None, help="scrapes per batch (default pull's)"
    )
    parser.add_argument(
        "--blocks",
        type=int,
        default=2,
        help="blocks of 4 rounds + a drain per path, alternating (default 2)",
    )
    parser.add_argument(
        "--skip-unbatched", action="store_true", help="measure the batched path alone"
    )
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    )
    return parser.parse_args(argv)


def create_sources(nodes) -> list:
    from apps.clusters.models import default_cluster_pk
    from apps.telemetry.models import PullSource

    PullSource.objects.all().delete()
    # bulk_create skips PullSource.save, which would put each in the default cluster.
    cluster_id = default_cluster_pk()
    PullSource.objects.bulk_create(
        PullSource(
            cluster_id=cluster_id,
            name=node[0].hostname,
            slug=node[0].hostname,
            kind=PullSource.Kind.DCGM_EXPORTER,
            url=f"http://{node[0].hostname}:9400/metrics",
            interval_seconds=INTERVAL_SECONDS,
        )
        for node in nodes
    )
    return list(PullSource.objects.select_related("pool").order_by("name"))


class Fleet:
    """The fleet's scrape texts of one round, generated before the round (not timed)."""

    def __init__(self, writer, sources, first_scrape: datetime):
        self.writer = writer
        self.sources = sources
        self.first_scrape = first_scrape
        self.round = 0

    def next_round(self) -> tuple[datetime, list[str]]:
        scraped_at = self.first_scrape + timedelta(seconds=INTERVAL_SECONDS * self.round)
        minute = int((scraped_at - self.first_scrape).total_seconds() // 60)
        texts = [
            self.writer.scrape(number, minute, with_timestamps=False)
            for number in range(len(self.sources))
        ]
        self.round += 1
        return scraped_at, texts


def unbatched_round(sources, scraped_at, texts) -> tuple[int, int]:
    """What pull_dcgm_exporter does per source, around its GET (apps/telemetry/pull/scrapes.py)."""
    from apps.telemetry.ingest.parsers import parse_dcgm
    from apps.telemetry.models import ImportRun
    from apps.telemetry.pull import base

    accepted = 0
    for source, text in zip(sources, texts, strict=True):
        run, status = base.record_pull(
            source,
            scraped_at,
            format="dcgm",
            run_source=ImportRun.Source.SCRAPE,
            fetch=lambda text=text: (parse_dcgm(text, scraped_at=scraped_at), ""),
        )
        base.record_on_source(source, scraped_at, status, run.message)
        accepted += run.rows_accepted
    return accepted, len(texts)


def batched_round(sources, scraped_at, texts, batch_size) -> tuple[int, int]:
    """What telemetry.pull_scrape_batch does per batch after its GETs."""
    from apps.telemetry.pull import scrapes as scrape_pull

    accepted = 0
    for first in range(0, len(sources), batch_size):
        scrapes = [
            scrape_pull.Scrape(source, scraped_at, text=text)
            for source, text in zip(
                sources[first : first + batch_size], texts[first : first + batch_size], strict=True
            )
        ]
        accepted += sum(run.rows_accepted for run in scrape_pull.store_scrapes(scrapes))
    return accepted, len(texts)


def measure_block(fleet: Fleet, store) -> tuple[float, int, int, float]:
    """4 rounds of the fleet through ``store`` and the drain after them: (seconds in all,
    scrapes, samples accepted, seconds of the drain)."""
    from apps.telemetry.rollups import hourly

    seconds = 0.0
    scrapes = accepted = 0
    for _ in range(ROUNDS_PER_DRAIN):
        scraped_at, texts = fleet.next_round()
        gc.collect()
        start = time.perf_counter()
        round_accepted, round_scrapes = store(fleet.sources, scraped_at, texts)
        seconds += time.perf_counter() - start
        accepted += round_accepted
        scrapes += round_scrapes
        del texts
    start = time.perf_counter()
    unqueued, _written = hourly.rollup_pending()
    drain_seconds = time.perf_counter() - start
    assert unqueued, "the drain rolled nothing up"
    return seconds + drain_seconds, scrapes, accepted, drain_seconds


def _serve_scrapes(text: str, ready) -> None:
    """A stand-in exporter in its own process: every GET answers ``text``."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = text.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    ready.put(server.server_address[1])
    server.serve_forever()


def measure_http(fleet: Fleet) -> tuple[float, float, int]:
    """One round of GETs as the batch task makes them (``scrapes.fetch_scrapes``, batches of
    SCRAPE_BATCH_SIZE) from a local server process: (wall seconds, this process's CPU
    seconds, scrapes). The server's CPU is not the worker's: exporters run on the nodes."""
    import multiprocessing

    from apps.telemetry.models import PullSource
    from apps.telemetry.pull import scrapes as scrape_pull

    _scraped_at, texts = fleet.next_round()
    ready = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve_scrapes, args=(texts[0], ready), daemon=True)
    server.start()
    try:
        port = ready.get(timeout=30)
        sources = [
            PullSource(
                name=f"n{number}",
                slug=f"n{number}",
                url=f"http://127.0.0.1:{port}/metrics/{number}",
            )
            for number in range(len(fleet.sources))
        ]
        wall, cpu = time.perf_counter(), time.process_time()
        for first in range(0, len(sources), scrape_pull.SCRAPE_BATCH_SIZE):
            batch = sources[first : first + scrape_pull.SCRAPE_BATCH_SIZE]
            scrapes = scrape_pull.fetch_scrapes(batch)
            assert all(scrape.text and not scrape.failure for scrape in scrapes)
        return time.perf_counter() - wall, time.process_time() - cpu, len(sources)
    finally:
        server.terminate()
        server.join(10)


def main(argv=None) -> int:
    args = parse_args(argv)
    began = time.perf_counter()
    fleet_bench.prepare_database(args.database_url)
    fleet_bench.setup_django(args.database_url)
    from importlib.metadata import version

    from django.db import connection

    from apps.telemetry.pull import scrapes as scrape_pull
    from apps.telemetry.rollups import hourly

    batch_size = args.batch_size or scrape_pull.SCRAPE_BATCH_SIZE
    fleet_bench.reset_telemetry()
    nodes = fleet_bench.build_fleet(args.gpus, args.pools)
    fleet_bench.create_pools(args.pools, math.ceil(args.gpus / args.pools))
    sources = create_sources(nodes)
    writer = fleet_bench.DcgmWriter(nodes)
    # Live scrapes are recent: three hours back, inside the raw retention (bench/telemetry.py
    # dates its files in a fixed past, where every row is older than the retention and is
    # checked for a final hour).
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
    fleet = Fleet(writer, sources, first_scrape=hour + timedelta(minutes=30))
    fleet_bench.log(f"{args.gpus} GPUs in {len(nodes)} nodes and {args.pools} pools")

    # Setup, not measured: the devices registered by a first round, then half an hour of
    # the fleet's 15-s samples in the hour (server-side), then that hour rolled up.
    setup_fleet = Fleet(writer, sources, first_scrape=hour - timedelta(minutes=1))
    batched_round(sources, *setup_fleet.next_round(), batch_size)
    rows = fleet_bench.insert_samples(hour, 30 * 60 // INTERVAL_SECONDS, INTERVAL_SECONDS)
    fleet_bench.sql("VACUUM ANALYZE telemetry_gpusample")
    hourly.rollup_pending()
    fleet_bench.log(f"setup: {rows:,} samples in the hour")

    paths = {"batched": lambda s, at, t: batched_round(s, at, t, batch_size)}
    if not args.skip_unbatched:
        paths = {"unbatched": unbatched_round, **paths}
    totals = {name: [0.0, 0, 0, 0.0, 0] for name in paths}  # seconds, scrapes, samples, drain
    for block in range(args.blocks):
        for name, store in paths.items():
            fleet_bench.log(f"block {block + 1}/{args.blocks}: {name}")
            seconds, scrapes, accepted, drain_seconds = measure_block(fleet, store)
            assert accepted == scrapes * fleet_bench.GPUS_PER_NODE, (name, accepted, scrapes)
            total = totals[name]
            total[0] += seconds
            total[1] += scrapes
            total[2] += accepted
            total[3] += drain_seconds
            total[4] += 1
            fleet_bench.log(f"  {scrapes / seconds:.1f} scrapes/s, drain {drain_seconds:.2f} s")

    fleet_bench.log("HTTP: one round of GETs from a local server process")
    http_wall, http_cpu, http_scrapes = measure_http(fleet)

    needed = len(nodes) / INTERVAL_SECONDS
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server_version = cursor.fetchone()[0]
    print()
    print(
        f"gpufleet direct-scrape benchmark, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, total run "
        f"{time.perf_counter() - began:.0f} s"
    )
    print(
        f"{args.gpus:,} GPUs ({len(nodes):,} nodes of 8, {args.pools} pools) scraped every "
        f"{INTERVAL_SECONDS} s: needs {needed:.1f} scrapes/s = {needed * 8:,.0f} samples/s; "
        f"a drain after every {ROUNDS_PER_DRAIN} rounds"
    )
    print(
        f"PostgreSQL {server_version.split()[0]}, Python {platform.python_version()}, "
        f"psycopg {version('psycopg')}"
    )
    print()
    header = (
        f"{'path':<34} {'scrapes':>8} {'seconds':>9} {'drains s':>9} "
        f"{'scrapes/s':>10} {'samples/s':>10} {'× needed':>9}  result"
    )
    print(header)
    print("-" * len(header))
    rates = {}
    for name, (seconds, scrapes, accepted, drain_seconds, _blocks) in totals.items():
        rate = scrapes / seconds
        rates[name] = rate
        label = (
            "unbatched: 1 scrape per transaction"
            if name == "unbatched"
            else f"batched: {batch_size} scrapes per transaction"
        )
        result = "PASS" if rate >= needed else "MISS"
        aim = "(baseline)" if name == "unbatched" else result
        print(
            f"{label:<34} {scrapes:>8,} {seconds:>9.2f} {drain_seconds:>9.2f} "
            f"{rate:>10.1f} {accepted / seconds:>10,.0f} {rate / needed:>8.2f}×  {aim}"
        )
    if "unbatched" in rates:
        print()
        print(f"batched ÷ unbatched, same run: {rates['batched'] / rates['unbatched']:.2f}×")
    seconds, scrapes, *_rest = totals["batched"]
    per_scrape = seconds / scrapes + http_cpu / http_scrapes
    print(
        f"HTTP GETs of one round ({http_scrapes:,} scrapes, "
        f"{scrape_pull.SCRAPE_FETCH_THREADS} at a "
        f"time, local server process): {http_wall:.2f} s wall, {http_cpu:.2f} s of the "
        f"worker's CPU = {1000 * http_cpu / http_scrapes:.2f} ms a scrape; batched with "
        f"that CPU added: {1 / per_scrape:.1f} scrapes/s = {1 / per_scrape / needed:.2f}× needed"
    )
    print(
        f"\nEach path: {args.blocks} block(s) of {ROUNDS_PER_DRAIN} rounds of {len(nodes):,} "
        "scrapes + the drain (rollup_pending), alternating; aim: batched ≥ 1× needed."
    )
    return 0 if rates["batched"] >= needed else 1


if __name__ == "__main__":
    sys.exit(main())
