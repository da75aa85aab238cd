"""Importing parsed telemetry: register devices, store samples once, say what happened.

Writes are atomic: a file with bad rows is rejected whole unless ``skip_bad_rows`` is
set, in which case the good rows are kept and every rejected line is reported. A file is
read, parsed and stored a chunk of lines at a time (IMPORT_CHUNK_ROWS) inside one
transaction, so memory holds one chunk's rows. Each chunk goes through ``COPY`` into a
temporary staging table and ``INSERT … ON CONFLICT DO NOTHING`` (psycopg 3). A sample is
unique per (device, timestamp), so a second import of the same file adds nothing and
reports every row as a duplicate.
"""

import fnmatch
import hashlib
import logging
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext

from apps.accounts.scope import EVERYTHING
from apps.core import runs
from apps.core.outbox import enqueue
from apps.core.sentences import Sentence, as_sentence, gettext_noop, sentence, to_data
from apps.pools.models import Pool
from apps.pools.querysets import pool_scope_filter
from apps.telemetry import parsers
from apps.telemetry.mig import compute_slices_of_profile
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    HostnameRule,
    ImportRun,
    PoolHourFlag,
    PoolHourlyUsage,
    RequestSample,
)
from apps.telemetry.parsers import NUL_SENTENCE, FileLines, TelemetryFormatError, paused_gc
from apps.telemetry.parsers._common import merge_chunks
from apps.telemetry.parsers.rows import GpuSampleRow, ParseResult, RowError, line_error, on_line
from apps.telemetry.retention import (
    raw_retention_horizon,
    request_partitions_if_needed,
    samples_held_q,
)
from apps.telemetry.rollups import queue_pool_hours, queue_workload_hours, request_drain

logger = logging.getLogger(__name__)

ERRORS_KEPT = 50  # rejected lines stored on the import run (the count is always exact)
# Lines parsed, staged and inserted at a time by an import: memory holds one chunk's rows.
IMPORT_CHUNK_ROWS = 50_000
# A sample dated further ahead of its arrival than this comes from a node whose clock runs
# fast: kept (within the parsers' 1-day allowance), but its pool-hour is flagged.
CLOCK_SKEW_TOLERANCE = timedelta(minutes=5)
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


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _match_rule(hostname: str, rules) -> object | None:
    for rule in rules:
        if hostname and fnmatch.fnmatchcase(hostname, rule.hostname_pattern):
            return rule.pool
    return None


class DeviceRegistry:
    """The GpuDevices of one import's rows, registered chunk by chunk: ``register(rows)``
    maps each row's device to its GpuDevice, creating unknown ones at once (their samples
    reference them); ``save()`` writes what the import learnt about the known ones in one
    statement at the end.

    New devices join ``pool`` when the import names one, else the first matching hostname
    rule's pool, else they wait unassigned: never dropped. What a GPU reports about itself
    (hostname, model, driver, MIG profile) comes from its latest sample in the import.

    An import works on what its starter could see (``scope``, apps/accounts/scope.py):
    only the hostname rules of their pools place new GPUs, and a GPU already in a pool
    outside it is left as it is (``out_of_scope``), its rows refused by the caller.
    """

    def __init__(self, *, pool=None, scope=EVERYTHING):
        self.pool = pool
        self.scope = scope
        # None: every pool is in scope (the fleet-wide, pulls, the command line).
        self._pool_ids_in_scope = (
            None
            if scope.everything
            else set(Pool.objects.in_scope(scope).values_list("pk", flat=True))
        )
        self.devices: dict[str, GpuDevice] = {}
        self.new_count = 0
        self._rules = None
        self._latest_at: dict[str, datetime] = {}  # of the sample each device's fields came from
        self._changed: dict[str, GpuDevice] = {}
        # Stored devices looked up ahead of ``register`` (``preload``), and every key
        # looked up so, found or not.
        self._preloaded: dict[str, GpuDevice] = {}
        self._looked_up: set[str] = set()

    def preload(self, keys) -> None:
        """Look the stored devices of ``keys`` up in one query, ahead of the ``register``
        calls that need them: a batch of scrapes then costs one lookup, not one per
        scrape."""
        wanted = [
            key for key in set(keys) if key not in self.devices and key not in self._looked_up
        ]
        if not wanted:
            return
        self._preloaded.update(
            (device.key, device) for device in GpuDevice.objects.filter(key__in=wanted)
        )
        self._looked_up.update(wanted)

    def register(self, rows: list[GpuSampleRow], *, pool=None) -> dict[str, GpuDevice]:
        """``pool``: the pool of these rows' import when it differs from the registry's
        (one batch holds the scrapes of sources of several pools)."""
        pool = pool if pool is not None else self.pool
        # First per DeviceKey object (an int hash; the parsers share one per device), as
        # in ``_sample_values``, then per device key: a row's own key is built once per
        # DeviceKey, not once per row.
        spans: dict[int, list] = {}  # id(DeviceKey) → [latest row, first timestamp]
        for row in rows:
            span = spans.get(id(row.device))
            if span is None:
                spans[id(row.device)] = [row, row.timestamp]
                continue
            timestamp = row.timestamp
            if timestamp >= span[0].timestamp:
                span[0] = row
            if timestamp < span[1]:
                span[1] = timestamp
        latest: dict[str, GpuSampleRow] = {}
        first_seen: dict[str, datetime] = {}
        for row, first in spans.values():
            key = GpuDevice.key_for(row.device.uuid, row.device.gpu_instance_id)
            if key not in latest or row.timestamp >= latest[key].timestamp:
                latest[key] = row
            if key not in first_seen or first < first_seen[key]:
                first_seen[key] = first
        unknown = [key for key in latest if key not in self.devices]
        created = self._add(unknown, latest, first_seen, pool) if unknown else set()
        for key, row in latest.items():
            if key in created:
                continue  # created from these very rows
            device = self.devices[key]
            if self.out_of_scope(device):
                continue  # another team's GPU: nothing of it is written
            device.last_seen_at = max(device.last_seen_at, row.timestamp)
            device.first_seen_at = min(device.first_seen_at, first_seen[key])
            if row.timestamp >= self._latest_at[key]:
                self._latest_at[key] = row.timestamp
                _describe_device(device, row)
            self._changed[key] = device
        return {key: self.devices[key] for key in latest}

    def out_of_scope(self, device: GpuDevice) -> bool:
        """``device`` is in a pool outside the import's scope."""
        return (
            self._pool_ids_in_scope is not None
            and device.pool_id is not None
            and device.pool_id not in self._pool_ids_in_scope
        )

    def refuse_out_of_scope(self, rows, devices) -> tuple[list, list[RowError]]:
        """(rows kept, one error per refused row): the rows of GPUs in a pool outside the
        import's scope are not stored; the error names the GPU as the file does."""
        if self._pool_ids_in_scope is None:
            return rows, []
        refused_keys = {key for key, device in devices.items() if self.out_of_scope(device)}
        if not refused_keys:
            return rows, []
        kept, errors = [], []
        for row in rows:
            key = GpuDevice.key_for(row.device.uuid, row.device.gpu_instance_id)
            if key not in refused_keys:
                kept.append(row)
                continue
            errors.append(
                line_error(
                    row.line_number,
                    sentence(
                        gettext_noop(
                            "GPU %(device)s is in a pool outside your teams: its samples are "
                            "not stored"
                        ),
                        device=key,
                    ),
                )
            )
        return kept, errors

    def _add(self, keys, latest, first_seen, pool) -> set[str]:
        """Look the devices of ``keys`` up, creating the unknown ones; returns the keys
        created."""
        existing = {key: self._preloaded.pop(key) for key in keys if key in self._preloaded}
        to_query = [key for key in keys if key not in self._looked_up]
        if to_query:
            existing.update(
                (device.key, device) for device in GpuDevice.objects.filter(key__in=to_query)
            )
        new_devices = []
        for key in keys:
            row = latest[key]
            device = existing.get(key)
            if device is None:
                if self._rules is None:
                    self._rules = list(
                        HostnameRule.objects.filter(
                            pool_scope_filter(self.scope, "pool__")
                        ).select_related("pool")
                    )
                assigned_pool = pool or _match_rule(row.hostname, self._rules)
                assignment = (
                    GpuDevice.Assignment.IMPORT
                    if pool
                    else GpuDevice.Assignment.RULE
                    if assigned_pool
                    else GpuDevice.Assignment.UNASSIGNED
                )
                device = GpuDevice(
                    key=key,
                    uuid=row.device.uuid,
                    gpu_instance_id=row.device.gpu_instance_id,
                    first_seen_at=first_seen[key],
                    last_seen_at=row.timestamp,
                    pool=assigned_pool,
                    assignment=assignment,
                )
                _describe_device(device, row)
                new_devices.append(device)
                self._latest_at[key] = row.timestamp
            elif not self.out_of_scope(device):
                if pool is not None and device.pool_id is None:
                    device.pool, device.assignment = pool, GpuDevice.Assignment.IMPORT
                # Its stored fields predate the import: any row of it describes it better.
                self._latest_at[key] = datetime.min.replace(tzinfo=UTC)
            self.devices[key] = device
        GpuDevice.objects.bulk_create(new_devices)
        self.new_count += len(new_devices)
        return {device.key for device in new_devices}

    def save(self) -> None:
        if self._changed:
            _refresh_devices(list(self._changed.values()))


def _describe_device(device: GpuDevice, row: GpuSampleRow) -> None:
    """What the GPU reports about itself, from ``row``."""
    device.hostname = row.hostname or device.hostname
    device.gpu_index = row.gpu_index if row.gpu_index is not None else device.gpu_index
    device.model_name = row.model_name or device.model_name
    device.driver_version = row.driver_version or device.driver_version
    device.mig_profile = row.mig_profile or device.mig_profile
    device.mig_compute_slices = compute_slices_of_profile(device.mig_profile)
    device.mig_mode_enabled = row.mig_mode_enabled


# The device fields an import refreshes, with their PostgreSQL types for unnest().
_REFRESHED_DEVICE_FIELDS = (
    ("pool_id", "bigint"),
    ("assignment", "text"),
    ("last_seen_at", "timestamptz"),
    ("first_seen_at", "timestamptz"),
    ("hostname", "text"),
    ("gpu_index", "integer"),
    ("model_name", "text"),
    ("driver_version", "text"),
    ("mig_profile", "text"),
    ("mig_compute_slices", "smallint"),
    ("mig_mode_enabled", "boolean"),
)


def _refresh_devices(devices: list[GpuDevice]) -> None:
    """Write the refreshed fields of known devices in one statement.

    ``bulk_update()`` builds one ``CASE WHEN id = … THEN …`` per field and device: for the
    1,000 devices of a fleet file Django spends ~3 s composing it, and ~35 ms for the 8 of
    one scrape (bench/telemetry.py); ``UPDATE … FROM unnest(arrays)`` takes milliseconds.
    """
    names = [name for name, _type in _REFRESHED_DEVICE_FIELDS]
    assignments = ", ".join(f"{name} = refreshed.{name}" for name in names)
    arrays = ", ".join(f"%s::{sql_type}[]" for _name, sql_type in _REFRESHED_DEVICE_FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE telemetry_gpudevice AS device SET {assignments} "  # noqa: S608 - constants
            f"FROM unnest(%s::bigint[], {arrays}) AS refreshed(id, {', '.join(names)}) "
            "WHERE device.id = refreshed.id",
            [
                [device.pk for device in devices],
                *([getattr(device, name) for device in devices] for name in names),
            ],
        )


def _sample_values(rows: list[GpuSampleRow], devices: dict, touched_instants: set):
    """The rows as tuples in SAMPLE_COLUMNS order, lazily (straight into COPY), adding
    (pool id, instant) to ``touched_instants`` for rows of devices in a pool.

    Per row this is two dict lookups by int and an identity check: devices are cached per
    DeviceKey object, and each pool's last instant is remembered (the dcgm and CSV parsers
    share one datetime object among an instant's rows), so mostly only a new instant of a
    pool reaches the set; the caller turns the few instants into hours. The tuples and the
    touched pool-hours cost about 0.5 µs a row together, against about 3 µs with a key,
    ``hour_of()`` and a set insertion per row (an hour of the bench fleet, 60,000 rows;
    bench/README.md, finding 2).
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
    rather than as text for the server to parse back: about 20 µs a row to store 4 hours
    of the bench fleet (240,000 rows), against about 32 µs as text (bench/README.md,
    finding 2). A chunk of 50,000 rows takes a steady 0.45–0.85 s however large the table
    has grown (bench/memory.py).
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


def _pools_of_rows(rows: list[GpuSampleRow], devices: dict):
    """(row, its device's pool id or None) per row; one key lookup per DeviceKey object,
    as in ``_sample_values``."""
    by_identity: dict[int, int | None] = {}
    for row in rows:
        device_key = row.device
        try:
            pool_id = by_identity[id(device_key)]
        except KeyError:
            device = devices[GpuDevice.key_for(device_key.uuid, device_key.gpu_instance_id)]
            pool_id = by_identity[id(device_key)] = device.pool_id
        yield row, pool_id


def _utc_minute(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def outside_service_sentences(pool: Pool, *, before: int, after: int) -> list[Sentence]:
    """What to tell about ``before`` samples dated before ``pool`` entered service and
    ``after`` samples at or after it left: they are kept, and reports do not charge them.
    Sentences in English (the msgid chosen by English's plural rule: Chinese has one form),
    said again in each reader's language."""
    sentences = []
    if before:
        sentences.append(
            sentence(
                gettext_noop(
                    "%(samples)s sample before pool %(pool)s entered service (%(when)s): kept, "
                    "not charged; change the pool's service period to count them."
                )
                if before == 1
                else gettext_noop(
                    "%(samples)s samples before pool %(pool)s entered service (%(when)s): kept, "
                    "not charged; change the pool's service period to count them."
                ),
                samples=f"{before:,}",
                pool=pool.name,
                when=_utc_minute(pool.in_service_from),
            )
        )
    if after:
        sentences.append(
            sentence(
                gettext_noop(
                    "%(samples)s sample at or after pool %(pool)s left service (%(when)s): "
                    "kept, not charged; change the pool's service period to count them."
                )
                if after == 1
                else gettext_noop(
                    "%(samples)s samples at or after pool %(pool)s left service (%(when)s): "
                    "kept, not charged; change the pool's service period to count them."
                ),
                samples=f"{after:,}",
                pool=pool.name,
                when=_utc_minute(pool.in_service_until),
            )
        )
    return sentences


class _OutsideServiceCount:
    """Counts, chunk by chunk, the rows dated outside their pool's service period, and
    says so in sentences at the end of the import.

    A chunk's pools' first and last instants come from its touched instants, so its rows
    are walked again only when some pool's span crosses its service period's bounds."""

    def __init__(self, *, pools: dict | None = None, bounds: dict | None = None):
        # ``pools`` and ``bounds`` may be shared by the imports of one batch, so each pool
        # is read once per batch.
        self.pools: dict[int, Pool] = {} if pools is None else pools
        self.bounds: dict[int, tuple] = {} if bounds is None else bounds
        self.before: Counter = Counter()
        self.after: Counter = Counter()

    def _load(self, pool_ids) -> None:
        missing = [pool_id for pool_id in pool_ids if pool_id not in self.pools]
        if not missing:
            return
        for pool in Pool.objects.filter(pk__in=missing).only(
            "name", "in_service_from", "in_service_until"
        ):
            self.pools[pool.pk] = pool
            # Counted by the hour, as the rollup counts them: a sample in an hour the
            # period overlaps is in service.
            self.bounds[pool.pk] = pool.service_hours()

    def before_start(self, pool_id, moment) -> bool:
        return moment < self.bounds[pool_id][0]

    def after_end(self, pool_id, moment) -> bool:
        end = self.bounds[pool_id][1]
        return end is not None and moment >= end

    def add(self, rows, devices, touched_instants) -> None:
        spans: dict[int, list[datetime]] = {}
        for pool_id, instant in touched_instants:
            span = spans.get(pool_id)
            if span is None:
                spans[pool_id] = [instant, instant]
            elif instant < span[0]:
                span[0] = instant
            elif instant > span[1]:
                span[1] = instant
        if not spans:
            return
        self._load(spans)
        crossing = {
            pool_id
            for pool_id, (first, last) in spans.items()
            if self.before_start(pool_id, first) or self.after_end(pool_id, last)
        }
        if not crossing:
            return
        for row, pool_id in _pools_of_rows(rows, devices):
            if pool_id in crossing:
                if self.before_start(pool_id, row.timestamp):
                    self.before[pool_id] += 1
                elif self.after_end(pool_id, row.timestamp):
                    self.after[pool_id] += 1

    def sentences(self) -> list[Sentence]:
        sentences = []
        outside = set(self.before) | set(self.after)
        for pool_id in sorted(outside, key=lambda pool_id: self.pools[pool_id].name):
            sentences += outside_service_sentences(
                self.pools[pool_id], before=self.before[pool_id], after=self.after[pool_id]
            )
        return sentences


def _lead_minutes(lead: timedelta) -> int:
    return round(lead.total_seconds() / 60)


class _ClockSkewCount:
    """Finds, chunk by chunk, the rows dated more than CLOCK_SKEW_TOLERANCE after
    ``received_at``; at the end of the import ``flag()`` writes their pool-hours' flags
    (PoolHourFlag kind clock_skew, one per pool and hour, rewritten by the latest import
    that saw skew there) and returns sentences for the import's warnings.

    A chunk's rows are walked again only when some pool's latest instant, or a GPU
    without a pool, can be ahead."""

    def __init__(self, received_at: datetime):
        self.received_at = received_at
        self.threshold = received_at + CLOCK_SKEW_TOLERANCE
        # (pool id, hour) → [samples, devices, largest lead]; pool id None for GPUs
        # without one
        self.per_hour: dict[tuple, list] = {}

    def add(self, rows, devices, touched_instants) -> None:
        threshold = self.threshold
        unassigned = any(device.pool_id is None for device in devices.values())
        if not unassigned and not any(instant > threshold for _pool, instant in touched_instants):
            return
        per_hour = self.per_hour
        for row, pool_id in _pools_of_rows(rows, devices):
            if row.timestamp <= threshold:
                continue
            key = (pool_id, hour_of(row.timestamp))
            found = per_hour.get(key)
            if found is None:
                found = per_hour[key] = [0, set(), timedelta(0)]
            found[0] += 1
            found[1].add(row.device)
            found[2] = max(found[2], row.timestamp - self.received_at)

    def flag(self) -> list[Sentence]:
        if not self.per_hour:
            return []
        arrival = _utc_minute(self.received_at)
        flags = [
            PoolHourFlag(
                pool_id=pool_id,
                hour=hour,
                kind=PoolHourFlag.Kind.CLOCK_SKEW,
                samples=samples,
                gpus=len(gpus),
                detail=PoolHourFlag.detail_for(
                    PoolHourFlag.Kind.CLOCK_SKEW,
                    count=samples,
                    samples=f"{samples:,}",
                    lead=_lead_minutes(lead),
                    arrival=arrival,
                ),
            )
            for (pool_id, hour), (samples, gpus, lead) in sorted(
                self.per_hour.items(), key=lambda item: (item[0][0] or 0, item[0][1])
            )
            if pool_id is not None
        ]
        PoolHourFlag.objects.bulk_create(
            flags,
            update_conflicts=True,
            unique_fields=["pool", "hour", "kind"],
            update_fields=["samples", "gpus", "detail"],
        )
        per_pool: dict[int | None, list] = {}
        for (pool_id, _hour), (samples, _gpus, lead) in self.per_hour.items():
            total = per_pool.setdefault(pool_id, [0, timedelta(0)])
            total[0] += samples
            total[1] = max(total[1], lead)
        names = dict(
            Pool.objects.filter(pk__in=[p for p in per_pool if p]).values_list("pk", "name")
        )
        sentences = []
        for pool_id, (samples, lead) in sorted(
            per_pool.items(), key=lambda item: names.get(item[0], "")
        ):
            sentences.append(
                sentence(
                    _CLOCK_SKEW_SENTENCES[(pool_id is not None, samples == 1)],
                    samples=f"{samples:,}",
                    lead=_lead_minutes(lead),
                    arrival=arrival,
                    **({"pool": names[pool_id]} if pool_id else {}),
                )
            )
        return sentences


# The clock-skew warning by (of a pool, one sample): the msgid follows English's plural
# rule (Chinese has one form).
_CLOCK_SKEW_SENTENCES = {
    (True, True): gettext_noop(
        "%(samples)s sample of pool %(pool)s dated up to %(lead)s min ahead of their arrival at "
        "%(arrival)s: kept, their hours flagged; check the node's clock."
    ),
    (True, False): gettext_noop(
        "%(samples)s samples of pool %(pool)s dated up to %(lead)s min ahead of their arrival "
        "at %(arrival)s: kept, their hours flagged; check the node's clock."
    ),
    (False, True): gettext_noop(
        "%(samples)s sample of GPUs without a pool dated up to %(lead)s min ahead of their "
        "arrival at %(arrival)s: kept; check the node's clock."
    ),
    (False, False): gettext_noop(
        "%(samples)s samples of GPUs without a pool dated up to %(lead)s min ahead of their "
        "arrival at %(arrival)s: kept; check the node's clock."
    ),
}


def _refuse_final_hours(rows: list[GpuSampleRow], devices: dict) -> tuple[list, list[RowError]]:
    """(rows kept, one error per refused row): a row older than the raw retention is
    refused when its pool-hour has a rollup row and no raw samples held, as after the
    purge. That hourly row is the hour's only record and a recompute never rewrites it
    (apps/telemetry/rollups.py), so the sample could never count."""
    horizon = raw_retention_horizon()
    # Per row only the age is compared: the pool is looked up for the few old rows.
    old_rows = [row for row in rows if row.timestamp < horizon]
    if not old_rows:
        return rows, []
    # A file of history is old throughout: first ask whether any final hour lies in the
    # old rows' span for the chunk's pools at all (one query), and look rows up one by
    # one only when one does.
    pool_ids = {device.pool_id for device in devices.values() if device.pool_id is not None}
    if not pool_ids:
        return rows, []
    if (
        not PoolHourlyUsage.objects.filter(
            pool_id__in=pool_ids,
            hour__gte=hour_of(min(row.timestamp for row in old_rows)),
            hour__lte=max(row.timestamp for row in old_rows),
        )
        .exclude(samples_held_q())
        .exists()
    ):
        return rows, []
    old = [(row, pool_id) for row, pool_id in _pools_of_rows(old_rows, devices) if pool_id]
    if not old:
        return rows, []
    hours = [hour_of(row.timestamp) for row, _pool_id in old]
    final = set(
        PoolHourlyUsage.objects.filter(
            pool_id__in={pool_id for _row, pool_id in old},
            hour__gte=min(hours),
            hour__lte=max(hours),
        )
        .exclude(samples_held_q())
        .values_list("pool_id", "hour")
    )
    refused = {
        id(row) for (row, pool_id), hour in zip(old, hours, strict=True) if (pool_id, hour) in final
    }
    if not refused:
        return rows, []
    days = settings.TELEMETRY_RAW_RETENTION_DAYS
    errors = [
        line_error(
            row.line_number,
            sentence(
                gettext_noop(
                    "sample at %(when)s is older than the %(days)s-day raw retention; the "
                    "hour's rollup is final (its raw samples are purged and its hourly row is "
                    "the only record)"
                ),
                when=_utc_minute(row.timestamp),
                days=days,
            ),
        )
        for row in rows
        if id(row) in refused
    ]
    return [row for row in rows if id(row) not in refused], errors


def _text_columns(*specs) -> tuple[tuple[str, str, int], ...]:
    """(row attribute, what a person calls it, the column's max_length) per (row attribute,
    model, column, label): the lengths are read once here, not per row."""
    return tuple(
        (attribute, label, model._meta.get_field(column).max_length)
        for attribute, model, column, label in specs
    )


# The text columns a parsed row is stored in. A value longer than its column is refused
# with its line, never left to the database's DataError.
_GPU_ROW_TEXT_COLUMNS = _text_columns(
    ("uuid", GpuDevice, "uuid", sentence(gettext_noop("device id"))),
    ("hostname", GpuDevice, "hostname", sentence(gettext_noop("hostname"))),
    ("model_name", GpuDevice, "model_name", sentence(gettext_noop("GPU model name"))),
    ("driver_version", GpuDevice, "driver_version", sentence(gettext_noop("driver version"))),
    ("mig_profile", GpuDevice, "mig_profile", sentence(gettext_noop("MIG profile"))),
    ("pod", GpuSample, "pod", sentence(gettext_noop("pod"))),
    ("namespace", GpuSample, "namespace", sentence(gettext_noop("namespace"))),
    ("container", GpuSample, "container", sentence(gettext_noop("container"))),
)
_REQUEST_ROW_TEXT_COLUMNS = _text_columns(
    ("status", RequestSample, "status", sentence(gettext_noop("status")))
)


def refuse_nul_characters(text: str) -> None:
    """Raise TelemetryFormatError naming the first line holding a NUL character: PostgreSQL
    cannot store one in text, and a text file does not hold one. (FileLines checks each
    line of a file as it reads it.)"""
    position = text.find("\x00")
    if position >= 0:
        raise TelemetryFormatError(on_line(text.count(chr(10), 0, position) + 1, NUL_SENTENCE))


def _unstorable_value_error(row, columns) -> RowError | None:
    for attribute, label, limit in columns:
        value = getattr(row.device, attribute) if attribute == "uuid" else getattr(row, attribute)
        if not value:
            continue
        if "\x00" in value:
            return line_error(
                row.line_number,
                sentence(
                    gettext_noop("%(column)s: %(problem)s"), column=label, problem=NUL_SENTENCE
                ),
            )
        if len(value) > limit:
            return line_error(
                row.line_number,
                sentence(
                    gettext_noop("%(column)s is %(length)s characters; at most %(limit)s"),
                    column=label,
                    length=f"{len(value):,}",
                    limit=f"{limit:,}",
                ),
            )
    return None


def _storable_throughout(rows, columns) -> bool:
    """True when no row's text is longer than its column or holds a NUL character, checked
    column by column at C speed (``max(map(len, …))``, one ``join``), which is what nearly
    every chunk is; only a chunk with an unstorable value is then walked row by row."""
    for attribute, _label, limit in columns:
        if attribute == "uuid":
            # Rows share their DeviceKey objects: each distinct one is checked once.
            values = [key.uuid for key in {id(row.device): row.device for row in rows}.values()]
        else:
            values = [value for value in map(attrgetter(attribute), rows) if value]
        if values and (max(map(len, values)) > limit or "\x00" in "".join(values)):
            return False
    return True


def _without_unstorable_rows(result: ParseResult, columns) -> ParseResult:
    """The result with rows whose text cannot be stored (longer than its column, or holding
    a NUL character) moved to its errors, in line order."""
    if _storable_throughout(result.rows, columns):
        return result
    refused = []
    for row in result.rows:
        error = _unstorable_value_error(row, columns)
        if error is not None:
            refused.append((row, error))
    if not refused:
        return result
    refused_rows = {id(row) for row, _error in refused}
    errors = [*result.errors, *(error for _row, error in refused)]
    return ParseResult(
        rows=[row for row in result.rows if id(row) not in refused_rows],
        errors=sorted(errors, key=lambda error: error.line_number),
    )


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
        )
    finally:
        inserts.close()


def _import_gpu_chunks(result, inserts, *, pool, skip_bad_rows, received_at, after_chunk, scope):
    tally = _Tally()
    registry = DeviceRegistry(pool=pool, scope=scope)
    touched: set[tuple[int, datetime]] = set()  # (pool id, hour)
    outside_service = _OutsideServiceCount()
    clock_skew = _ClockSkewCount(received_at or timezone.now())
    for chunk in _chunks(result):
        chunk = _without_unstorable_rows(chunk, _GPU_ROW_TEXT_COLUMNS)
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
        kept, refused = _refuse_final_hours(kept, chunk_devices)
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
        # partition is made after the commit (apps/telemetry/partitions.py).
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
        chunk = _without_unstorable_rows(item.result, _GPU_ROW_TEXT_COLUMNS)
        tally.rows_total = len(chunk.rows) + len(chunk.errors)
        tally.add_errors(chunk.errors)
        new_before = registry.new_count
        devices = registry.register(chunk.rows, pool=item.pool)
        kept, refused = registry.refuse_out_of_scope(chunk.rows, devices)
        tally.add_errors(refused)
        kept, refused = _refuse_final_hours(kept, devices)
        tally.add_errors(refused)
        instants: set[tuple[int, datetime]] = set()
        values = list(_sample_values(kept, devices, instants))
        tally.stored = len(kept)
        outside = _OutsideServiceCount(pools=pools, bounds=bounds)
        outside.add(kept, devices, instants)
        skew = _ClockSkewCount(item.received_at or timezone.now())
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
        chunk = _without_unstorable_rows(chunk, _REQUEST_ROW_TEXT_COLUMNS)
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


# What an import sets on its run before it ends, saved with its outcome.
_CONTENT_FIELDS = ("content_sha256", "scraped_at")
_RESULT_FIELDS = (
    *_CONTENT_FIELDS,
    "rows_total",
    "rows_accepted",
    "rows_duplicate",
    "rows_rejected",
    "errors",
    "warnings",
    "warning_parts",
)


def set_import_results(run: ImportRun, summary: ImportSummary) -> str:
    """Put the summary's counts, errors and warnings on ``run``, unsaved; returns the
    status the run ends in (a batch of scrapes writes its runs in one INSERT)."""
    run.rows_total = summary.rows_total
    run.rows_accepted = summary.accepted
    run.rows_duplicate = summary.duplicates
    run.rows_rejected = summary.rejected
    run.errors = [error.as_data() for error in summary.errors]
    run.warnings = summary.warnings
    run.warning_parts = [
        to_data(warning) if isinstance(warning, Sentence) else [] for warning in summary.warnings
    ]
    return ImportRun.Status.REJECTED if summary.rejected_whole else ImportRun.Status.SUCCEEDED


def record_import_run(run: ImportRun, summary: ImportSummary) -> ImportRun:
    status = set_import_results(run, summary)
    run.finish(status, summary.message_parts(), also_save=_RESULT_FIELDS)
    return run


def _record_committed(run: ImportRun) -> bool:
    """Whether ``run``'s record, written last in its rows' transaction, was committed:
    the database holds the instant it was finished at."""
    if run.finished_at is None:
        return False
    try:
        return ImportRun.objects.filter(pk=run.pk, finished_at=run.finished_at).exists()
    except DatabaseError:
        return False


# What a run whose rows are stored says when a step after their commit failed: the run
# stays succeeded, since what it counts as accepted is kept.
ROLLUP_FAILED = gettext_noop(
    "Its samples are stored, but rolling up their hours failed (%(error)s): the hours stay "
    "queued and the next rollup retries them (every minute where a worker runs, or "
    "manage.py rollup_usage)."
)
AFTER_STORE_FAILED = gettext_noop(
    "Its samples are stored, but a step after storing them failed (%(error)s); the server "
    "log has the details."
)


def say_follow_up_failed(run: ImportRun, msgid: str, error: BaseException) -> None:
    """Add to the end of a stored run's message that ``msgid``'s step failed with
    ``error``; its status and counts stay as recorded."""
    logger.error("import run %s: a step after the commit failed", run.pk, exc_info=error)
    space, failure = sentence(" "), sentence(msgid, error=f"{type(error).__name__}: {error}")
    run.message = f"{run.message}{space}{failure}"
    if run.message_parts:
        run.message_parts = [*run.message_parts, space.to_data(), failure.to_data()]
    run.save(update_fields=["message", "message_parts"])


def store_and_record(run: ImportRun, store) -> ImportSummary:
    """``store()``'s rows and ``run``'s record of them (status, counts, message) in one
    transaction, so a run never counts rows it did not keep, nor are rows kept without
    their run's record. An error before the commit is raised, with nothing stored; the
    run's own lifecycle marks it failed, accepting nothing (``ImportRun.fail``). A
    commit hook that fails afterwards (a task run inline where Celery is eager) is said
    on the run, which stays as recorded."""
    try:
        with transaction.atomic():
            summary = store()
            record_import_run(run, summary)
    except Exception as error:
        if not _record_committed(run):
            raise
        say_follow_up_failed(run, AFTER_STORE_FAILED, error)
    return summary


def request_rollup_of(run: ImportRun, summary: ImportSummary) -> None:
    """After the run's commit: ask for the drain of the hours it queued. Where the drain
    runs inline (Celery eager) and fails, the hours stay queued for the next drain, and
    the run, whose rows are stored, says so."""
    if not (summary.touched_pool_hours or summary.touched_workload_hours):
        return
    try:
        request_drain()
    except Exception as error:
        say_follow_up_failed(run, ROLLUP_FAILED, error)


def reap_stalled_imports() -> int:
    """Mark imports not heard from for a few minutes interrupted (apps/core/runs.py); an
    upload whose file is still there is queued again, since samples are keyed upserts.
    Returns the runs marked."""
    pulled = (ImportRun.Source.SCRAPE, ImportRun.Source.PROMETHEUS, ImportRun.Source.TSDB_HOURLY)

    def describe(run):
        by_worker = run.source == ImportRun.Source.UPLOAD or run.source in pulled
        return (
            gettext_noop("The worker") if by_worker else gettext_noop("The process"),
            gettext_noop("importing"),
        )

    def can_retry(run):
        path = run.task_arguments.get("path")
        return run.source == ImportRun.Source.UPLOAD and bool(path) and Path(path).exists()

    def advice(run):
        if run.source in pulled:
            return gettext_noop("the source's next pull runs on schedule.")
        return gettext_noop("import the file again.")

    return runs.reap(
        ImportRun.objects.all(),
        describe=describe,
        can_retry=can_retry,
        retry=lambda run: enqueue("telemetry.import_file", run.pk, **run.task_arguments),
        advice=advice,
    )


def hours_between(start: datetime, end: datetime) -> list[datetime]:
    hours, hour = [], hour_of(start)
    while hour < end:
        hours.append(hour)
        hour += timedelta(hours=1)
    return hours


GPU_FORMATS = ("dcgm", "nvidia-smi", "csv")
REQUEST_FORMATS = ("azure-llm", "csv")


def parse_column_mapping(text: str) -> dict[str, str]:
    """``timestamp=Time,device=GPU`` → {"timestamp": "Time", "device": "GPU"}."""
    mapping = {}
    for part in filter(None, (piece.strip() for piece in (text or "").split(","))):
        field_name, separator, header = part.partition("=")
        if not separator or not field_name.strip() or not header.strip():
            # A Sentence, said in the reader's language by the form (texts.translated).
            raise ValueError(
                sentence(gettext_noop("column mapping “%(part)s” is not field=header"), part=part)
            )
        mapping[field_name.strip()] = header.strip()
    return mapping


def gpu_chunks(source, *, format: str, columns=None, tz=None, scraped_at=None):
    """The ParseResults of ``source`` (a text, or FileLines of a file) in the format's
    parser (apps/telemetry/parsers/), a chunk of lines at a time."""
    tz = tz or UTC
    if format == "dcgm":
        return parsers.iter_dcgm(
            source, scraped_at=scraped_at or timezone.now(), chunk_rows=IMPORT_CHUNK_ROWS
        )
    if format == "nvidia-smi":
        return parsers.iter_nvidia_smi_csv(source, tz=tz, chunk_rows=IMPORT_CHUNK_ROWS)
    if format == "csv":
        if not columns:
            raise parsers.TelemetryFormatError(
                sentence(
                    gettext_noop(
                        "a generic CSV needs a column mapping: "
                        "timestamp=…,device=…,utilization_pct=…"
                    )
                )
            )
        return parsers.iter_gpu_csv(source, columns=columns, tz=tz, chunk_rows=IMPORT_CHUNK_ROWS)
    raise parsers.TelemetryFormatError(_unknown_format(format, GPU_FORMATS))


def request_chunks(source, *, format: str, columns=None, tz=None):
    """As ``gpu_chunks``, for request logs."""
    if format == "azure-llm":
        return parsers.iter_azure_llm(source, chunk_rows=IMPORT_CHUNK_ROWS)
    if format == "csv":
        if not columns:
            raise parsers.TelemetryFormatError(
                sentence(
                    gettext_noop(
                        "a generic request CSV needs a column mapping: "
                        "timestamp=…,input_tokens=…,output_tokens=…"
                    )
                )
            )
        return parsers.iter_request_csv(
            source, columns=columns, tz=tz or UTC, chunk_rows=IMPORT_CHUNK_ROWS
        )
    raise parsers.TelemetryFormatError(_unknown_format(format, REQUEST_FORMATS))


def _unknown_format(format: str, known: tuple[str, ...]) -> Sentence:
    return sentence(
        gettext_noop("unknown format “%(format)s”; expected one of %(known)s"),
        format=format,
        known=str(known),
    )


def parse_gpu_text(text: str, *, format: str, columns=None, tz=None, scraped_at=None):
    """The whole text parsed as one ParseResult."""
    with paused_gc():
        return merge_chunks(
            gpu_chunks(text, format=format, columns=columns, tz=tz, scraped_at=scraped_at)
        )


def content_sha256(content: bytes | str) -> str:
    """The digest that recognises a file imported again: of its UTF-8 bytes, a leading
    byte-order mark left out (the importers read text as utf-8-sig)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    return hashlib.sha256(data.removeprefix(b"\xef\xbb\xbf")).hexdigest()


def file_sha256(path) -> str:
    """``content_sha256`` of a file's bytes, read 64 KiB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(3).removeprefix(b"\xef\xbb\xbf"))
        while block := handle.read(2**16):
            digest.update(block)
    return digest.hexdigest()


def earlier_identical_import(*, kind: str, digest: str, runs=None) -> ImportRun | None:
    """The first import of the same kind and content that succeeded, among ``runs`` (the
    ones the importer may see; default all): importing the content again would add
    nothing."""
    if not digest:
        return None
    return (
        (ImportRun.objects.all() if runs is None else runs)
        .filter(kind=kind, content_sha256=digest, status=ImportRun.Status.SUCCEEDED)
        .order_by("created_at", "pk")
        .first()
    )


def already_imported_sentence(earlier: ImportRun) -> str:
    return gettext(
        "This file was already imported on %(when)s as import #%(run)s: nothing added."
    ) % {"when": _utc_minute(earlier.created_at), "run": earlier.pk}


def run_import(run: ImportRun, source, *, columns=None, tz=None, scraped_at=None, scope=EVERYTHING):
    """Parse, store and record one import (``_parse_store_and_record``) of ``source``, a
    text or the path of a file (read a chunk at a time), writing the run's heartbeat and
    progress meanwhile. Any error but a refused file marks the run failed with a
    sentence (``ImportRun.failure_sentence``), then is raised: no channel leaves a run
    "running". ``scope``: what the run's starter could see when they started it (GPU
    telemetry of GPUs in other pools is refused, line by line)."""
    with run.running(recorded=(TelemetryFormatError,)) as beat:
        if not isinstance(source, str):
            source = FileLines(source)
        with paused_gc():
            return _parse_store_and_record(
                run, source, beat, columns=columns, tz=tz, scraped_at=scraped_at, scope=scope
            )


# The progress bar's share of reading and storing; the rest is recording and scheduling.
_PROGRESS_BEFORE_READING_PCT, _PROGRESS_AFTER_STORING_PCT = 5, 95


def _parse_store_and_record(
    run: ImportRun, source, beat, *, columns=None, tz=None, scraped_at=None, scope=EVERYTHING
):
    """Parse, store and record one import, the same way for every channel (command line,
    upload task, API): the run ends succeeded or rejected with its counts, recorded in the
    transaction that stores its rows (``store_and_record``), and the hours it touched are
    rolled up by a drain asked for after the commit. A file that cannot be
    read at all (a NUL character or bytes that are not UTF-8 included) raises
    TelemetryFormatError after the run is marked rejected with the reason.

    The run keeps the content's digest (unless the channel already set it from the raw
    bytes) and, for dcgm, the scrape time the samples were dated at; samples are checked
    for clock skew against the run's creation, when the content arrived. A file is read
    and stored a chunk at a time, its progress reported after each chunk."""
    is_file = isinstance(source, FileLines)
    if not run.content_sha256:
        run.content_sha256 = file_sha256(source.path) if is_file else content_sha256(source)
    if run.kind == "gpu" and run.format == "dcgm":
        scraped_at = scraped_at or run.scraped_at or run.created_at
        run.scraped_at = scraped_at

    def after_chunk():
        if is_file:
            span = _PROGRESS_AFTER_STORING_PCT - _PROGRESS_BEFORE_READING_PCT
            beat.progress(_PROGRESS_BEFORE_READING_PCT + round(span * source.fraction_read))

    def store() -> ImportSummary:
        if not is_file:
            refuse_nul_characters(source)
        if run.kind == "gpu":
            chunks = gpu_chunks(
                source, format=run.format, columns=columns, tz=tz, scraped_at=scraped_at
            )
            return import_gpu_samples(
                chunks,
                pool=run.pool,
                skip_bad_rows=run.skip_bad_rows,
                received_at=run.created_at,
                after_chunk=after_chunk,
                scope=scope,
            )
        chunks = request_chunks(source, format=run.format, columns=columns, tz=tz)
        return import_requests(
            chunks,
            workload=run.workload,
            skip_bad_rows=run.skip_bad_rows,
            after_chunk=after_chunk,
        )

    try:
        summary = store_and_record(run, store)
    except TelemetryFormatError as error:
        run.finish(ImportRun.Status.REJECTED, error.sentence, also_save=_CONTENT_FIELDS)
        raise
    request_rollup_of(run, summary)
    return summary
