"""Storing parsed telemetry: register devices, store samples and requests once, count
what happened (``ImportSummary``).

Writes are atomic: a file with bad rows is rejected whole unless ``skip_bad_rows`` is
set, in which case the good rows are kept and every rejected line is reported. A file is
read, parsed and stored a chunk of lines at a time (formats.IMPORT_CHUNK_ROWS) inside one
transaction, so memory holds one chunk's rows. Each chunk goes through ``COPY`` into a
temporary staging table and ``INSERT … ON CONFLICT DO NOTHING`` (psycopg 3). A sample is
unique per (device, timestamp), so a second import of the same file adds nothing and
reports every row as a duplicate.
"""

import logging
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from apps.accounts.scope import EVERYTHING
from apps.core.sentences import Sentence, as_sentence, gettext_noop, sentence
from apps.pools.models import Pool
from apps.telemetry.ingest.checks import (
    GPU_ROW_TEXT_COLUMNS,
    REQUEST_ROW_TEXT_COLUMNS,
    ClockSkewCount,
    OutsideServiceCount,
    hour_of,
    refuse_final_hours,
    without_unstorable_rows,
)
from apps.telemetry.ingest.device_registry import DeviceRegistry
from apps.telemetry.ingest.parsers.rows import GpuSampleRow, ParseResult, RowError
from apps.telemetry.models import (
    GpuDevice,
)
from apps.telemetry.rollups.hourly import queue_pool_hours, queue_workload_hours
from apps.telemetry.rollups.retention import (
    request_partitions_if_needed,
)

logger = logging.getLogger(__name__)

ERRORS_KEPT = 50  # rejected lines stored on the import run (the count is always exact)
SAMPLE_COLUMNS = (
    "device_id",
    "timestamp",
    "utilization_pct",
    "memory_used_mib",
    "memory_free_mib",
    "power_w",
    "energy_mj",
    "temperature_c",
    "pod",
    "namespace",
    "container",
)
REQUEST_COLUMNS = (
    "workload_id",
    "timestamp",
    "input_tokens",
    "output_tokens",
    "latency_ms",
    "status",
    "count",
)


@dataclass
class ImportSummary:
    rows_total: int = 0
    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0
    errors: list[RowError] = field(default_factory=list)
    new_devices: int = 0
    unassigned_devices: int = 0
    # (pool id, hour) pairs whose rollups must be recomputed
    touched_pool_hours: set = field(default_factory=set)
    touched_workload_hours: set = field(default_factory=set)
    rejected_whole: bool = False
    # What was kept but needs a look (samples outside a service period, clock skew):
    # Sentences, said again in each reader's language (``ImportRun.warnings_in_language``).
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return "".join(self.message_parts())

    def message_parts(self) -> list[Sentence]:
        """The run's message, as sentence parts read one after the other (stored with
        the run, said again in each reader's language)."""
        if self.rejected_whole:
            parts = [
                sentence(
                    gettext_noop(
                        "Rejected: %(count)s bad row(s), nothing imported. First errors: "
                    ),
                    count=self.rejected,
                )
            ]
            for index, error in enumerate(self.errors[:5]):
                if index:
                    parts.append(sentence("; "))
                parts.append(as_sentence(error.message))
            parts.append(
                sentence(
                    gettext_noop(
                        ". Fix the file, or import with --skip-bad-rows to keep the good rows."
                    )
                )
            )
            return parts
        parts = [
            sentence(
                gettext_noop(
                    "%(accepted)s rows accepted, %(duplicates)s duplicates skipped, "
                    "%(rejected)s rows rejected"
                ),
                accepted=self.accepted,
                duplicates=self.duplicates,
                rejected=self.rejected,
            )
        ]
        if self.new_devices:
            parts.append(
                sentence(gettext_noop("; %(count)s new GPU(s) registered"), count=self.new_devices)
            )
        if self.unassigned_devices:
            parts.append(
                sentence(
                    gettext_noop(", %(count)s waiting for a pool on the unassigned-GPUs page"),
                    count=self.unassigned_devices,
                )
            )
        return [*parts, sentence(gettext_noop("."))]


def _sample_values(rows: list[GpuSampleRow], devices: dict, touched_instants: set):
    """The rows as tuples in SAMPLE_COLUMNS order, lazily (straight into COPY), adding
    (pool id, instant) to ``touched_instants`` for rows of devices in a pool.

    Per row this is two dict lookups by int and an identity check: devices are cached per
    DeviceKey object, and each pool's last instant is remembered (the dcgm and CSV parsers
    share one datetime object among an instant's rows), so mostly only a new instant of a
    pool reaches the set; the caller turns the few instants into hours. A key,
    ``hour_of()`` and a set insertion per row would cost several times the tuple itself.
    """
    # Keyed by the DeviceKey object's identity (an int hash) rather than by the frozen
    # dataclass (a Python-level __hash__ per row): the rows keep their DeviceKeys alive, so
    # no id is reused meanwhile, and an equal but distinct DeviceKey merely misses.
    by_identity: dict[int, tuple[int, int | None]] = {}
    last_instant_of_pool: dict[int, datetime] = {}
    for row in rows:
        device_key = row.device
        found = by_identity.get(id(device_key))
        if found is None:
            device = devices[GpuDevice.key_for(device_key.uuid, device_key.gpu_instance_id)]
            found = by_identity[id(device_key)] = (device.pk, device.pool_id)
        device_id, pool_id = found
        timestamp = row.timestamp
        if pool_id is not None and last_instant_of_pool.get(pool_id) is not timestamp:
            last_instant_of_pool[pool_id] = timestamp
            touched_instants.add((pool_id, timestamp))
        yield (
            device_id,
            timestamp,
            row.utilization_pct,
            row.memory_used_mib,
            row.memory_free_mib,
            row.power_w,
            row.energy_mj,
            row.temperature_c,
            row.pod,
            row.namespace,
            row.container,
        )


def _insert_ignoring_duplicates(
    table: str, columns: tuple[str, ...], column_types: tuple[str, ...], values
) -> int:
    """Insert rows, skipping those whose key already exists; returns rows inserted.

    Binary ``COPY`` into a temporary staging table, emptied first, then one
    ``INSERT … SELECT … ON CONFLICT DO NOTHING``; an import calls this once per chunk.
    Binary COPY with the column types declared sends floats and timestamps as they are
    rather than as text for the server to parse back, and a chunk takes the same time
    however large the table has grown.
    """
    statement = _stage_rows(table, columns, column_types, values)
    with connection.cursor() as cursor:
        cursor.execute(statement)
        return cursor.rowcount


class _ChunkInserts:
    """The chunks of one GPU import inserted (``_insert_ignoring_duplicates``); with
    ``background``, each chunk's ``INSERT … ON CONFLICT`` runs in a thread
    while the caller parses the next chunk.

    The server's insert into the keyed table and the parse in Python take about as long
    as each other (bench/telemetry.py, lines 2–3) and use different cores: run one after
    the other they add up, overlapped the import takes about the longer of the two. The
    thread uses the same connection, so the same transaction: psycopg 3 connections
    serialize their queries under a lock, and the next chunk is staged only once the
    previous insert has returned. ``stage(values)`` copies a chunk to the server,
    ``start()`` then inserts it, in the background: between the two the caller does what
    else the chunk asks of the database, since a query made while the INSERT runs waits
    for it. ``finish()`` returns the rows inserted; ``close()`` waits for an insert still
    running, so none outlives the import (or its rollback).
    """

    def __init__(self, *, background: bool):
        self.background = background
        self.inserted = 0
        self._executor: ThreadPoolExecutor | None = None
        self._running: Future | None = None
        self._staged: str | None = None

    def stage(self, values) -> None:
        if not self.background:
            self.inserted += _insert_ignoring_duplicates(
                "telemetry_gpusample", SAMPLE_COLUMNS, SAMPLE_COLUMN_TYPES, values
            )
            return
        self._wait()
        self._staged = _stage_rows(
            "telemetry_gpusample", SAMPLE_COLUMNS, SAMPLE_COLUMN_TYPES, values
        )

    def start(self) -> None:
        statement, self._staged = self._staged, None
        if statement is None:
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpu-insert")
        raw_connection = connection.connection  # psycopg 3, thread-safe

        def run_insert() -> int:
            with raw_connection.cursor() as cursor:
                cursor.execute(statement)
                return cursor.rowcount

        self._running = self._executor.submit(run_insert)

    def _wait(self) -> None:
        if self._running is not None:
            running, self._running = self._running, None
            self.inserted += running.result()

    def finish(self) -> int:
        self._wait()
        return self.inserted

    def close(self) -> None:
        if self._running is not None:
            wait([self._running])
            self._running = None
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


def _stage_rows(table: str, columns, column_types, values) -> str:
    """The rows binary-COPYed into ``table``'s temporary staging table, emptied
    first; returns the ``INSERT … SELECT … ON CONFLICT DO NOTHING`` that moves them on."""
    staging = f"{table}_staging"
    column_list = ", ".join(f'"{name}"' for name in columns)
    staging_columns = ", ".join(
        f'"{name}" {sql_type}' for name, sql_type in zip(columns, column_types, strict=True)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {staging} ({staging_columns}) ON COMMIT DROP"
        )
        cursor.execute(f"TRUNCATE {staging}")
        raw = cursor.cursor  # psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY {staging} ({column_list}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(column_types)
            for value in values:
                copy.write_row(value)
    return (
        f"INSERT INTO {table} ({column_list}) SELECT {column_list} FROM {staging} "  # noqa: S608 - names are module constants
        "ON CONFLICT DO NOTHING"
    )


# PostgreSQL types of SAMPLE_COLUMNS and REQUEST_COLUMNS, for the staging table and COPY.
SAMPLE_COLUMN_TYPES = ("int8", "timestamptz", *("float8",) * 6, *("text",) * 3)
REQUEST_COLUMN_TYPES = ("int8", "timestamptz", "int4", "int4", "float8", "text", "int4")


def _chunks(result) -> Iterable[ParseResult]:
    return (result,) if isinstance(result, ParseResult) else result


class _Tally:
    """Rows and errors counted over the chunks of one import; the first ERRORS_KEPT
    errors kept in line order (chunks come in line order, each sorted)."""

    def __init__(self):
        self.rows_total = 0
        self.stored = 0  # rows handed to the database, duplicates included
        self.rejected = 0
        self.errors: list[RowError] = []

    def add_errors(self, errors: list[RowError]) -> None:
        self.rejected += len(errors)
        room = ERRORS_KEPT - len(self.errors)
        if room > 0:
            self.errors.extend(errors[:room])

    def summary(self, **fields) -> ImportSummary:
        if fields.get("rejected_whole"):
            return ImportSummary(
                rows_total=self.rows_total,
                rejected=self.rejected,
                errors=self.errors,
                rejected_whole=True,
            )
        accepted = fields.pop("accepted")
        return ImportSummary(
            rows_total=self.rows_total,
            accepted=accepted,
            duplicates=self.stored - accepted,
            rejected=self.rejected,
            errors=self.errors,
            **fields,
        )


@transaction.atomic
def import_gpu_samples(
    result,
    *,
    pool=None,
    skip_bad_rows=False,
    received_at: datetime | None = None,
    after_chunk=None,
    scope=EVERYTHING,
    cluster_id: int | None = None,
) -> ImportSummary:
    """Store the parsed rows once each; the summary names the pool-hours they touched.

    ``result`` is a ParseResult or the ParseResults of a parser's ``iter_*`` stream:
    chunk by chunk the devices are registered and the rows staged and inserted, all in
    this one transaction, so memory holds one chunk and the import still lands whole or
    not at all. A file with a bad row and no ``skip_bad_rows`` is read to its end, for
    the counts, and rolled back. ``after_chunk()`` is called after each chunk (progress).

    Rows are kept whatever their pool's service period, and the summary's ``warnings``
    count those outside it (reports do not charge them). Rows dated more than
    CLOCK_SKEW_TOLERANCE after ``received_at`` (default now: when the text arrived) flag
    their pool-hours as clock skew and are counted in the warnings too.

    The pool-hours the rows touched are queued for the rollup drain (PendingRollup) in
    this same transaction, so a committed sample always has its hour queued; the caller
    decides when the drain runs (``rollups.request_drain``).

    ``scope`` is what the import's starter could see when they started it: the rows of
    GPUs in pools outside it are refused, each with its line (``DeviceRegistry``).
    """
    # A stream of chunks (a file) overlaps each chunk's INSERT with the parse of the next.
    inserts = _ChunkInserts(background=not isinstance(result, ParseResult))
    try:
        return _import_gpu_chunks(
            result,
            inserts,
            pool=pool,
            skip_bad_rows=skip_bad_rows,
            received_at=received_at,
            after_chunk=after_chunk,
            scope=scope,
            cluster_id=cluster_id,
        )
    finally:
        inserts.close()


def _import_gpu_chunks(
    result, inserts, *, pool, skip_bad_rows, received_at, after_chunk, scope, cluster_id=None
):
    tally = _Tally()
    registry = DeviceRegistry(pool=pool, scope=scope, cluster_id=cluster_id)
    touched: set[tuple[int, datetime]] = set()  # (pool id, hour)
    outside_service = OutsideServiceCount()
    clock_skew = ClockSkewCount(received_at or timezone.now())
    for chunk in _chunks(result):
        chunk = without_unstorable_rows(chunk, GPU_ROW_TEXT_COLUMNS)
        tally.rows_total += len(chunk.rows) + len(chunk.errors)
        tally.add_errors(chunk.errors)
        if tally.rejected and not skip_bad_rows:
            continue  # the file is refused: read on only to count its rows and errors
        chunk_devices = registry.register(chunk.rows)
        kept, refused = registry.refuse_out_of_scope(chunk.rows, chunk_devices)
        if refused:
            tally.add_errors(refused)
            if not skip_bad_rows:
                continue
        kept, refused = refuse_final_hours(kept, chunk_devices)
        if refused:
            tally.add_errors(refused)
            if not skip_bad_rows:
                continue
        chunk_instants: set[tuple[int, datetime]] = set()
        inserts.stage(_sample_values(kept, chunk_devices, chunk_instants))
        tally.stored += len(kept)
        outside_service.add(kept, chunk_devices, chunk_instants)
        clock_skew.add(kept, chunk_devices, chunk_instants)
        # Kept by the hour: a file of distinct instants would otherwise keep them all.
        hours: dict[datetime, datetime] = {}
        for pool_id, instant in chunk_instants:
            hour = hours.get(instant)
            if hour is None:
                hour = hours[instant] = hour_of(instant)
            touched.add((pool_id, hour))
        if after_chunk is not None:
            after_chunk()
        # Last: whatever the chunk still asks of the database above runs before its INSERT
        # holds the connection.
        inserts.start()
    accepted = inserts.finish()
    if tally.rejected and not skip_bad_rows:
        transaction.set_rollback(True)  # the devices and samples stored above are not kept
        return tally.summary(rejected_whole=True)
    registry.save()
    if touched:
        queue_pool_hours(touched)
    if accepted:
        # Rows of a day without a partition are stored in the DEFAULT one; their day's
        # partition is made after the commit (apps/telemetry/rollups/partitions.py).
        request_partitions_if_needed()
    return tally.summary(
        accepted=accepted,
        new_devices=registry.new_count,
        unassigned_devices=sum(1 for device in registry.devices.values() if device.pool_id is None),
        touched_pool_hours=touched,
        warnings=outside_service.sentences() + clock_skew.flag(),
    )


@dataclass
class BatchedImport:
    """One import of a batch (``import_gpu_batch``): a scrape's parsed rows, the pool its
    new GPUs join and when its text arrived."""

    result: ParseResult
    pool: Pool | None = None
    received_at: datetime | None = None
    # The cluster of the scrape's source: its new GPUs follow that cluster's hostname rules.
    cluster_id: int | None = None


@transaction.atomic
def import_gpu_batch(imports: list[BatchedImport], *, scope=EVERYTHING) -> list[ImportSummary]:
    """Store several small imports (the scrapes of a pull batch) in one transaction, with
    one device lookup, one binary ``COPY`` and one ``INSERT … ON CONFLICT`` for them all;
    returns one summary per import, in order.

    Each import is still accounted on its own, as ``import_gpu_samples`` with
    ``skip_bad_rows`` accounts it: its rows accepted and duplicated (a row that two
    imports of the batch share counts for the first), its rejected rows by line, its new
    GPUs, its warnings (service period, clock skew against its own ``received_at``). The
    pool-hours of all of them are queued once. One transaction per batch, not per scrape,
    is what a fleet scraped every 15 s needs: a scrape of one 8-GPU node is ~200 lines but
    its own transaction costs a dozen statements and a commit (bench/scale_scrape.py:
    6–8× the scrapes per second of one transaction per scrape).

    ``scope``: what the imports' sources may write (``PullSource.pull_scope``); the rows
    of GPUs in pools outside it are refused, by line, as an upload's are.
    """
    registry = DeviceRegistry(scope=scope)
    registry.preload(
        GpuDevice.key_for(row.device.uuid, row.device.gpu_instance_id)
        for item in imports
        for row in item.result.rows
    )
    pools: dict[int, Pool] = {}
    bounds: dict[int, tuple] = {}
    staged = []  # per import: (tally, devices, rows' tuples, outside count, skew count, hours)
    touched: set[tuple[int, datetime]] = set()
    for item in imports:
        tally = _Tally()
        chunk = without_unstorable_rows(item.result, GPU_ROW_TEXT_COLUMNS)
        tally.rows_total = len(chunk.rows) + len(chunk.errors)
        tally.add_errors(chunk.errors)
        new_before = registry.new_count
        devices = registry.register(chunk.rows, pool=item.pool, cluster_id=item.cluster_id)
        kept, refused = registry.refuse_out_of_scope(chunk.rows, devices)
        tally.add_errors(refused)
        kept, refused = refuse_final_hours(kept, devices)
        tally.add_errors(refused)
        instants: set[tuple[int, datetime]] = set()
        values = list(_sample_values(kept, devices, instants))
        tally.stored = len(kept)
        outside = OutsideServiceCount(pools=pools, bounds=bounds)
        outside.add(kept, devices, instants)
        skew = ClockSkewCount(item.received_at or timezone.now())
        skew.add(kept, devices, instants)
        hours = {(pool_id, hour_of(instant)) for pool_id, instant in instants}
        touched |= hours
        staged.append(
            (tally, devices, values, outside, skew, hours, registry.new_count - new_before)
        )
    accepted = _insert_batch_ignoring_duplicates([values for _t, _d, values, *_rest in staged])
    registry.save()
    if touched:
        queue_pool_hours(touched)
    if any(accepted):
        # As import_gpu_samples: a day without its partition yet gets one after the commit.
        request_partitions_if_needed()
    summaries = []
    for (tally, devices, _values, outside, skew, hours, new_devices), rows_accepted in zip(
        staged, accepted, strict=True
    ):
        summaries.append(
            tally.summary(
                accepted=rows_accepted,
                new_devices=new_devices,
                unassigned_devices=sum(1 for device in devices.values() if device.pool_id is None),
                touched_pool_hours=hours,
                warnings=outside.sentences() + skew.flag(),
            )
        )
    return summaries


def _insert_batch_ignoring_duplicates(parts: list[list[tuple]]) -> list[int]:
    """Insert the sample tuples of several imports at once, skipping keys already stored;
    returns the rows each import inserted.

    One binary ``COPY`` stages every import's rows with its position in the batch, and one
    ``INSERT … ON CONFLICT DO NOTHING … RETURNING`` the keys inserted, so the rows inserted
    are counted per import by joining those keys back to the staging rows (a key staged by
    two imports counts for the first).
    """
    inserted = [0] * len(parts)
    if not any(parts):
        return inserted
    staging = "telemetry_gpusample_batch_staging"
    column_list = ", ".join(f'"{name}"' for name in SAMPLE_COLUMNS)
    staging_columns = ", ".join(
        f'"{name}" {sql_type}'
        for name, sql_type in zip(SAMPLE_COLUMNS, SAMPLE_COLUMN_TYPES, strict=True)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {staging} (part int4, {staging_columns}) "
            "ON COMMIT DROP"
        )
        cursor.execute(f"TRUNCATE {staging}")
        raw = cursor.cursor  # psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY {staging} (part, {column_list}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(("int4", *SAMPLE_COLUMN_TYPES))
            write_row = copy.write_row
            for part, values in enumerate(parts):
                for value in values:
                    write_row((part, *value))
        cursor.execute(
            f"""
            WITH inserted AS (
                INSERT INTO telemetry_gpusample ({column_list})
                SELECT {column_list} FROM {staging}
                ON CONFLICT DO NOTHING
                RETURNING device_id, "timestamp"
            )
            SELECT part, COUNT(*) FROM (
                SELECT MIN(staged.part) AS part
                FROM inserted JOIN {staging} AS staged USING (device_id, "timestamp")
                GROUP BY device_id, "timestamp"
            ) AS firsts
            GROUP BY part
            """  # noqa: S608 - names are module constants
        )
        for part, count in cursor.fetchall():
            inserted[part] = count
    return inserted


@transaction.atomic
def import_requests(result, *, workload, skip_bad_rows=False, after_chunk=None) -> ImportSummary:
    """Store the parsed request rows of ``workload`` once each, chunk by chunk in one
    transaction, and queue the workload-hours they touched, as ``import_gpu_samples``
    does."""
    tally = _Tally()
    accepted = 0
    touched = set()
    for chunk in _chunks(result):
        chunk = without_unstorable_rows(chunk, REQUEST_ROW_TEXT_COLUMNS)
        tally.rows_total += len(chunk.rows) + len(chunk.errors)
        tally.add_errors(chunk.errors)
        if tally.rejected and not skip_bad_rows:
            continue
        accepted += _insert_ignoring_duplicates(
            "telemetry_requestsample",
            REQUEST_COLUMNS,
            REQUEST_COLUMN_TYPES,
            (
                (
                    workload.pk,
                    row.timestamp,
                    row.input_tokens,
                    row.output_tokens,
                    row.latency_ms,
                    row.status,
                    row.count,
                )
                for row in chunk.rows
            ),
        )
        tally.stored += len(chunk.rows)
        touched |= {(workload.pk, hour_of(row.timestamp)) for row in chunk.rows}
        if after_chunk is not None:
            after_chunk()
    if tally.rejected and not skip_bad_rows:
        transaction.set_rollback(True)
        return tally.summary(rejected_whole=True)
    if touched:
        queue_workload_hours(touched)
    return tally.summary(accepted=accepted, touched_workload_hours=touched)
