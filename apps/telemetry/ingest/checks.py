"""What an import checks beyond the parsers, against what the database knows: samples
outside their pool's service period, clocks running ahead, samples of hours whose rollup
is final, and values PostgreSQL cannot store."""

import logging
from collections import Counter
from datetime import UTC, datetime, timedelta
from operator import attrgetter

from django.conf import settings

from apps.core.sentences import Sentence, gettext_noop, sentence
from apps.pools.models import Pool
from apps.telemetry.ingest.parsers import NUL_SENTENCE, TelemetryFormatError
from apps.telemetry.ingest.parsers.rows import (
    GpuSampleRow,
    ParseResult,
    RowError,
    line_error,
    on_line,
)
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    PoolHourFlag,
    PoolHourlyUsage,
    RequestSample,
)
from apps.telemetry.rollups.retention import (
    raw_retention_horizon,
    samples_held_q,
)

logger = logging.getLogger(__name__)

# A sample dated further ahead of its arrival than this comes from a node whose clock runs
# fast: kept (within the parsers' 1-day allowance), but its pool-hour is flagged.
CLOCK_SKEW_TOLERANCE = timedelta(minutes=5)


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


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


def utc_minute(moment: datetime) -> str:
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
                when=utc_minute(pool.in_service_from),
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
                when=utc_minute(pool.in_service_until),
            )
        )
    return sentences


class OutsideServiceCount:
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


class ClockSkewCount:
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
        arrival = utc_minute(self.received_at)
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


def refuse_final_hours(rows: list[GpuSampleRow], devices: dict) -> tuple[list, list[RowError]]:
    """(rows kept, one error per refused row): a row older than the raw retention is
    refused when its pool-hour has a rollup row and no raw samples held, as after the
    purge. That hourly row is the hour's only record and a recompute never rewrites it
    (apps/telemetry/rollups/hourly.py), so the sample could never count."""
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
                when=utc_minute(row.timestamp),
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
GPU_ROW_TEXT_COLUMNS = _text_columns(
    ("uuid", GpuDevice, "uuid", sentence(gettext_noop("device id"))),
    ("hostname", GpuDevice, "hostname", sentence(gettext_noop("hostname"))),
    ("model_name", GpuDevice, "model_name", sentence(gettext_noop("GPU model name"))),
    ("driver_version", GpuDevice, "driver_version", sentence(gettext_noop("driver version"))),
    ("mig_profile", GpuDevice, "mig_profile", sentence(gettext_noop("MIG profile"))),
    ("pod", GpuSample, "pod", sentence(gettext_noop("pod"))),
    ("namespace", GpuSample, "namespace", sentence(gettext_noop("namespace"))),
    ("container", GpuSample, "container", sentence(gettext_noop("container"))),
)
REQUEST_ROW_TEXT_COLUMNS = _text_columns(
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


def without_unstorable_rows(result: ParseResult, columns) -> ParseResult:
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
