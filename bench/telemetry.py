#!/usr/bin/env python
"""Telemetry ingest and rollup benchmark.

Generates a synthetic fleet (default 1,000 GPUs × 24 h at 1-minute resolution: 1.44 M
samples) as generic CSV and as dcgm-exporter text, and prints, all measured in this run on
PostgreSQL (STYLE.md: machines here are noisy, so every figure is a ratio to a baseline
timed next to it):

- CSV import (parse + register devices + COPY to staging + INSERT … ON CONFLICT) against a
  bare ``COPY`` of the same CSV bytes into an unindexed table, and against the keyed
  baseline: the import's last statement alone, ``INSERT … ON CONFLICT`` of the same typed
  rows from a plain table into the same keyed sample table;
- dcgm import (parse + the same store path) against merely parsing the same text with
  ``prometheus_client``'s parser;
- the full rollup (``rollup_everything``) against one hand-written ``INSERT … SELECT …
  GROUP BY`` computing the same columns from the same rows;
- the incremental rollup of one new hour after N days of history against the full rollup
  of that history;
- the sustained rate of the realistic shape: every node (8 GPUs) scraped every 15 s, one
  parse + import transaction per scrape, then also with the drain of the queued
  pool-hours every 60 s, against the rate the fleet needs.

Usage (from the repository root; see bench/README.md):

    .venv/bin/python bench/telemetry.py                  # the spec's sizes, ~10-15 min
    .venv/bin/python bench/telemetry.py --gpus 200 --hours 4 --history-days 2   # ~1 min

It uses its own database (``--database-url``, default
postgres://postgres@127.0.0.1:5432/gpufleet_bench), creates it when missing, migrates it,
and empties the telemetry tables before it starts.
"""

import argparse
import gc
import math
import os
import platform
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/gpufleet_bench"
# The benchmark day and the history sit in a fixed past, so nothing is "in the future".
DAY_START = datetime(2025, 1, 1, tzinfo=UTC)
GPUS_PER_NODE = 8
SCRAPE_INTERVAL_SECONDS = 15
MODEL_NAME = "NVIDIA H100 80GB HBM3"
DRIVER_VERSION = "580.105.08"
FB_TOTAL_MIB = 81559
FB_RESERVED_MIB = 591
PCI_BUS_IDS = (
    "00000000:18:00.0",
    "00000000:2A:00.0",
    "00000000:3A:00.0",
    "00000000:5D:00.0",
    "00000000:9A:00.0",
    "00000000:AB:00.0",
    "00000000:BA:00.0",
    "00000000:DB:00.0",
)
CSV_COLUMNS = (
    "timestamp=timestamp,device=gpu_uuid,hostname=hostname,utilization_pct=utilization_pct,"
    "memory_used_mib=memory_used_mib,power_w=power_w"
)
CSV_HEADER = "timestamp,gpu_uuid,hostname,utilization_pct,memory_used_mib,power_w\n"

# The 20 metrics dcgm-exporter's default counters give per GPU (as in the scrapes under
# tests/data/dcgm-exporter/scrapes/); 9 of them are stored, 11 are skipped by the parser.
DCGM_METRICS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "counter",
        "Total energy consumption since boot (in mJ).",
    ),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for correctable errors",
    ),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    (
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gauge",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
    ),
)


# --------------------------------------------------------------------------- the fleet


@dataclass(frozen=True)
class Gpu:
    number: int
    uuid: str
    hostname: str
    index: int
    busy_level: int  # this GPU's typical utilization, %
    energy_at_start_mj: int


def build_fleet(gpu_count: int, pool_count: int) -> list[list[Gpu]]:
    """Nodes of 8 GPUs; node n belongs to pool n mod pool_count (by hostname rule)."""
    nodes: list[list[Gpu]] = []
    for number in range(gpu_count):
        node, index = divmod(number, GPUS_PER_NODE)
        if index == 0:
            nodes.append([])
        # A fleet is part busy, part idle: levels 0…95 spread over the GPUs.
        busy_level = (number * 37) % 20 * 5
        nodes[-1].append(
            Gpu(
                number=number,
                uuid=f"GPU-{uuid.uuid5(uuid.NAMESPACE_URL, f'gpufleet-bench/{number}')}",
                hostname=f"bench-p{node % pool_count}-node{node:04d}",
                index=index,
                busy_level=busy_level,
                energy_at_start_mj=10_000_000_000 + number * 7_919_000,
            )
        )
    return nodes


def readings(gpu: Gpu, minute: int) -> tuple[int, int, float, int]:
    """(utilization %, FB used MiB, power W, energy counter mJ) of a GPU at a minute since
    DAY_START: deterministic, varied, and the energy counter only rises."""
    jitter = (gpu.number * 2654435761 + minute * 40503) & 0xFFFF
    utilization = min(100, max(0, gpu.busy_level + jitter % 21 - 10))
    memory_used = utilization * 800 + jitter % 512
    power = 70.0 + utilization * 6.0 + (jitter % 1000) / 1000.0
    energy = gpu.energy_at_start_mj + minute * 60_000 * 450
    return utilization, memory_used, power, energy


def csv_text(nodes: list[list[Gpu]], minutes: range) -> str:
    """Generic CSV, one row per GPU and minute, ISO 8601 timestamps in UTC."""
    gpus = [gpu for node in nodes for gpu in node]
    parts = [CSV_HEADER]
    append = parts.append
    for minute in minutes:
        stamp = (DAY_START + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")
        for gpu in gpus:
            utilization, memory_used, power, _energy = readings(gpu, minute)
            append(f"{stamp},{gpu.uuid},{gpu.hostname},{utilization},{memory_used},{power:.3f}\n")
    return "".join(parts)


class DcgmWriter:
    """dcgm-exporter text shaped like the real scrapes: per node, every metric has its HELP
    and TYPE lines followed by one line per GPU carrying the full label set (gpu, UUID,
    pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION, and on every other
    node the pod labels dcgm-exporter adds under Kubernetes)."""

    def __init__(self, nodes: list[list[Gpu]]):
        self.nodes = nodes
        self.headers = [
            f"# HELP {name} {text}\n# TYPE {name} {kind}\n" for name, kind, text in DCGM_METRICS
        ]
        self.prefixes: list[list[list[str]]] = []  # [node][metric][gpu]
        for node_number, node in enumerate(nodes):
            per_metric = []
            for name, _kind, _text in DCGM_METRICS:
                per_gpu = []
                for gpu in node:
                    labels = (
                        f'gpu="{gpu.index}",UUID="{gpu.uuid}",pci_bus_id="{PCI_BUS_IDS[gpu.index]}",'
                        f'device="nvidia{gpu.index}",modelName="{MODEL_NAME}",'
                        f'Hostname="{gpu.hostname}",DCGM_FI_DRIVER_VERSION="{DRIVER_VERSION}"'
                    )
                    if node_number % 2 == 0:
                        labels += (
                            ',container="main",namespace="inference",'
                            f'pod="vllm-decode-{node_number}-{gpu.index}",pod_uid=""'
                        )
                    per_gpu.append(f"{name}{{{labels}}} ")
                per_metric.append(per_gpu)
            self.prefixes.append(per_metric)

    @staticmethod
    def values(gpu: Gpu, minute: int) -> tuple[str, ...]:
        utilization, memory_used, power, energy = readings(gpu, minute)
        return (
            "1980" if utilization else "345",  # SM clock
            "2619",  # memory clock
            str(35 + utilization // 4),  # memory temperature
            str(30 + utilization // 3),  # GPU temperature
            f"{power:.3f}",
            str(energy),
            "0",  # PCIe replays
            str(utilization),
            str(utilization // 2),  # memory copy utilization
            "0",
            "0",
            "0",  # XID
            str(FB_TOTAL_MIB - FB_RESERVED_MIB - memory_used),
            str(memory_used),
            str(FB_RESERVED_MIB),
            "0",
            "0",
            "0",
            f"{utilization / 100:.6f}",  # GR engine active, a 0–1 ratio
            f"{utilization / 200:.6f}",  # tensor pipe active
        )

    def scrape(self, node_number: int, minute: int, *, with_timestamps: bool) -> str:
        """One node's /metrics at a minute; line timestamps (ms) let many scrapes share a
        file, as the text format allows, while a live scrape has none."""
        node = self.nodes[node_number]
        if with_timestamps:
            stamp_ms = int((DAY_START + timedelta(minutes=minute)).timestamp() * 1000)
            tail = f" {stamp_ms}\n"
        else:
            tail = "\n"
        values = [self.values(gpu, minute) for gpu in node]
        parts = []
        append = parts.append
        for metric, (header, per_gpu) in enumerate(
            zip(self.headers, self.prefixes[node_number], strict=True)
        ):
            append(header)
            for prefix, gpu_values in zip(per_gpu, values, strict=True):
                append(prefix + gpu_values[metric] + tail)
        return "".join(parts)


# --------------------------------------------------------------------------- timing


@dataclass
class Line:
    what: str
    seconds: float
    rows: int | None = None  # rows (samples) processed, for rows/s
    rate_unit: str = "rows/s"
    ratio: float | None = None
    ratio_text: str = ""
    aim: str = ""
    passed: bool | None = None
    note: str = ""


def timed(setup, run) -> float:
    """Wall-clock seconds of ``run()``; ``setup()`` before it is not timed."""
    setup()
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def best_of(repeat: int, setup, run) -> float:
    return min(timed(setup, run) for _ in range(repeat))


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- database


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
    # As deployed: no per-query debug log, and rollups are called here directly.
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


def reset_telemetry() -> None:
    sql(
        "TRUNCATE telemetry_gpusample, telemetry_poolhourlyusage, telemetry_pendingrollup, "
        "telemetry_gpudevice, "
        "telemetry_hostnamerule, telemetry_importrun RESTART IDENTITY CASCADE"
    )


def create_pools(pool_count: int, gpus_per_pool: int) -> list:
    from apps.catalog.models import GpuModel
    from apps.pools.models import Pool
    from apps.telemetry.models import HostnameRule

    gpu_model = GpuModel.objects.filter(name__icontains="H100").first() or GpuModel.objects.first()
    pools = []
    for number in range(pool_count):
        pool, _ = Pool.objects.update_or_create(
            slug=f"bench-p{number}",
            defaults={
                "name": f"Bench pool {number}",
                "purpose": "inference",
                "deployment": "bare_metal",
                "gpu_model": gpu_model,
                "gpu_count": gpus_per_pool,
                # In service before the history the benchmark writes, so every hour counts.
                "in_service_from": datetime(2020, 1, 1, tzinfo=UTC),
            },
        )
        HostnameRule.objects.create(pool=pool, hostname_pattern=f"bench-p{number}-*")
        pools.append(pool)
    return pools


def vacuum_analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE telemetry_gpusample")
        cursor.execute("VACUUM ANALYZE telemetry_gpudevice")


# --------------------------------------------------------------------------- measurements

BARE_TABLE = "bench_bare_copy"
STORE_TABLE = "bench_store_rows"
BASELINE_ROLLUP_TABLE = "bench_rollup_baseline"

# The same per-pool-and-hour columns as apps/telemetry/rollups/hourly.py, written the plain way:
# one statement over every pool, into an unindexed table, no delete, no upsert.
HAND_WRITTEN_ROLLUP_SQL = f"""
INSERT INTO {BASELINE_ROLLUP_TABLE}
SELECT per_gpu.pool_id, per_gpu.hour, COUNT(per_gpu.utilization_pct), MAX(pool.gpu_count),
       COALESCE(SUM(per_gpu.utilization_pct) / 100.0, 0), AVG(per_gpu.utilization_pct),
       MAX(per_gpu.utilization_pct), MAX(per_gpu.max_memory_used_mib), SUM(per_gpu.energy_kwh)
FROM (
    SELECT device.pool_id, date_trunc('hour', sample.timestamp) AS hour,
           AVG(sample.utilization_pct) AS utilization_pct,
           MAX(sample.memory_used_mib) AS max_memory_used_mib,
           CASE WHEN COUNT(sample.energy_mj) >= 2
                THEN (MAX(sample.energy_mj) - MIN(sample.energy_mj)) / 3.6e9
                ELSE AVG(sample.power_w) / 1000.0 END AS energy_kwh
    FROM telemetry_gpusample AS sample
    JOIN telemetry_gpudevice AS device ON device.id = sample.device_id
    WHERE device.pool_id IS NOT NULL
    GROUP BY device.pool_id, date_trunc('hour', sample.timestamp), sample.device_id
) AS per_gpu
JOIN pools_pool AS pool ON pool.id = per_gpu.pool_id
GROUP BY per_gpu.pool_id, per_gpu.hour
"""  # noqa: S608 - our own table name


def measure_csv(text: str, samples: int, repeat: int, import_repeat: int) -> list[Line]:
    """Bare COPY of the CSV bytes and the keyed baseline (best of ``repeat``) vs the CSV
    import (best of ``import_repeat``), interleaved round by round so all three see the
    same noise."""
    from django.db import connection, transaction

    from apps.telemetry.ingest import formats, storage
    from apps.telemetry.ingest.parsers import paused_gc

    sql(f"DROP TABLE IF EXISTS {BARE_TABLE}")
    sql(
        f"CREATE TABLE {BARE_TABLE} (timestamp timestamptz, gpu_uuid text, hostname text, "
        "utilization_pct double precision, memory_used_mib double precision, "
        "power_w double precision)"
    )
    payload = text.encode()
    block = 1 << 20

    def bare_copy():
        with (
            transaction.atomic(),
            connection.cursor() as cursor,
            cursor.cursor.copy(
                f"COPY {BARE_TABLE} FROM STDIN WITH (FORMAT csv, HEADER true)"
            ) as copy,
        ):
            for offset in range(0, len(payload), block):
                copy.write(payload[offset : offset + block])

    columns = formats.parse_column_mapping(CSV_COLUMNS)

    def csv_import():
        # As every channel imports (importer.run_import): a stream of 50,000-line chunks,
        # each parsed, staged and inserted, with the cyclic GC paused.
        with paused_gc():
            chunks = formats.gpu_chunks(text, format="csv", columns=columns)
            summary = storage.import_gpu_samples(chunks)
        assert summary.accepted == samples and not summary.rejected, summary.describe()

    # The keyed baseline: the same rows, already typed and on the server in a plain table,
    # through the import's last statement into the empty sample table, i.e. the import
    # with no Python in it. Its rows are the first import's, copied once (setup).
    column_list = ", ".join(f'"{name}"' for name in storage.SAMPLE_COLUMNS)
    sql(f"DROP TABLE IF EXISTS {STORE_TABLE}")

    def keyed_store():
        with transaction.atomic():
            sql(
                f"INSERT INTO telemetry_gpusample ({column_list}) "  # noqa: S608 - constants
                f"SELECT {column_list} FROM {STORE_TABLE} ON CONFLICT DO NOTHING"
            )

    copy_best = import_best = keyed_best = math.inf
    for round_number in range(max(repeat, import_repeat)):
        log(f"CSV round {round_number + 1}: bare COPY, import, keyed baseline")
        if round_number < repeat:
            copy_best = min(copy_best, timed(lambda: sql(f"TRUNCATE {BARE_TABLE}"), bare_copy))
        if round_number < import_repeat:
            import_best = min(
                import_best, timed(lambda: sql("TRUNCATE telemetry_gpusample"), csv_import)
            )
        if round_number == 0:
            sql(f"CREATE TABLE {STORE_TABLE} AS SELECT {column_list} FROM telemetry_gpusample")  # noqa: S608
        if round_number < repeat:
            keyed_best = min(
                keyed_best, timed(lambda: sql("TRUNCATE telemetry_gpusample"), keyed_store)
            )
    sql(f"DROP TABLE {BARE_TABLE}")
    sql(f"DROP TABLE {STORE_TABLE}")
    # Whichever ran last, the import or the keyed baseline, left the same rows in the
    # sample table for the rollups measured later.
    ratio = copy_best / import_best
    keyed_ratio = copy_best / keyed_best
    import_to_keyed = keyed_best / import_best
    return [
        Line(
            "CSV: bare COPY, unindexed table (baseline)",
            copy_best,
            samples,
            note=f"the CSV bytes, COPY … (FORMAT csv) into a plain table; best of {repeat}",
        ),
        Line(
            "CSV import: parse + store",
            import_best,
            samples,
            note=(
                "import_gpu_samples of the parser's stream of 50,000-line chunks, as the "
                "channels import: parse, register devices, binary COPY to staging, INSERT … "
                "ON CONFLICT (overlapping the next chunk's parse), commit; into an empty "
                f"sample table; best of {import_repeat}"
            ),
            ratio=ratio,
            ratio_text=f"{ratio:.2f}× COPY",
            aim="≥ 0.30× COPY",
            passed=ratio >= 0.30,
        ),
        Line(
            "CSV: keyed baseline, INSERT … ON CONFLICT",
            keyed_best,
            samples,
            ratio_text=f"{keyed_ratio:.2f}× COPY",
            aim="(baseline)",
            note=(
                "the same rows, already typed, in a plain table on the server: INSERT … SELECT "
                "… ON CONFLICT DO NOTHING into the empty telemetry_gpusample + commit (its "
                "primary key, timestamp index and foreign key), i.e. the import with no "
                f"Python at all; best of {repeat}"
            ),
        ),
        Line(
            "CSV import against the keyed baseline (info)",
            import_best,
            samples,
            ratio_text=f"{import_to_keyed:.2f}× keyed",
            aim="(info)",
            note=(
                "line 2's rows/s over line 3's: the share of the keyed table's own speed that "
                "the import keeps with its parsing, validation and transfer"
            ),
        ),
    ]


def measure_dcgm(
    writer: DcgmWriter, minutes: range, chunk_minutes: int, samples: int, baseline_share: float
) -> list[Line]:
    """Per chunk of minutes (one "file"), interleaved so both see the same noise:
    prometheus_client parses every k-th scrape of the chunk's text (k = 1 / share: it needs
    ~75 µs a line, so all 36 M lines would take 45 min), then gpufleet parses and imports
    the whole chunk. Rates are per GPU-sample. One pass: the text is too big to keep."""
    from prometheus_client.parser import text_string_to_metric_families

    from apps.telemetry.ingest import formats, storage

    sql("TRUNCATE telemetry_gpusample")
    every = max(1, round(1 / baseline_share))
    node_count = len(writer.nodes)
    baseline_seconds = import_seconds = 0.0
    baseline_samples = lines = accepted = 0
    chunks = [minutes[i : i + chunk_minutes] for i in range(0, len(minutes), chunk_minutes)]
    for number, chunk in enumerate(chunks, 1):
        scrapes = [
            writer.scrape(node_number, minute, with_timestamps=True)
            for minute in chunk
            for node_number in range(node_count)
        ]
        baseline_text = "".join(scrapes[::every])
        baseline_gpu_samples = sum(
            len(writer.nodes[position % node_count]) for position in range(0, len(scrapes), every)
        )
        text = "".join(scrapes)
        del scrapes
        lines += text.count("\n")
        gc.collect()
        # Both parsers run with the cyclic GC paused (gpufleet's pauses it by itself).
        gc.disable()
        start = time.perf_counter()
        metric_lines = 0
        for family in text_string_to_metric_families(baseline_text):
            metric_lines += len(family.samples)
        baseline_seconds += time.perf_counter() - start
        gc.enable()
        assert metric_lines == baseline_gpu_samples * len(DCGM_METRICS), metric_lines
        baseline_samples += baseline_gpu_samples
        del baseline_text
        gc.collect()
        start = time.perf_counter()
        result = formats.parse_gpu_text(text, format="dcgm", scraped_at=DAY_START)
        summary = storage.import_gpu_samples(result)
        import_seconds += time.perf_counter() - start
        assert not summary.rejected, summary.describe()
        accepted += summary.accepted
        del text, result, summary
        log(
            f"dcgm chunk {number}/{len(chunks)}: prometheus_client "
            f"{baseline_samples / baseline_seconds:,.0f} samples/s, gpufleet import "
            f"{accepted / import_seconds:,.0f} samples/s so far"
        )
    assert accepted == samples, (accepted, samples)
    baseline_rate = baseline_samples / baseline_seconds
    import_rate = samples / import_seconds
    ratio = import_rate / baseline_rate
    return [
        Line(
            "dcgm: prometheus_client parse (baseline)",
            baseline_seconds,
            baseline_samples,
            rate_unit="samples/s",
            note=(
                f"text_string_to_metric_families over every {every}th scrape of the same text "
                f"({baseline_samples:,} GPU-samples; {lines / samples:.0f} lines per "
                "GPU-sample, 20 of them metric lines), GC paused"
            ),
        ),
        Line(
            "dcgm import: parse + store",
            import_seconds,
            samples,
            rate_unit="samples/s",
            note=(
                f"all {samples:,} GPU-samples, one import per {chunk_minutes} min of the "
                f"fleet's scrapes ({len(chunks)} files), one pass"
            ),
            ratio=ratio,
            ratio_text=f"{ratio:.2f}× prom parse",
            aim="≥ 1× prom parse",
            passed=ratio >= 1.0,
        ),
    ]


def rollup_table_matches() -> tuple[int, bool]:
    """The app's rollup equals the hand-written one (a benchmark of a wrong answer is
    worthless): same (pool, hour) rows, same figures to 1e-6."""
    mismatches = sql(
        f"""
        SELECT COUNT(*) FROM telemetry_poolhourlyusage AS app
        FULL JOIN {BASELINE_ROLLUP_TABLE} AS hand USING (pool_id, hour)
        WHERE app.pool_id IS NULL OR hand.pool_id IS NULL
           OR app.reporting_gpus <> hand.reporting_gpus
           OR abs(app.busy_gpu_hours - hand.busy_gpu_hours) > 1e-6
           OR abs(app.max_utilization_pct - hand.max_utilization_pct) > 1e-6
           OR abs(app.energy_kwh - hand.energy_kwh) > 1e-6
        """  # noqa: S608 - our own table names
    )[0][0]
    rows = sql("SELECT COUNT(*) FROM telemetry_poolhourlyusage")[0][0]
    return rows, mismatches == 0


def measure_full_rollup(samples: int, repeat: int, label: str) -> tuple[list[Line], float]:
    from apps.telemetry.rollups import hourly

    sql(f"DROP TABLE IF EXISTS {BASELINE_ROLLUP_TABLE}")
    sql(
        f"CREATE TABLE {BASELINE_ROLLUP_TABLE} (pool_id bigint, hour timestamptz, "
        "reporting_gpus integer, capacity_gpu_hours double precision, "
        "busy_gpu_hours double precision, avg_utilization_pct double precision, "
        "max_utilization_pct double precision, max_memory_used_mib double precision, "
        "energy_kwh double precision)"
    )
    hand_best = app_best = math.inf
    for round_number in range(repeat):
        log(f"full rollup {label}, round {round_number + 1}/{repeat}")
        hand_best = min(
            hand_best,
            timed(
                lambda: sql(f"TRUNCATE {BASELINE_ROLLUP_TABLE}"),
                lambda: sql(HAND_WRITTEN_ROLLUP_SQL),
            ),
        )
        app_best = min(app_best, timed(lambda: None, hourly.rollup_everything))
    rows, same = rollup_table_matches()
    assert same, "rollup_everything and the hand-written SQL disagree"
    sql(f"DROP TABLE {BASELINE_ROLLUP_TABLE}")
    ratio = app_best / hand_best
    return [
        Line(
            f"rollup {label}: hand-written SQL (baseline)",
            hand_best,
            samples,
            note=(
                "one INSERT … SELECT … GROUP BY (per GPU-hour, then per pool-hour) into an "
                f"unindexed table; best of {repeat}"
            ),
        ),
        Line(
            f"rollup {label}: full, rollup_everything()",
            app_best,
            samples,
            note=f"{rows:,} pool-hours, equal to the baseline's; best of {repeat}",
            ratio=ratio,
            ratio_text=f"{ratio:.2f}× hand SQL",
            aim="≤ 1.5× hand SQL",
            passed=ratio <= 1.5,
        ),
    ], app_best


SAMPLES_SQL = """
INSERT INTO telemetry_gpusample (
    device_id, timestamp, utilization_pct, memory_used_mib, memory_free_mib, power_w,
    energy_mj, temperature_c, pod, namespace, container
)
SELECT device.id, at.moment, level.utilization, level.utilization * 800,
       %(fb_free)s - level.utilization * 800, 70 + level.utilization * 6,
       1e10 + device.id * 7919000 + step * %(step_seconds)s * 450000,
       30 + level.utilization / 3, '', '', ''
FROM generate_series(0::bigint, %(steps)s - 1) AS step
CROSS JOIN LATERAL (
    SELECT %(start)s::timestamptz + step * %(step_seconds)s * interval '1 second' AS moment
) AS at
CROSS JOIN telemetry_gpudevice AS device
CROSS JOIN LATERAL (
    SELECT ((device.id * 37) %% 20 * 5 + ((device.id * 2654435761 + step * 40503) %% 21) - 10)
           ::double precision AS raw
) AS noise
CROSS JOIN LATERAL (SELECT greatest(0, least(100, noise.raw)) AS utilization) AS level
ORDER BY step, device.id
"""


def insert_samples(start: datetime, steps: int, step_seconds: int) -> int:
    """Setup, not measured: ``steps`` readings every ``step_seconds`` for every device from
    ``start``, in time order, written by the server (INSERT … SELECT generate_series)."""
    return sql(
        SAMPLES_SQL,
        {
            "start": start,
            "steps": steps,
            "step_seconds": step_seconds,
            "fb_free": FB_TOTAL_MIB - FB_RESERVED_MIB,
        },
    )


def load_history(days: int) -> int:
    """Setup, not measured: ``days`` of 1-minute samples for every device, straight into
    telemetry_gpusample. Its keys and indexes are dropped first and rebuilt after, exactly
    as they were, in the same transaction: 10 M rows then load in ~1.5 min instead of ~5."""
    from django.db import transaction

    sql("TRUNCATE telemetry_gpusample, telemetry_poolhourlyusage")
    start = DAY_START - timedelta(days=days)
    with transaction.atomic():
        constraints = sql(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = 'telemetry_gpusample'::regclass AND contype IN ('p', 'u', 'f')"
        )
        indexes = sql(
            "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index AS i "
            "WHERE indrelid = 'telemetry_gpusample'::regclass AND NOT EXISTS "
            "(SELECT 1 FROM pg_constraint AS c WHERE c.conindid = i.indexrelid)"
        )
        for name, _definition in constraints:
            sql(f'ALTER TABLE telemetry_gpusample DROP CONSTRAINT "{name}"')
        for name, _definition in indexes:
            sql(f"DROP INDEX {name}")
        written = insert_samples(start, days * 24 * 60, 60)
        sql("SET LOCAL maintenance_work_mem = '1GB'")
        for name, definition in constraints:
            sql(f'ALTER TABLE telemetry_gpusample ADD CONSTRAINT "{name}" {definition}')
        for _name, definition in indexes:
            sql(definition)
    return written


def measure_incremental(
    nodes: list[list[Gpu]], history_days: int, repeat: int, full_repeat: int
) -> list[Line]:
    """N days of history, then one new hour imported (CSV); the rollup of the hours that
    import touched (what the Celery task does) against the full rollup of everything."""
    from apps.telemetry.ingest import formats, storage
    from apps.telemetry.rollups import hourly

    log(f"loading {history_days} days of history (server-side INSERT … SELECT)")
    start = time.perf_counter()
    history_rows = load_history(history_days)
    vacuum_analyze()
    log(f"history: {history_rows:,} rows in {time.perf_counter() - start:.0f} s (setup)")

    # The new hour is DAY_START's first hour: right after the history.
    new_hour = csv_text(nodes, range(0, 60))
    columns = formats.parse_column_mapping(CSV_COLUMNS)
    summary = storage.import_gpu_samples(
        formats.parse_gpu_text(new_hour, format="csv", columns=columns)
    )
    new_rows = summary.accepted
    touched = summary.touched_pool_hours
    total_rows = history_rows + new_rows

    full_lines, full_best = measure_full_rollup(total_rows, full_repeat, f"{history_days} d + 1 h")

    by_pool: dict[int, list] = {}
    for pool_id, hour in touched:
        by_pool.setdefault(pool_id, []).append(hour)

    def incremental():
        for pool_id, hours in by_pool.items():
            for range_start, range_end in hourly.hour_ranges(hours):
                hourly.rollup_pool_hours(pool_id, range_start, range_end)

    log("incremental rollup")
    incremental_best = best_of(repeat, lambda: None, incremental)
    ratio = incremental_best / full_best
    return [
        *full_lines,
        Line(
            "rollup: incremental, 1 new hour",
            incremental_best,
            new_rows,
            note=(
                f"the {len(touched)} pool-hours a 1-hour import touched after {history_days} d "
                f"of history, as the drain runs them (rollup_pool_hours a range); best of {repeat}"
            ),
            ratio=ratio,
            ratio_text=f"{ratio:.2%} of full",
            aim="≤ 2% of full",
            passed=ratio <= 0.02,
        ),
    ]


# Beat drains the queued pool-hours every 60 s (settings: "rollup-pending-telemetry").
DRAIN_EVERY_ROUNDS = 60 // SCRAPE_INTERVAL_SECONDS


def measure_sustained(
    writer: DcgmWriter, rounds: int, *, first_scrape: datetime, with_drain: bool
) -> Line:
    """The realistic shape: every node's /metrics (8 GPUs, ~200 lines, no line timestamps)
    scraped every 15 s; per scrape what the pull task does around its HTTP GET (an ImportRun,
    parse, import in one transaction that also queues the touched pool-hour, the run's
    result; apps/telemetry/pull/scrapes.py) and, with ``with_drain``, after every 60 s of scrapes
    the drain beat runs (``rollup_pending``: one rollup per queued pool-hour; run here
    inline, in production on a worker of the same machine). Back to back, on top of the
    history; compared with the rate the fleet needs."""
    from apps.telemetry.ingest import formats, importer, storage
    from apps.telemetry.models import ImportRun
    from apps.telemetry.rollups import hourly

    node_count = len(writer.nodes)
    base_minute = int((first_scrape - DAY_START).total_seconds() // 60)
    texts = [
        (
            first_scrape + timedelta(seconds=SCRAPE_INTERVAL_SECONDS * round_number),
            node_number,
            writer.scrape(node_number, base_minute + round_number // 4, with_timestamps=False),
        )
        for round_number in range(rounds)
        for node_number in range(node_count)
    ]
    sql("TRUNCATE telemetry_pendingrollup")
    gc.collect()
    imported = drains = drained = 0
    start = time.perf_counter()
    for number, (scraped_at, node_number, text) in enumerate(texts, 1):
        run = ImportRun.objects.create(
            kind="gpu",
            format="dcgm",
            source=ImportRun.Source.SCRAPE,
            filename=f"http://{writer.nodes[node_number][0].hostname}:9400/metrics",
            skip_bad_rows=True,
            status=ImportRun.Status.RUNNING,
        )
        result = formats.parse_gpu_text(text, format="dcgm", scraped_at=scraped_at)
        summary = storage.import_gpu_samples(result, skip_bad_rows=True)
        importer.record_import_run(run, summary)
        imported += summary.accepted
        if with_drain and number % (node_count * DRAIN_EVERY_ROUNDS) == 0:
            drained += hourly.rollup_pending()[0]
            drains += 1
    seconds = time.perf_counter() - start
    expected = rounds * sum(len(node) for node in writer.nodes)
    assert imported == expected, (imported, expected)
    assert not with_drain or drained, "the drain rolled nothing up"
    scrapes_per_second = len(texts) / seconds
    needed = node_count / SCRAPE_INTERVAL_SECONDS
    ratio = scrapes_per_second / needed
    needed_samples = expected / rounds / SCRAPE_INTERVAL_SECONDS
    return Line(
        "sustained: + drain of the queued pool-hours every 60 s"
        if with_drain
        else "sustained: 1 scrape (8 GPUs) per transaction",
        seconds,
        len(texts),
        rate_unit="scrapes/s",
        ratio=ratio,
        ratio_text=f"{ratio:.2f}× needed",
        aim="≥ 1× needed",
        passed=ratio >= 1.0,
        note=(
            f"{len(texts):,} scrapes of {node_count} nodes ({rounds} rounds of 15 s) at "
            f"{scrapes_per_second:.1f} scrapes/s = {imported / seconds:,.0f} samples/s; the "
            f"fleet needs {needed:.2f} scrapes/s = {needed_samples:.1f} samples/s"
            + (
                f"; {drains} drain(s) of {drained // max(drains, 1)} pool-hours each "
                "(rollup_pending), measured half-way through an hour already holding 30 min "
                "of 15-s samples of the whole fleet, as a rollup reads the whole pool-hour"
                if with_drain
                else "; per scrape: ImportRun + parse + import queuing the pool-hour + run "
                "result, as pull.py"
            )
        ),
    )


# --------------------------------------------------------------------------- report


def print_table(lines: list[Line], header: str) -> None:
    what_width = max(len(line.what) for line in lines) + 4
    rows = []
    for number, line in enumerate(lines, 1):
        rate = f"{line.rows / line.seconds:,.0f} {line.rate_unit}" if line.rows else ""
        result = "" if line.passed is None else ("PASS" if line.passed else "MISS")
        what = f"{number:>2}. {line.what}"
        rows.append(
            f"{what:<{what_width}}  {line.seconds:>9.3f}  {rate:>19}  {line.ratio_text:>19}  "
            f"{line.aim:<16}  {result}".rstrip()
        )
    title = (
        f"{'what':<{what_width}}  {'seconds':>9}  {'rate':>19}  {'ratio':>19}  {'aim':<16}  result"
    )
    print()
    print(header)
    print()
    print(title)
    print("-" * len(title))
    print("\n".join(rows))
    print()
    for number, line in enumerate(lines, 1):
        if line.note:
            print(f"{number:>2}. {line.note}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=1000, help="fleet size (default 1000)")
    parser.add_argument(
        "--hours", type=int, default=24, help="hours of 1-minute samples (default 24)"
    )
    parser.add_argument(
        "--history-days",
        type=int,
        default=7,
        help="history before the incremental hour (default 7)",
    )
    parser.add_argument(
        "--pools", type=int, default=4, help="pools the nodes are spread over (default 4)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="best of N for the cheap measurements (default 3)"
    )
    parser.add_argument(
        "--import-repeat", type=int, default=1, help="best of N for the CSV import (default 1)"
    )
    parser.add_argument(
        "--history-repeat",
        type=int,
        default=1,
        help="best of N for the full rollup of the history, the slowest step (default 1)",
    )
    parser.add_argument(
        "--chunk-minutes",
        type=int,
        default=60,
        help="minutes of scrapes per dcgm file (default 60)",
    )
    parser.add_argument(
        "--baseline-share",
        type=float,
        default=0.02,
        help="share of the dcgm scrapes prometheus_client parses for its rate (default 0.02)",
    )
    parser.add_argument(
        "--scrape-rounds",
        type=int,
        default=8,
        help="15 s rounds of the whole fleet for the sustained rate (default 8)",
    )
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    )
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated parts to skip: csv,dcgm,rollup,incremental,sustained",
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    began = time.perf_counter()
    prepare_database(args.database_url)
    setup_django(args.database_url)
    from importlib.metadata import version

    from django.db import connection

    reset_telemetry()
    nodes = build_fleet(args.gpus, args.pools)
    pools = create_pools(args.pools, math.ceil(args.gpus / args.pools))
    minutes = range(0, args.hours * 60)
    samples = args.gpus * len(minutes)
    log(f"{args.gpus} GPUs in {len(nodes)} nodes and {len(pools)} pools, {samples:,} samples")

    lines: list[Line] = []
    if "csv" not in skip:
        start = time.perf_counter()
        text = csv_text(nodes, minutes)
        log(f"CSV: {len(text) / 1e6:.0f} MB generated in {time.perf_counter() - start:.0f} s")
        lines += measure_csv(text, samples, args.repeat, args.import_repeat)
        del text
    writer = DcgmWriter(nodes)
    if "dcgm" not in skip:
        lines += measure_dcgm(writer, minutes, args.chunk_minutes, samples, args.baseline_share)
    elif "csv" in skip:
        # The rollups need the day in the table.
        from apps.telemetry.ingest import formats, storage

        storage.import_gpu_samples(
            formats.parse_gpu_text(
                csv_text(nodes, minutes),
                format="csv",
                columns=formats.parse_column_mapping(CSV_COLUMNS),
            )
        )
    if "rollup" not in skip:
        vacuum_analyze()
        day_lines, _ = measure_full_rollup(samples, args.repeat, f"{args.hours} h")
        lines += day_lines
    if "incremental" not in skip:
        lines += measure_incremental(nodes, args.history_days, args.repeat, args.history_repeat)
    if "sustained" not in skip:
        log("sustained scrapes")
        lines.append(
            measure_sustained(
                writer,
                args.scrape_rounds,
                first_scrape=DAY_START + timedelta(hours=1),
                with_drain=False,
            )
        )
        # Half an hour of the fleet's 15-s samples already in the hour, then the scrapes.
        insert_samples(DAY_START + timedelta(hours=2), 30 * 60 // SCRAPE_INTERVAL_SECONDS, 15)
        sql("ANALYZE telemetry_gpusample")
        lines.append(
            measure_sustained(
                writer,
                max(DRAIN_EVERY_ROUNDS, args.scrape_rounds // 2),
                first_scrape=DAY_START + timedelta(hours=2, minutes=30),
                with_drain=True,
            )
        )

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server_version = cursor.fetchone()[0]
    header = (
        f"gpufleet telemetry benchmark, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} CPUs, total run {time.perf_counter() - began:.0f} s\n"
        f"{args.gpus} GPUs ({len(nodes)} nodes of 8, {len(pools)} pools) × {args.hours} h × "
        f"1 min = {samples:,} samples; incremental after {args.history_days} d of history\n"
        f"PostgreSQL {server_version.split()[0]}, Python {platform.python_version()}, "
        f"psycopg {version('psycopg')}, prometheus_client {version('prometheus_client')}"
    )
    print_table(lines, header)
    return 0 if all(line.passed is not False for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
