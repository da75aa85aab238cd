"""Any CSV with a header, read through a column mapping → GpuSampleRow or RequestRow.

``columns`` maps our field names to the file's header names, e.g. for Alibaba's GenTD26
``pod_gpu_duty_cycle_anon.csv`` (``value,timestamp_anon,container_ip``: GPU utilization in
percent per pod, anonymised unix seconds, MD5 of the container IP)::

    {"timestamp": "timestamp_anon", "device": "container_ip", "utilization_pct": "value"}

Timestamps are ISO 8601 (naive ones read in ``tz``) or unix seconds, int or float. Empty
cells and ``N/A``/``[N/A]`` are missing values.
"""

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, tzinfo

from apps.core.column_mapping import resolve_columns
from apps.core.sentences import as_sentence, gettext, gettext_noop, sentence

from ._common import (
    CHUNK_ROWS,
    EARLIEST_TIMESTAMP,
    LineReader,
    ReadOptions,
    cell_count_problem,
    future_error,
    is_empty,
    is_missing,
    is_negative,
    latest_allowed,
    merge_chunks,
    not_a_number,
    not_finite,
    not_whole,
    outside_percent,
    parse_timestamp,
    past_error,
    pausing_gc,
    plain_float,
    read_in_chunks,
)
from ._common import read_csv as _read_csv
from .detect import Head, Recognised, is_header_line, listed
from .rows import (
    DeviceKey,
    ParseResult,
    RequestRow,
    RowError,
    TelemetryFormatError,
    gpu_sample_row,
    line_error,
)

GPU_CSV_REQUIRED = ("timestamp", "device", "utilization_pct")
GPU_CSV_FIELDS = (*GPU_CSV_REQUIRED, "memory_used_mib", "power_w", "hostname")
REQUEST_CSV_REQUIRED = ("timestamp", "input_tokens", "output_tokens")
REQUEST_CSV_FIELDS = (*REQUEST_CSV_REQUIRED, "latency_ms", "status", "count")

_INFINITIES = (float("inf"), float("-inf"))


def detect(head: Head) -> Recognised | None:
    """Any CSV with a header line: asked last, after every format with a header of its own."""
    if not is_header_line(head):
        return None
    return Recognised(
        gettext("a CSV with the headers %(headers)s (%(columns)s columns)")
        % {"headers": listed(head.cells), "columns": len(head.cells)},
        head.headers,
    )


def _resolve_columns(
    header: list[str], columns: dict[str, str], known: tuple[str, ...], required: tuple[str, ...]
) -> dict[str, int]:
    """Field name → cell position; TelemetryFormatError says what is wrong with the mapping."""
    return resolve_columns(
        header, columns, known=known, required=required, error=TelemetryFormatError
    )


def _number(cell: str, field: str, problems: list[str]) -> float | None:
    """A finite float, None when the cell is empty or N/A; a problem otherwise (an
    exponent included: ``plain_float``)."""
    number = plain_float(cell)
    if number is None:
        cell = cell.strip()
        if not is_missing(cell):
            problems.append(not_a_number(field, cell))
        return None
    if number != number or number in _INFINITIES:
        problems.append(not_finite(field, cell.strip()))
        return None
    return number


def _whole_number(cell: str, field: str, problems: list[str], *, default=None) -> int | None:
    try:
        number = int(cell)
    except ValueError:
        cell = cell.strip()
        if is_missing(cell):
            if default is None:
                problems.append(is_empty(field))
            return default
        as_float = plain_float(cell)  # "63.0", as some exports write counts
        if as_float is None:
            problems.append(not_a_number(field, cell))
            return None
        if not as_float.is_integer():
            problems.append(not_whole(field, cell))
            return None
        number = int(as_float)
    if number < 0:
        problems.append(is_negative(field, cell.strip()))
        return None
    return number


class _Timestamps:
    """Parses timestamp cells once each: a fleet's rows share few distinct instants."""

    def __init__(self, tz: tzinfo):
        self.tz = tz
        self.parsed: dict[str, datetime] = {}

    def get(self, cell: str, problems: list[str]) -> datetime | None:
        timestamp = self.parsed.get(cell)
        if timestamp is None:
            stripped = cell.strip()
            if not stripped:
                problems.append(is_empty("timestamp"))
                return None
            try:
                timestamp = self.parsed[cell] = parse_timestamp(stripped, self.tz)
            except ValueError as error:
                problems.append(as_sentence(error.args[0]))
                return None
        return timestamp


def _cell_count_error(line_number: int, found: int, expected: int) -> RowError:
    return line_error(line_number, cell_count_problem(found, expected))


def _report(line_number: int, problems: list[str], errors: list[RowError]) -> None:
    errors.extend(line_error(line_number, problem) for problem in problems)


def read_gpu(source: str | Iterable[str], options: ReadOptions) -> Iterator[ParseResult]:
    """``iter_gpu_csv`` as the format registry calls it: a mapping is needed."""
    if not options.columns:
        raise TelemetryFormatError(
            sentence(
                gettext_noop(
                    "a generic CSV needs a column mapping: timestamp=…,device=…,utilization_pct=…"
                )
            )
        )
    return iter_gpu_csv(
        source, columns=options.columns, tz=options.tz, chunk_rows=options.chunk_rows
    )


def read_requests(source: str | Iterable[str], options: ReadOptions) -> Iterator[ParseResult]:
    """``iter_request_csv`` as the format registry calls it: a mapping is needed."""
    if not options.columns:
        raise TelemetryFormatError(
            sentence(
                gettext_noop(
                    "a generic request CSV needs a column mapping: "
                    "timestamp=…,input_tokens=…,output_tokens=…"
                )
            )
        )
    return iter_request_csv(
        source, columns=options.columns, tz=options.tz, chunk_rows=options.chunk_rows
    )


@pausing_gc
def parse_gpu_csv(
    text: str, *, columns: dict[str, str], tz: tzinfo = UTC, now: datetime | None = None
) -> ParseResult:
    """``iter_gpu_csv`` of a whole text as one ParseResult."""
    return merge_chunks(iter_gpu_csv(text, columns=columns, tz=tz, now=now))


def iter_gpu_csv(
    source: str | Iterable[str],
    *,
    columns: dict[str, str],
    tz: tzinfo = UTC,
    now: datetime | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> Iterator[ParseResult]:
    """GPU samples from a CSV whose headers ``columns`` names, a ParseResult per
    ``chunk_rows`` lines: ``source`` is a text or an iterable of lines (FileLines).

    Fields: ``timestamp``, ``device`` (its value becomes ``DeviceKey(uuid=value)``) and
    ``utilization_pct`` (0–100) are required in the mapping; ``memory_used_mib``,
    ``power_w`` and ``hostname`` are optional. A row whose utilization cell is empty or
    N/A is returned with ``utilization_pct`` None: the importer decides.

    Errors (the row is left out): wrong cell count, empty device, a timestamp that does not
    parse, is before 2000 (a clock never set) or is more than 1 day after ``now``, a number
    that does not parse (an exponent such as ``5e1`` included: never read as a number),
    utilization outside 0–100. Raises TelemetryFormatError for an unknown field name
    (listing the known ones), a required field left out of the mapping, a mapped header the
    file lacks (listing the headers found), an empty file, or a header without data rows.
    """
    now, latest = latest_allowed(now)
    header, records = _read_csv(source)
    at = _resolve_columns(header, columns, GPU_CSV_FIELDS, GPU_CSV_REQUIRED)
    return read_in_chunks(records, _GpuReader(at, len(header), tz, now, latest, chunk_rows))


class _GpuReader(LineReader):
    """One GPU sample per line, read through the mapping's cell positions ``at``."""

    def __init__(self, at: dict[str, int], cell_count: int, tz, now, latest, chunk_rows):
        super().__init__(chunk_rows)
        self.cell_count, self.now, self.latest = cell_count, now, latest
        self.timestamp_at, self.device_at = at["timestamp"], at["device"]
        self.utilization_at = at["utilization_pct"]
        self.memory_at, self.power_at, self.hostname_at = (
            at.get(f) for f in ("memory_used_mib", "power_w", "hostname")
        )
        self.timestamps = _Timestamps(tz)
        self.devices: dict[str, DeviceKey] = {}

    def take_chunk(self, line_number: int) -> ParseResult:
        # Caches held for one chunk: a file of distinct instants or devices per line
        # would otherwise keep them all.
        self.timestamps.parsed.clear()
        self.devices.clear()
        return super().take_chunk(line_number)

    def read(self, line_number: int, cells: list[str]) -> None:
        if len(cells) != self.cell_count:
            self.errors.append(_cell_count_error(line_number, len(cells), self.cell_count))
            return
        problems: list[str] = []
        timestamp = self.timestamps.get(cells[self.timestamp_at], problems)
        device = self._device(cells[self.device_at], problems)
        utilization = _number(cells[self.utilization_at], "utilization_pct", problems)
        if utilization is not None and not 0.0 <= utilization <= 100.0:
            problems.append(outside_percent("utilization_pct", cells[self.utilization_at].strip()))
        memory_at, power_at, hostname_at = self.memory_at, self.power_at, self.hostname_at
        memory = (
            None if memory_at is None else _number(cells[memory_at], "memory_used_mib", problems)
        )
        power = None if power_at is None else _number(cells[power_at], "power_w", problems)
        hostname = "" if hostname_at is None else cells[hostname_at].strip()
        if _refused(line_number, timestamp, problems, self, self.errors):
            return
        self.rows.append(
            gpu_sample_row(
                line_number=line_number,
                device=device,
                timestamp=timestamp,
                hostname="" if is_missing(hostname) else hostname,
                utilization_pct=utilization,
                memory_used_mib=memory,
                power_w=power,
            )
        )

    def _device(self, text: str, problems: list[str]) -> DeviceKey | None:
        device = self.devices.get(text)
        if device is None:
            stripped = text.strip()
            if stripped:
                device = self.devices[text] = DeviceKey(stripped)
            else:
                problems.append(is_empty("device"))
        return device


def _refused(line_number: int, timestamp, problems: list[str], reader, errors) -> bool:
    """Report the line's problems, or a timestamp too late or too early; True if any."""
    if problems:
        _report(line_number, problems, errors)
        return True
    if timestamp > reader.latest:
        errors.append(future_error(line_number, timestamp, reader.now))
        return True
    if timestamp < EARLIEST_TIMESTAMP:
        errors.append(past_error(line_number, timestamp))
        return True
    return False


@pausing_gc
def parse_request_csv(
    text: str, *, columns: dict[str, str], tz: tzinfo = UTC, now: datetime | None = None
) -> ParseResult:
    """``iter_request_csv`` of a whole text as one ParseResult."""
    return merge_chunks(iter_request_csv(text, columns=columns, tz=tz, now=now))


def iter_request_csv(
    source: str | Iterable[str],
    *,
    columns: dict[str, str],
    tz: tzinfo = UTC,
    now: datetime | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> Iterator[ParseResult]:
    """Inference requests from a CSV whose headers ``columns`` names, a ParseResult per
    ``chunk_rows`` lines (``source`` as in ``iter_gpu_csv``).

    Fields: ``timestamp``, ``input_tokens`` and ``output_tokens`` (whole numbers ≥ 0) are
    required; ``latency_ms`` (≥ 0), ``status`` (text, kept as written) and ``count``
    (requests the line stands for, whole number ≥ 0, default 1) are optional. Errors and
    TelemetryFormatError as in ``parse_gpu_csv``.
    """
    now, latest = latest_allowed(now)
    header, records = _read_csv(source)
    at = _resolve_columns(header, columns, REQUEST_CSV_FIELDS, REQUEST_CSV_REQUIRED)
    return read_in_chunks(records, _RequestReader(at, len(header), tz, now, latest, chunk_rows))


class _RequestReader(LineReader):
    """One RequestRow per line, read through the mapping's cell positions ``at``."""

    def __init__(self, at: dict[str, int], cell_count: int, tz, now, latest, chunk_rows):
        super().__init__(chunk_rows)
        self.cell_count, self.now, self.latest = cell_count, now, latest
        self.timestamp_at, self.input_at = at["timestamp"], at["input_tokens"]
        self.output_at = at["output_tokens"]
        self.latency_at, self.status_at, self.count_at = (
            at.get(f) for f in ("latency_ms", "status", "count")
        )
        self.timestamps = _Timestamps(tz)

    def take_chunk(self, line_number: int) -> ParseResult:
        self.timestamps.parsed.clear()
        return super().take_chunk(line_number)

    def read(self, line_number: int, cells: list[str]) -> None:
        if len(cells) != self.cell_count:
            self.errors.append(_cell_count_error(line_number, len(cells), self.cell_count))
            return
        problems: list[str] = []
        timestamp = self.timestamps.get(cells[self.timestamp_at], problems)
        input_tokens = _whole_number(cells[self.input_at], "input_tokens", problems)
        output_tokens = _whole_number(cells[self.output_at], "output_tokens", problems)
        latency = None
        if self.latency_at is not None:
            latency = _number(cells[self.latency_at], "latency_ms", problems)
            if latency is not None and latency < 0:
                problems.append(is_negative("latency_ms", cells[self.latency_at].strip()))
        status = "" if self.status_at is None else cells[self.status_at].strip()
        count = 1
        if self.count_at is not None:
            count = _whole_number(cells[self.count_at], "count", problems, default=1)
        if _refused(line_number, timestamp, problems, self, self.errors):
            return
        self.rows.append(
            RequestRow(
                line_number=line_number,
                timestamp=timestamp,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                latency_ms=latency,
                status=status,
                count=count,
            )
        )
