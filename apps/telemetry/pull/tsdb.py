"""Hourly aggregates pulled from a Prometheus-compatible TSDB (Prometheus, VictoriaMetrics,
Thanos, Mimir): the raw samples stay in the fleet's TSDB and gpufleet stores one
``GpuDeviceHour`` per device (GPU or MIG slice), UTC hour and pod, which the rollup reads
beside the device-hours of raw samples (apps/telemetry/rollups/hourly.py).

The queries (apps/telemetry/pull/promql.py) are evaluated at the last millisecond of each hour
with ``query_range`` and ``step=1h``: one request per query per chunk of hours (at most
``DEFAULT_CHUNK_HOURS``), never one per hour. Per device, hour and pod:

- utilisation: ``avg_over_time`` of DCGM_FI_PROF_GR_ENGINE_ACTIVE × 100 where the series
  has it (MIG slices always do), else of DCGM_FI_DEV_GPU_UTIL (percent); its
  ``count_over_time`` is the row's sample count, the weight of the row in means and in
  the workload attribution;
- ``max_over_time`` of DCGM_FI_DEV_FB_USED (MiB);
- energy: ``increase`` of DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ ÷ 3.6·10⁹ = kWh);
  without the counter, the rollup takes ``avg_over_time`` of DCGM_FI_DEV_POWER_USAGE
  (W) × 1 h. ``increase`` follows each server's rule (Prometheus extrapolates to the
  window's edges; VictoriaMetrics starts from the last sample before the window), so
  it counts the energy of the whole hour, where the raw-sample rollup's max − min of the
  counter misses the minute between an hour's last sample and the next hour's first.

Guarantees:
- Complete hours only: an hour is asked for once it ended ``SETTLE`` ago (the TSDB has
  ingested its last scrapes). ``pulled_until`` moves on, chunk by chunk, only over hours
  written whole: a chunk's rows, its queued pool-hours and the new ``pulled_until`` are
  one transaction, so a restart resumes at the first hour not yet complete.
- A re-pull of an hour replaces its rows by key (device, hour, pod): nothing is added
  twice. An hour the server now answers empty keeps what was stored (a TSDB past its own
  retention must not erase gpufleet's record).
- A partial answer (VictoriaMetrics' ``isPartial``, Prometheus' warnings) is stored, but
  its hours are not complete: ``pulled_until`` stays before them, the next pull asks for
  them again, and the run says so.
- A server that fails or does not answer within ``HOURLY_QUERY_TIMEOUT_SECONDS`` ends the
  run failed with a sentence naming it; the chunks written before stay written.
"""

import gc
import logging
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from apps.core.sentences import Sentence, gettext_noop, sentence
from apps.pools.hours import floor_hour
from apps.pools.models import Pool
from apps.telemetry.ingest.device_registry import DeviceRegistry
from apps.telemetry.ingest.parsers import DeviceKey, GpuSampleRow
from apps.telemetry.models import GpuDevice, GpuDeviceHour, ImportRun, PullSource
from apps.telemetry.pull import promql
from apps.telemetry.pull.base import (
    STATUS_ERROR,
    STATUS_OK,
    STATUS_WARNING,
    PullError,
    record_on_source,
    source_headers,
)
from apps.telemetry.pull.prometheus import (
    _device_context,
    is_dcgm_blank,
    query_range_answer,
    raw_series,
)
from apps.telemetry.rollups.hourly import MILLIJOULES_PER_KWH, queue_pool_hours

logger = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
# Hours per query_range: 24 points per series. VictoriaMetrics rounds start and end to the
# step (for its cache) from 50 points on, which would move the evaluation instants off the
# hours' last millisecond; ``nocache=1`` turns that off too.
DEFAULT_CHUNK_HOURS = 24
# An hour is complete once it ended this long ago: scrapes still in flight at its end and
# VictoriaMetrics' -search.latencyOffset (30 s) have passed.
SETTLE = timedelta(minutes=2)
# A first pull of a source reaches this far back; older hours are a backfill
# (manage.py pull_telemetry --source SLUG --start …).
FIRST_PULL_HOURS = 24
# One query of a whole fleet's hour at 100,000 GPUs takes a TSDB seconds on two cores; a
# server slower than this is reported, not waited for.
HOURLY_QUERY_TIMEOUT_SECONDS = 30
# Beyond these a value is a DCGM blank or a broken counter, not a reading: no GPU draws
# 5 kW or uses 5 kWh in an hour.
MAX_POWER_W = 5_000.0
MAX_ENERGY_KWH = 5.0
FB_BLANK_FLOOR_MIB = 1e12
ERRORS_KEPT = 50


# --- Series → device-hours (no database) --------------------------------------------------


@dataclass
class DeviceHourRow:
    """One device in one hour for one pod, as the queries answered it."""

    device: DeviceKey
    hour: datetime
    namespace: str
    pod: str
    container: str
    context: dict
    samples: int = 0
    utilization_pct: float | None = None
    max_memory_used_mib: float | None = None
    energy_kwh: float | None = None
    power_w: float | None = None


@dataclass(slots=True)
class _Series:
    """One label set (one device and pod) and its values, gathered over every query."""

    labels: dict
    context: dict
    device: DeviceKey
    values: dict = field(default_factory=dict)  # hour → {query field: value}

    def described(self) -> str:
        """The labels that name the series in a problem: ``{UUID="…", Hostname="…"}``."""
        shown = ", ".join(
            f'{name}="{self.labels[name]}"'
            for name in ("UUID", "GPU_I_ID", "Hostname", "pod")
            if self.labels.get(name)
        )
        return f"{{{shown}}}"


def _identity(labels: dict) -> dict:
    """Labels with a UUID: exporters without one are identified by gpu + Hostname."""
    if labels.get("UUID") or labels.get("uuid"):
        return labels
    if labels.get("Hostname") and labels.get("gpu"):
        return {**labels, "UUID": f"host:{labels['Hostname']}:gpu{labels['gpu']}"}
    return labels


def _series_of(labels: dict, problems: list[str]) -> _Series | None:
    """The series of a label set seen for the first time, or None (named in
    ``problems``) when it names no device."""
    labels = _identity(labels)
    context = _device_context(labels)
    if isinstance(context, str):
        problems.append(f"a series {context}; left out")
        return None
    device, descriptive = context
    return _Series(labels, descriptive, device)


def device_hours_from_answers(
    answers: list[tuple[str, dict]],
) -> tuple[list[DeviceHourRow], list[str]]:
    """(rows, problems) from ``(query field, response data)`` pairs of ``hourly_queries``.

    Series of one exporter scraped twice (two jobs) give the same device, hour and pod
    twice: the one with more samples is kept, never both. A value out of its range (a
    DCGM blank among the samples, a broken counter) is left out and named in
    ``problems``; the rest of the row is kept. A series that names no device is named
    once, whichever queries answered it.

    Every query answers the same label sets (one per device and pod), so each set is read
    into a device once, on its first answer, and found again by the set itself.
    """
    by_labels: dict[frozenset, _Series | None] = {}
    problems: list[str] = []
    # The hour of each evaluation instant, by the timestamp as the server wrote it.
    hours_of: dict[object, datetime] = {}
    for query_field, data in answers:
        for labels, points in raw_series(data):
            if "__name__" in labels:  # aggregations drop it; a raw selector would not
                labels = {k: v for k, v in labels.items() if k != "__name__"}
            key = frozenset(labels.items())
            series = by_labels.get(key, _UNSEEN)
            if series is _UNSEEN:
                series = by_labels[key] = _series_of(labels, problems)
            if series is None:
                continue
            for timestamp, value_text in points:
                try:
                    value = float(value_text)
                except (TypeError, ValueError):
                    continue
                hour = hours_of.get(timestamp)
                if hour is None:
                    hour = hours_of[timestamp] = promql.hour_of_instant(
                        round(float(timestamp) * 1000)
                    )
                values = series.values.get(hour)
                if values is None:
                    values = series.values[hour] = {}
                values[query_field] = value

    rows: dict[tuple, DeviceHourRow] = {}
    for series in by_labels.values():
        if series is None:
            continue
        for hour, values in series.values.items():
            row = _row_of(series, hour, values, problems)
            key = (row.device, hour, row.namespace, row.pod, row.container)
            kept = rows.get(key)
            if kept is None or row.samples > kept.samples:
                rows[key] = row
    return list(rows.values()), problems


_UNSEEN = object()


def _checked(value: float | None, low: float, high: float) -> float | None | str:
    if value is None or is_dcgm_blank(value) or math.isnan(value):
        return None
    if not low <= value <= high:
        return "out of range"
    return value


def _row_of(series: _Series, hour: datetime, values: dict, problems: list[str]):
    context = series.context
    row = DeviceHourRow(
        device=series.device,
        hour=hour,
        namespace=context["namespace"],
        pod=context["pod"],
        container=context["container"],
        context=context,
    )

    def at() -> str:
        return f"{series.described()} in the hour {hour:%Y-%m-%d %H:00} UTC"

    engine = _checked(values.get("engine_mean"), 0.0, 1.0 + 1e-9)
    util = _checked(values.get("util_mean"), 0.0, 100.0 + 1e-9)
    if isinstance(engine, str):
        problems.append(
            f"{at()}: mean engine activity {values['engine_mean']:g} is outside 0–1 "
            "(a DCGM blank value among its samples?); left out"
        )
        engine = None
    if isinstance(util, str):
        problems.append(
            f"{at()}: mean GPU_UTIL {values['util_mean']:g} is outside 0–100 "
            "(a DCGM blank value among its samples?); left out"
        )
        util = None
    if engine is not None and values.get("engine_samples"):
        row.utilization_pct = min(engine, 1.0) * 100.0
        row.samples = int(values["engine_samples"])
    elif util is not None and values.get("util_samples"):
        row.utilization_pct = min(util, 100.0)
        row.samples = int(values["util_samples"])
    memory = values.get("max_memory_used_mib")
    if memory is not None and not is_dcgm_blank(memory) and 0 <= memory < FB_BLANK_FLOOR_MIB:
        row.max_memory_used_mib = memory
    energy_mj = values.get("energy_mj")
    if energy_mj is not None and not is_dcgm_blank(energy_mj):
        energy_kwh = energy_mj / MILLIJOULES_PER_KWH
        if 0 <= energy_kwh <= MAX_ENERGY_KWH:
            row.energy_kwh = energy_kwh
        else:
            problems.append(
                f"{at()}: the energy counter rose {energy_kwh:g} kWh (more than "
                f"{MAX_ENERGY_KWH:g} kWh is a broken counter); left out"
            )
    power = _checked(values.get("power_w"), 0.0, MAX_POWER_W)
    if isinstance(power, str):
        problems.append(f"{at()}: mean power {values['power_w']:g} W is out of range; left out")
    elif power is not None:
        row.power_w = power
    return row


# --- Storing ------------------------------------------------------------------------------


@dataclass
class ChunkOutcome:
    start: datetime
    end: datetime
    rows_written: int = 0
    rows_replaced: int = 0
    devices: int = 0
    partial: bool = False
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _registry_rows(rows: list[DeviceHourRow]) -> list[GpuSampleRow]:
    """What each device says about itself, in the shape the device registry reads: one
    row per device-hour, stamped at its hour (the registry keeps the latest)."""
    return [
        GpuSampleRow(
            line_number=0,
            device=row.device,
            timestamp=row.hour,
            hostname=row.context["hostname"],
            gpu_index=row.context["gpu_index"],
            model_name=row.context["model_name"],
            driver_version=row.context["driver_version"],
            mig_profile=row.context["mig_profile"],
        )
        for row in rows
    ]


def _devices_of(source: PullSource, rows: list[DeviceHourRow]) -> dict[str, tuple[int, int | None]]:
    """GpuDevice key → (id, pool id) for every device of ``rows``: the known ones in one
    query (their last sighting moved on in one statement), the new ones registered as
    any channel registers them (``DeviceRegistry``: the source's pool, else a hostname
    rule's, else unassigned)."""
    latest: dict[str, DeviceHourRow] = {}
    for row in rows:
        key = GpuDevice.key_for(row.device.uuid, row.device.gpu_instance_id)
        if key not in latest or row.hour > latest[key].hour:
            latest[key] = row
    # One array parameter: 100,000 keys as separate parameters cost more to send than to
    # look up.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT key, id, pool_id FROM telemetry_gpudevice WHERE key = ANY(%s)",
            [list(latest)],
        )
        known = {key: (pk, pool_id) for key, pk, pool_id in cursor.fetchall()}
    unknown = [row for key, row in latest.items() if key not in known]
    if unknown:
        registry = DeviceRegistry(
            pool=source.pool, scope=source.pull_scope, cluster_id=source.cluster_id
        )
        for key, device in registry.register(_registry_rows(unknown)).items():
            known[key] = (device.pk, device.pool_id)
        registry.save()
    seen = [(known[key][0], row.hour + HOUR) for key, row in latest.items()]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE telemetry_gpudevice AS device SET last_seen_at = seen.at "
            "FROM unnest(%s::bigint[], %s::timestamptz[]) AS seen(id, at) "
            "WHERE device.id = seen.id AND device.last_seen_at < seen.at",
            [[pk for pk, _at in seen], [at for _pk, at in seen]],
        )
        if source.pool_id is not None:
            # As an import naming a pool: its unassigned devices join it.
            cursor.execute(
                "UPDATE telemetry_gpudevice SET pool_id = %s, assignment = %s "
                "WHERE id = ANY(%s) AND pool_id IS NULL",
                [source.pool_id, GpuDevice.Assignment.IMPORT, [pk for pk, _at in seen]],
            )
            if cursor.rowcount:
                known = {
                    key: (pk, source.pool_id if pool_id is None else pool_id)
                    for key, (pk, pool_id) in known.items()
                }
    return known


# A device-hour row's columns, in the order ``upsert_device_hours`` takes its tuples.
DEVICE_HOUR_COLUMNS = (
    ("device_id", "int8"),
    ("hour", "timestamptz"),
    ("namespace", "text"),
    ("pod", "text"),
    ("container", "text"),
    ("samples", "int4"),
    ("utilization_pct", "float8"),
    ("max_memory_used_mib", "float8"),
    ("energy_kwh", "float8"),
    ("power_w", "float8"),
    ("source_id", "int8"),
    ("pulled_at", "timestamptz"),
)
_KEY = ("device_id", "hour", "namespace", "pod", "container")


def upsert_device_hours(values: list[tuple]) -> None:
    """Insert the rows (tuples in ``DEVICE_HOUR_COLUMNS``' order), replacing those with
    the same key: binary COPY into a staging table, then one ``INSERT … ON CONFLICT DO
    UPDATE`` (as the sample imports: apps/telemetry/ingest/storage.py): a whole chunk in
    two statements, where the ORM would send a statement per row."""
    names = [name for name, _type in DEVICE_HOUR_COLUMNS]
    columns = ", ".join(names)
    updates = ", ".join(f"{name} = excluded.{name}" for name in names if name not in _KEY)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMP TABLE IF NOT EXISTS gpu_device_hour_staging ("
            + ", ".join(f"{name} {sql_type}" for name, sql_type in DEVICE_HOUR_COLUMNS)
            + ") ON COMMIT DROP"
        )
        cursor.execute("TRUNCATE gpu_device_hour_staging")
        with cursor.cursor.copy(
            f"COPY gpu_device_hour_staging ({columns}) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types([sql_type for _name, sql_type in DEVICE_HOUR_COLUMNS])
            for value in values:
                copy.write_row(value)
        cursor.execute(
            f"INSERT INTO telemetry_gpudevicehour ({columns}) "  # noqa: S608 - constants
            f"SELECT {columns} FROM gpu_device_hour_staging "
            f"ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET {updates}"
        )


def store_device_hours(
    source: PullSource, rows: list[DeviceHourRow], *, pulled_at: datetime, problems=None
) -> tuple[int, int, int]:
    """Write ``rows`` (in the caller's transaction): register their devices, replace the
    source's rows of every hour the answer holds, upsert by key, queue the pool-hours.
    Returns (rows written, of which replaced an earlier row, devices).

    The rows of GPUs in pools outside the source's scope (``PullSource.pull_scope``) are
    not written; each such GPU is named once in ``problems``."""
    if not rows:
        return 0, 0, 0
    devices = _devices_of(source, rows)
    rows = _in_pull_scope(source, rows, devices, problems)
    if not rows:
        return 0, 0, len(devices)
    hours = sorted({row.hour for row in rows})
    earlier = GpuDeviceHour.objects.filter(source=source, hour__in=hours)
    replaced = earlier.count()
    # Pods gone from a re-pull of the hour must not stay beside the new rows.
    earlier.delete()
    values, touched = [], set()
    for row in rows:
        device_id, pool_id = devices[GpuDevice.key_for(row.device.uuid, row.device.gpu_instance_id)]
        values.append(
            (
                device_id,
                row.hour,
                row.namespace[:255],
                row.pod[:255],
                row.container[:255],
                row.samples,
                row.utilization_pct,
                row.max_memory_used_mib,
                row.energy_kwh,
                row.power_w,
                source.pk,
                pulled_at,
            )
        )
        if pool_id is not None:
            touched.add((pool_id, row.hour))
    upsert_device_hours(values)
    if touched:
        queue_pool_hours(touched)
    return len(rows), replaced, len(devices)


def _in_pull_scope(source, rows, devices, problems) -> list[DeviceHourRow]:
    scope = source.pull_scope
    if scope.everything:
        return rows
    pool_ids = set(Pool.objects.in_scope(scope).values_list("pk", flat=True))
    refused = {
        key
        for key, (_pk, pool_id) in devices.items()
        if pool_id is not None and pool_id not in pool_ids
    }
    if not refused:
        return rows
    if problems is not None:
        problems.extend(
            f"GPU {key} is in a pool outside the teams of the source's last editor; "
            "its hours are not stored"
            for key in sorted(refused)
        )
    return [
        row
        for row in rows
        if GpuDevice.key_for(row.device.uuid, row.device.gpu_instance_id) not in refused
    ]


# --- One chunk ----------------------------------------------------------------------------


# Queries in flight at once: the server computes one answer while the previous one is
# read and decoded here.
FETCH_CONCURRENCY = 2


def fetch_chunk(
    source: PullSource, start: datetime, end: datetime, *, timeout_seconds: float
) -> tuple[list[tuple[str, dict]], list[str], bool]:
    """The answers to every hourly query for the hours [start, end): (answers, warnings,
    partial). Raises PullError (the first query's failure)."""

    def ask(query):
        return query_range_answer(
            source.url,
            query.promql,
            start=promql.evaluation_instant(start),
            end=promql.evaluation_instant(end - HOUR),
            step_seconds=3600,
            timeout_seconds=timeout_seconds,
            extra_params={"nocache": "1"},
            headers=source_headers(source),
        )

    try:
        queries = promql.hourly_queries(source.label_filters)
    except promql.LabelFilterError as error:
        raise PullError(
            sentence(
                gettext_noop(
                    "the source's label filters are not PromQL label matchers (%(error)s); "
                    "correct them on the pull-sources page"
                ),
                error=str(error),
            )
        ) from None
    with ThreadPoolExecutor(max_workers=FETCH_CONCURRENCY) as pool:
        answered = list(pool.map(ask, queries))
    answers, warnings, partial = [], [], False
    for query, answer in zip(queries, answered, strict=True):
        answers.append((query.field, answer.data))
        warnings.extend(w for w in answer.warnings if w not in warnings)
        partial = partial or answer.partial
    return answers, warnings, partial


def pull_chunk(
    source: PullSource,
    start: datetime,
    end: datetime,
    *,
    pulled_at: datetime,
    timeout_seconds: float = HOURLY_QUERY_TIMEOUT_SECONDS,
    advance_to: datetime | None = None,
) -> ChunkOutcome:
    """Fetch and store the hours [start, end) in one transaction; with ``advance_to`` and
    a whole answer, ``source.pulled_until`` becomes it in the same transaction."""
    with _cyclic_gc_paused():
        answers, warnings, partial = fetch_chunk(
            source, start, end, timeout_seconds=timeout_seconds
        )
        partial = partial or bool(warnings)
        rows, problems = device_hours_from_answers(answers)
        del answers  # the decoded answers are the bulk of the chunk's memory
        outcome = ChunkOutcome(start, end, partial=partial, warnings=warnings, problems=problems)
        with transaction.atomic():
            outcome.rows_written, outcome.rows_replaced, outcome.devices = store_device_hours(
                source, rows, pulled_at=pulled_at, problems=outcome.problems
            )
            if advance_to is not None and not partial:
                source.pulled_until = advance_to
                source.save(update_fields=["pulled_until"])
    _refresh_statistics(outcome.rows_written)
    return outcome


@contextmanager
def _cyclic_gc_paused():
    """Python's cyclic garbage collector off for the block, back on after it.

    A fleet's answers decode into millions of small dicts, lists and strings, and the
    device-hours add as many again; none is in a reference cycle (decoded JSON cannot
    form one), so reference counting frees them all. The collector, though, runs each
    time enough objects have been allocated, and its fuller passes walk every object
    still alive: with a whole fleet's answers alive, those passes cost more than the
    decoding and the building together, and more the larger the fleet. What cycles the
    block leaves are collected once it ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# A chunk can be more than the planner believes the table holds (a fleet's first pull,
# before autovacuum's analyze): the drain that follows must not plan its per-pool rollups
# with an empty table's statistics, which scan the whole fleet's hour for every pool, a
# cost that grows with pools × GPUs. Small chunks are left to autovacuum.
ANALYZE_AFTER_ROWS = 10_000


def _refresh_statistics(rows_written: int) -> None:
    if rows_written < ANALYZE_AFTER_ROWS:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples FROM pg_class WHERE oid = 'telemetry_gpudevicehour'::regclass"
        )
        (believed_rows,) = cursor.fetchone()
        if believed_rows < rows_written:  # -1: never analysed
            cursor.execute("ANALYZE telemetry_gpudevicehour, telemetry_gpudevice")


# --- A run ----------------------------------------------------------------------------------


def complete_until(now: datetime) -> datetime:
    """The end of the last complete hour at ``now``."""
    return floor_hour(now - SETTLE)


def _utc(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:00}"


def _chunks(start: datetime, end: datetime, chunk_hours: int):
    chunk = timedelta(hours=chunk_hours)
    while start < end:
        yield start, min(start + chunk, end)
        start += chunk


def pull_hourly(
    source: PullSource,
    *,
    now: datetime | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    chunk_hours: int = DEFAULT_CHUNK_HOURS,
    max_chunks: int | None = None,
    timeout_seconds: float = HOURLY_QUERY_TIMEOUT_SECONDS,
    progress: Callable[[ChunkOutcome, int, int], None] | None = None,
) -> ImportRun | None:
    """Pull the complete hours of ``source`` from ``start`` (default: where the last
    complete pull ended, else ``FIRST_PULL_HOURS`` back) to ``end`` (default and at most:
    the last complete hour), ``chunk_hours`` at a time, at most ``max_chunks`` chunks.
    Returns the run, or None when no complete hour is due (nothing recorded but the time
    of the look). ``progress(outcome, chunk number, chunks)`` follows each chunk."""
    now = now or timezone.now()
    if chunk_hours < 1:
        raise ValueError("chunk_hours must be at least 1")
    chunks = _chunks_due(source, now, start, end, chunk_hours, max_chunks)
    if not chunks:
        source.last_pulled_at = now
        source.save(update_fields=["last_pulled_at"])
        return None
    run = ImportRun.objects.create(
        kind="gpu",
        format=PullSource.Kind.PROMETHEUS_HOURLY,
        source=ImportRun.Source.TSDB_HOURLY,
        filename=source.url[:255],
        pool=source.pool,
        skip_bad_rows=True,
        status=ImportRun.Status.RUNNING,
        started_at=timezone.now(),
    )
    outcomes: list[ChunkOutcome] = []
    try:
        with run.running(recorded=(PullError,)):
            _pull_chunks(source, run, chunks, outcomes, now, timeout_seconds, progress)
    except PullError as error:
        _record_failure(source, run, chunks, outcomes, now, error)
        return run
    message = _finished_sentence(source, outcomes, chunks)
    partial = any(outcome.partial for outcome in outcomes)
    status = STATUS_WARNING if partial or run.rows_rejected or not run.rows_accepted else STATUS_OK
    run.succeed(message)
    record_on_source(source, now, status, message)
    return run


def _chunks_due(source, now, start, end, chunk_hours, max_chunks) -> list[tuple]:
    """The (start, end) of each chunk of complete hours to pull, oldest first."""
    latest = complete_until(now)
    first = floor_hour(start) if start else source.pulled_until or latest - FIRST_PULL_HOURS * HOUR
    first = floor_hour(first)
    last = min(floor_hour(end) if end else latest, latest)
    chunks = list(_chunks(first, last, chunk_hours))
    return chunks if max_chunks is None else chunks[:max_chunks]


def _pull_chunks(source, run, chunks, outcomes, now, timeout_seconds, progress) -> None:
    """Pull each chunk, counting it on the run as it commits."""
    # pulled_until moves only while every hour since it is complete: a partial chunk
    # holds it there for the rest of the run.
    contiguous = True
    for number, (chunk_start, chunk_end) in enumerate(chunks, start=1):
        resumes = source.pulled_until is None or source.pulled_until >= chunk_start
        advance = chunk_end if contiguous and resumes else None
        if source.pulled_until and source.pulled_until >= chunk_end:
            advance = None  # a backfill of hours already complete
        outcome = pull_chunk(
            source,
            chunk_start,
            chunk_end,
            pulled_at=now,
            timeout_seconds=timeout_seconds,
            advance_to=advance,
        )
        contiguous = contiguous and not outcome.partial
        outcomes.append(outcome)
        run.rows_total += outcome.rows_written + len(outcome.problems)
        run.rows_accepted += outcome.rows_written
        run.rows_duplicate += outcome.rows_replaced
        run.rows_rejected += len(outcome.problems)
        run.errors = (run.errors + outcome.problems)[:ERRORS_KEPT]
        run.advance(
            round(100 * number / len(chunks)),
            _progress_sentence(source, outcomes, chunks),
            also_save=["rows_total", "rows_accepted", "rows_duplicate", "rows_rejected", "errors"],
        )
        if progress is not None:
            progress(outcome, number, len(chunks))


def _record_failure(source, run, chunks, outcomes, now, error: PullError) -> None:
    """A chunk the server did not answer ends the run, saying which hours are pulled and
    where the next pull resumes."""
    done = _written_sentence(outcomes)
    failed_from = outcomes[-1].end if outcomes else chunks[0][0]
    reason = sentence(
        gettext_noop(
            "%(error)s. The hours from %(failed_from)s UTC on are not pulled%(done)s; "
            "the next pull resumes at %(resumes_at)s UTC. Check that the server is up "
            "and not overloaded, or pull fewer hours at a time "
            "(manage.py pull_telemetry --chunk-hours)."
        ),
        error=error.sentence,
        failed_from=_utc(failed_from),
        done=done,
        resumes_at=_utc(source.pulled_until or failed_from),
    )
    # Each chunk commits on its own: the hours written before the failure are stored
    # and counted, so the run that wrote them has not failed.
    status = ImportRun.Status.SUCCEEDED if run.rows_accepted else ImportRun.Status.FAILED
    run.finish(status, reason, also_save=["rows_total", "rows_accepted"])
    record_on_source(source, now, STATUS_ERROR, reason)
    logger.warning("hourly pull of %s (%s) failed: %s", source.name, source.url, error)


def _written_sentence(outcomes: list[ChunkOutcome]) -> Sentence | str:
    if not outcomes:
        return ""
    return sentence(
        gettext_noop(" (%(start)s–%(end)s UTC were: %(rows)s device-hours)"),
        start=_utc(outcomes[0].start),
        end=_utc(outcomes[-1].end),
        rows=sum(outcome.rows_written for outcome in outcomes),
    )


def _progress_sentence(source, outcomes, chunks) -> Sentence:
    return sentence(
        gettext_noop("Hourly aggregates pulled up to %(done)s UTC of %(start)s–%(end)s UTC."),
        done=_utc(outcomes[-1].end),
        start=_utc(chunks[0][0]),
        end=_utc(chunks[-1][1]),
    )


def _finished_sentence(source: PullSource, outcomes: list[ChunkOutcome], chunks) -> list[Sentence]:
    """The run's outcome, as parts read one after the other."""
    rows = sum(outcome.rows_written for outcome in outcomes)
    replaced = sum(outcome.rows_replaced for outcome in outcomes)
    devices = max((outcome.devices for outcome in outcomes), default=0)
    parts = [
        sentence(
            gettext_noop(
                "Hourly aggregates %(start)s–%(end)s UTC: %(rows)s device-hours of "
                "%(devices)s GPUs or MIG slices written"
            ),
            start=_utc(chunks[0][0]),
            end=_utc(chunks[-1][1]),
            rows=rows,
            devices=devices,
        )
    ]
    if replaced:
        parts.append(
            sentence(
                gettext_noop(" (%(replaced)s replaced an earlier pull of their hour)"),
                replaced=replaced,
            )
        )
    problems = sum(len(outcome.problems) for outcome in outcomes)
    if problems:
        parts.append(
            sentence(
                gettext_noop("; %(problems)s values left out (listed below)"), problems=problems
            )
        )
    parts.append(sentence(gettext_noop(".")))
    partial = [outcome for outcome in outcomes if outcome.partial]
    if partial:
        hours = ", ".join(f"{_utc(o.start)}–{_utc(o.end)}" for o in partial)
        warned = sorted({warning for outcome in partial for warning in outcome.warnings})
        said = (
            sentence(gettext_noop(" (the server warned: %(warnings)s)"), warnings="; ".join(warned))
            if warned
            else ""
        )
        parts.append(
            sentence(
                gettext_noop(
                    " The server answered %(hours)s UTC partially%(said)s: stored, but not "
                    "marked complete; the next pull asks for these hours again."
                ),
                hours=hours,
                said=said,
            )
        )
    if source.pulled_until:
        parts.append(
            sentence(
                gettext_noop(" Complete up to %(complete_to)s UTC."),
                complete_to=_utc(source.pulled_until),
            )
        )
    if not rows:
        parts.append(
            sentence(
                gettext_noop(" The server holds none of the DCGM metrics pulled in these hours.")
            )
        )
    return parts
