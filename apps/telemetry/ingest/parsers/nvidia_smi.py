"""``nvidia-smi --query-gpu=… --format=csv`` output → GpuSampleRow.

As nvidia-smi writes it: ", "-separated cells, units in the header (``memory.used [MiB]``)
and in the values (``214 MiB``, ``100 %``, ``631.95 W``) unless ``nounits`` was asked for,
``[N/A]``/``N/A``/``[Not Supported]`` for what a GPU or driver cannot report (utilization
under MIG, memory temperature on GeForce), column sets that differ from driver to driver,
and a local, zone-less ``timestamp`` such as ``2026/01/09 13:40:12.345``. Field meanings:
``nvidia-smi --help-query-gpu``.

Values are parsed, never corrected: nvidia_gpu_exporter's L40S capture has its idle and
load labels seemingly swapped (idle shows 100 % at 145 W, load 9 %), and rows say exactly
what the file says.
"""

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, tzinfo

from apps.core.column_mapping import describe_headers
from apps.core.sentences import as_sentence, gettext, gettext_noop, sentence

from ._common import (
    CHUNK_ROWS,
    EARLIEST_TIMESTAMP,
    LineReader,
    ReadOptions,
    cell_count_problem,
    future_error,
    is_missing,
    latest_allowed,
    merge_chunks,
    not_a_number,
    not_finite,
    not_whole,
    outside_percent,
    past_error,
    pausing_gc,
    plain_float,
    read_csv,
    read_in_chunks,
)
from ._common import to_utc as _to_utc
from .detect import Head, Recognised, listed
from .rows import (
    DeviceKey,
    ParseResult,
    TelemetryFormatError,
    gpu_sample_row,
    line_error,
    on_line,
)

# query field → (row field, unit nvidia-smi appends to the value, range checked)
_METRIC_COLUMNS = {
    "utilization.gpu": ("utilization_pct", "%", True),
    "memory.used": ("memory_used_mib", "MiB", False),
    "memory.free": ("memory_free_mib", "MiB", False),
    "memory.reserved": ("memory_reserved_mib", "MiB", False),
    "power.draw": ("power_w", "W", False),
    # Drivers that split power.draw keep it as the 1 s average; these stand in only when
    # power.draw itself is absent or [N/A].
    "power.draw.average": ("power_w", "W", False),
    "power.draw.instant": ("power_w", "W", False),
    "temperature.gpu": ("temperature_c", "C", False),
    "temperature.memory": ("memory_temperature_c", "C", False),
}
_POWER_PREFERENCE = ("power.draw", "power.draw.average", "power.draw.instant")
_TEXT_COLUMNS = {"name": "model_name", "driver_version": "driver_version", "hostname": "hostname"}
_MIG_MODE_COLUMN = "mig.mode.current"
REQUIRED_COLUMNS = ("timestamp", "uuid")
_INFINITIES = (float("inf"), float("-inf"))


# The dotted query fields nvidia-smi names in its header (``nvidia-smi --help-query-gpu``);
# two of them, or one beside timestamp and uuid, make a header nvidia-smi's.
_DOTTED_FIELDS = frozenset(
    {
        "pci.bus_id",
        "pci.bus",
        "pci.device",
        "pci.domain",
        "pci.device_id",
        "pci.sub_device_id",
        "utilization.gpu",
        "utilization.memory",
        "utilization.encoder",
        "utilization.decoder",
        "memory.total",
        "memory.used",
        "memory.free",
        "memory.reserved",
        "power.draw",
        "power.draw.average",
        "power.draw.instant",
        "power.limit",
        "temperature.gpu",
        "temperature.memory",
        "clocks.sm",
        "clocks.mem",
        "clocks.gr",
        "fan.speed",
        "mig.mode.current",
        "mig.mode.pending",
        "compute_mode",
        "pstate",
    }
)


def detect(head: Head) -> Recognised | None:
    """A header of nvidia-smi query fields (``timestamp, name, pci.bus_id, …
    utilization.gpu [%]``), units in brackets or not."""
    query_fields = [_query_field(cell) for cell in head.cells]
    dotted = [field for field in query_fields if field in _DOTTED_FIELDS]
    if not (len(dotted) >= 2 or (dotted and {"timestamp", "uuid"} <= set(query_fields))):
        return None
    named = [cell for cell in head.cells if _query_field(cell) in ("timestamp", "uuid", *dotted)]
    return Recognised(
        gettext("nvidia-smi query fields (%(fields)s; %(columns)s columns)")
        % {"fields": listed(named), "columns": len(head.cells)},
        head.headers,
    )


def _query_field(header_cell: str) -> str:
    """``memory.used [MiB]`` → ``memory.used``."""
    bracket = header_cell.find(" [")
    return header_cell[:bracket] if bracket != -1 and header_cell.endswith("]") else header_cell


def _parse_nvidia_timestamp(value: str, tz: tzinfo) -> datetime:
    # "2026/01/09 13:40:12.345": with dashes it is ISO 8601, which CPython parses in C.
    try:
        return _to_utc(datetime.fromisoformat(value.replace("/", "-")), tz)
    except ValueError:
        raise ValueError(
            sentence(
                gettext_noop("timestamp '%(value)s' is not like 2026/01/09 13:40:12.345"),
                value=value,
            )
        ) from None


def read(source: str | Iterable[str], options: ReadOptions) -> Iterator[ParseResult]:
    """``iter_nvidia_smi_csv`` as the format registry calls it."""
    return iter_nvidia_smi_csv(source, tz=options.tz, chunk_rows=options.chunk_rows)


@pausing_gc
def parse_nvidia_smi_csv(
    text: str, *, tz: tzinfo = UTC, now: datetime | None = None
) -> ParseResult:
    """``iter_nvidia_smi_csv`` of a whole text as one ParseResult."""
    return merge_chunks(iter_nvidia_smi_csv(text, tz=tz, now=now))


def iter_nvidia_smi_csv(
    source: str | Iterable[str],
    *,
    tz: tzinfo = UTC,
    now: datetime | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> Iterator[ParseResult]:
    """Parse nvidia-smi query-gpu CSV (Linux or Windows line ends) into one row per line,
    a ParseResult per ``chunk_rows`` lines; ``source`` is a text or an iterable of lines
    (FileLines).

    Columns used when present: ``timestamp`` (naive, read in ``tz``) and ``uuid`` (both
    required), ``index``, ``name``, ``driver_version``, ``hostname``, ``utilization.gpu``,
    ``memory.used/free/reserved``, ``power.draw`` (else ``.average``, else ``.instant``),
    ``temperature.gpu``, ``temperature.memory``, ``mig.mode.current``; every other column is
    ignored. ``[N/A]``-style cells are missing values. A row of a MIG-enabled GPU
    (``mig.mode.current`` "Enabled": ``mig_mode_enabled`` True) has ``utilization_pct`` None
    (nvidia-smi cannot measure it) and is still returned; MIG slices themselves do not
    appear in query-gpu output, so ``gpu_instance_id`` is always None.

    Errors (the row is left out): a wrong number of cells, an empty uuid, a timestamp that
    does not parse, is before 2000 (a clock never set) or is more than 1 day after ``now``,
    a number that does not parse (named with its column and value; an exponent such as
    ``5e1`` is never read as a number), utilization outside 0–100.

    Raises TelemetryFormatError when the header lacks ``timestamp`` or ``uuid``, e.g. for
    ``--format=csv,noheader`` output or a file that is not nvidia-smi CSV at all, and when
    the header is followed by no data row.
    """
    now, latest = latest_allowed(now)
    header, records = read_csv(source)
    return read_in_chunks(records, _QueryGpuReader(header, tz, now, latest, chunk_rows))


class _QueryGpuReader(LineReader):
    """One row per line of nvidia-smi query-gpu CSV, read by the columns its header names."""

    def __init__(self, header: list[str], tz: tzinfo, now: datetime, latest: datetime, chunk_rows):
        super().__init__(chunk_rows)
        self.tz, self.now, self.latest = tz, now, latest
        fields = [_query_field(cell) for cell in header]
        position = {field: index for index, field in reversed(list(enumerate(fields)))}
        for required in REQUIRED_COLUMNS:
            if required not in position:
                raise _missing_column(required, header)
        self.timestamp_at, self.uuid_at = position["timestamp"], position["uuid"]
        self.index_at = position.get("index")
        self.mig_mode_at = position.get(_MIG_MODE_COLUMN)
        self.text_columns = [
            (row_field, position[column])
            for column, row_field in _TEXT_COLUMNS.items()
            if column in position
        ]
        self.metric_columns = [
            (column, position[column], *_METRIC_COLUMNS[column])
            for column in _METRIC_COLUMNS
            if column in position
        ]
        self.cell_count = len(header)

    def read(self, line_number: int, cells: list[str]) -> None:
        if len(cells) != self.cell_count:
            self.errors.append(
                line_error(line_number, cell_count_problem(len(cells), self.cell_count))
            )
            return
        problems: list[str] = []
        uuid, timestamp, gpu_index = self._identity(cells, problems)
        values = self._values(cells, problems)
        if not problems and timestamp > self.latest:
            self.errors.append(future_error(line_number, timestamp, self.now))
            return
        if not problems and timestamp < EARLIEST_TIMESTAMP:
            self.errors.append(past_error(line_number, timestamp))
            return
        if problems:
            self.errors.extend(line_error(line_number, problem) for problem in problems)
            return
        self.rows.append(
            gpu_sample_row(
                line_number=line_number,
                device=DeviceKey(uuid),
                timestamp=timestamp,
                gpu_index=gpu_index,
                **values,
            )
        )

    def _identity(self, cells: list[str], problems: list[str]):
        """(uuid, timestamp, GPU index) of the line; what is wrong goes to ``problems``."""
        uuid = cells[self.uuid_at].strip()
        if is_missing(uuid):
            problems.append(sentence(gettext_noop("uuid is missing ('%(value)s')"), value=uuid))
        timestamp = None
        try:
            timestamp = _parse_nvidia_timestamp(cells[self.timestamp_at].strip(), self.tz)
        except ValueError as error:
            problems.append(as_sentence(error.args[0]))
        gpu_index = None
        if self.index_at is not None:
            index_text = cells[self.index_at].strip()
            if not is_missing(index_text):
                try:
                    gpu_index = int(index_text)
                except ValueError:
                    problems.append(not_whole("index", index_text))
        return uuid, timestamp, gpu_index

    def _values(self, cells: list[str], problems: list[str]) -> dict:
        """The row's fields besides its identity: texts, MIG mode and readings."""
        values: dict[str, float | str | bool | None] = {}
        for row_field, column_at in self.text_columns:
            cell = cells[column_at].strip()
            values[row_field] = "" if is_missing(cell) else cell
        readings = self._readings(cells, problems)
        if self.mig_mode_at is not None:
            values["mig_mode_enabled"] = cells[self.mig_mode_at].strip() == "Enabled"
        for column in _POWER_PREFERENCE:
            if column in readings:
                values["power_w"] = readings[column]
                break
        for column, (row_field, _unit, _is_percent) in _METRIC_COLUMNS.items():
            if row_field != "power_w" and column in readings:
                values[row_field] = readings[column]
        return values

    def _readings(self, cells: list[str], problems: list[str]) -> dict[str, float]:
        """Query field → number, its unit dropped; missing cells left out."""
        readings: dict[str, float] = {}
        for column, column_at, _row_field, unit, is_percent in self.metric_columns:
            cell = cells[column_at].strip()
            if is_missing(cell):
                continue
            number_text = cell[: -len(unit) - 1] if cell.endswith(" " + unit) else cell
            number = plain_float(number_text)
            if number is None:
                problems.append(not_a_number(column, cell))
                continue
            if number != number or number in _INFINITIES:
                problems.append(not_finite(column, cell))
                continue
            if is_percent and not 0.0 <= number <= 100.0:
                problems.append(outside_percent(column, cell))
                continue
            readings[column] = number
        return readings


def _missing_column(column: str, header: list[str]) -> TelemetryFormatError:
    return TelemetryFormatError(
        on_line(
            1,
            sentence(
                gettext_noop(
                    "no '%(column)s' column, so this is not usable nvidia-smi "
                    "--query-gpu CSV (query at least timestamp,uuid and use "
                    "--format=csv with its header); columns found: %(headers)s"
                ),
                column=column,
                headers=describe_headers(header),
            ),
        )
    )
