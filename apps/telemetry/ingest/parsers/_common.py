"""Helpers shared by the parsers: timestamps, numbers, missing-value markers, CSV headers."""

import contextlib
import csv
import functools
import gc
import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from apps.core.sentences import Sentence, gettext_noop, sentence

from .rows import ParseResult, RowError, TelemetryFormatError, line_error, on_line

# A sample stamped further ahead than this is refused: a clock or time-zone mistake that
# would otherwise land in hours that have not happened yet.
MAX_FUTURE = timedelta(days=1)
# A sample stamped before this is refused: a node whose clock was never set reports 1970.
# The same instant as apps.pools.models.EARLIEST_SERVICE_START, kept here because the
# parsers import no Django.
EARLIEST_TIMESTAMP = datetime(2000, 1, 1, tzinfo=UTC)

# Unix seconds this large are surely milliseconds (10^11 s is the year 5138).
_UNIX_SECONDS_CEILING = 1e11

# The lines a parser turns into one ParseResult of a stream: an import holds one chunk of
# rows at a time, never a whole file's (50,000 rows are some 25 MB).
CHUNK_ROWS = 50_000
BYTE_ORDER_MARK = "\ufeff"
NUL_SENTENCE = sentence(gettext_noop("a NUL character (\\x00); the file is binary or corrupted"))
# A file that holds a header and nothing else is refused rather than imported as nothing.
NO_DATA_ROWS = sentence(gettext_noop("the file has a header but no data rows: nothing to import"))


@dataclass(frozen=True)
class ReadOptions:
    """What an import tells the parser of its format (each reads what it needs): the
    generic CSVs' column mapping, the zone of naive timestamps, the time a dcgm scrape
    was taken (default: now), and the lines of one chunk."""

    columns: dict[str, str] | None = None
    tz: tzinfo = UTC
    scraped_at: datetime | None = None
    chunk_rows: int = CHUNK_ROWS


class FileLines:
    """The lines of a UTF-8 text file, each with its line end, read a buffer at a time.

    What the parsers read instead of a whole text, so that an import holds one chunk of
    rows, never the file. The first line loses its byte-order mark; a line holding a NUL
    character (which no text file and no PostgreSQL text column holds) or bytes that are
    not UTF-8 raises TelemetryFormatError naming it. ``fraction_read`` says how far the
    reading got, for a progress bar.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self.size_bytes = os.path.getsize(self.path)
        self.bytes_read = 0

    @property
    def fraction_read(self) -> float:
        return min(1.0, self.bytes_read / self.size_bytes) if self.size_bytes else 1.0

    def __iter__(self) -> Iterator[str]:
        self.bytes_read = 0
        with open(self.path, "rb") as handle:
            for line_number, raw in enumerate(handle, 1):
                if line_number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                    self.bytes_read = 3
                if b"\x00" in raw:
                    raise TelemetryFormatError(on_line(line_number, NUL_SENTENCE))
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    # The codec's reason ("invalid start byte") is Python's own English.
                    problem = sentence(
                        gettext_noop("not UTF-8 text (%(reason)s at byte %(byte)s of the file)"),
                        reason=error.reason,
                        byte=f"{self.bytes_read + error.start:,}",
                    )
                    raise TelemetryFormatError(on_line(line_number, problem)) from None
                self.bytes_read += len(raw)
                yield line


def lines_without_ends(source: "str | Iterable[str]") -> Iterable[str]:
    """The lines of a text (split on "\n", a leading byte-order mark dropped) or of an
    iterable of lines that keep their ends, such as FileLines; a "\r" before the "\n" stays."""
    if isinstance(source, str):
        return source.removeprefix(BYTE_ORDER_MARK).split("\n")
    return (line[:-1] if line[-1:] == "\n" else line for line in source)


def numbered_lines(source: "str | Iterable[str]", first: int = 1) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) of ``source`` (``lines_without_ends``)."""
    return enumerate(lines_without_ends(source), first)


class LineReader:
    """A parser's reading of one line at a time, driven by ``read_in_chunks``.

    ``read`` takes one line (or CSV record) into the chunk being read; ``ends_chunk_before``
    says whether the chunk read so far is complete before this line; ``take_chunk``
    returns it and starts the next; ``last_chunk`` returns what is left at the end of the
    file (``read_any``: whether any line was read at all), or raises TelemetryFormatError
    when the file as a whole cannot be imported.

    This base class ends a chunk every ``chunk_rows`` lines and refuses a file with no
    data rows, as the CSV formats do; a parser with other rules overrides them.
    """

    def __init__(self, chunk_rows: int, first_line: int = 1):
        self.chunk_rows = chunk_rows
        self.next_chunk_at = first_line + chunk_rows
        self.rows: list = []
        self.errors: list[RowError] = []

    def ends_chunk_before(self, line_number: int, record) -> bool:
        return line_number >= self.next_chunk_at

    def read(self, line_number: int, record) -> None:
        raise NotImplementedError

    def take_chunk(self, line_number: int) -> ParseResult:
        chunk = ParseResult(rows=self.rows, errors=self.errors)
        self.rows, self.errors = [], []
        self.next_chunk_at = line_number + self.chunk_rows
        return chunk

    def last_chunk(self, read_any: bool) -> ParseResult:
        if not read_any:
            raise TelemetryFormatError(NO_DATA_ROWS)
        return ParseResult(rows=self.rows, errors=self.errors)


def read_in_chunks(
    records: Iterable[tuple[int, object]], reader: LineReader
) -> Iterator[ParseResult]:
    """The one loop of every parser: each (line number, line or record) of ``records`` read
    by ``reader``, a ParseResult yielded whenever a chunk is complete and at the end."""
    ends_chunk_before, read = reader.ends_chunk_before, reader.read
    read_any = False
    for line_number, record in records:
        read_any = True
        if ends_chunk_before(line_number, record):
            yield reader.take_chunk(line_number)
        read(line_number, record)
    yield reader.last_chunk(read_any)


def merge_chunks(chunks: Iterable) -> "ParseResult":
    """The ParseResults of a stream as one, rows and errors in line order."""
    merged = None
    for chunk in chunks:
        if merged is None:
            merged = chunk
        else:
            merged.rows.extend(chunk.rows)
            merged.errors.extend(chunk.errors)
    return merged if merged is not None else ParseResult(rows=[], errors=[])


@contextlib.contextmanager
def paused_gc():
    """The block runs with the cyclic garbage collector paused; see ``pausing_gc``."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def pausing_gc(parse):
    """Run ``parse`` with the cyclic garbage collector paused.

    A parser allocates one container object per row and keeps them all, so CPython's
    allocation-count-triggered collections walk an ever longer list of live objects that
    cannot be garbage: on the 157,417-row Alibaba file that is half the parse time. Rows
    hold no reference cycles, and any other cycle is collected once the collector runs
    again. Mercurial does the same (``util.nogc``) for the same reason. The collector is
    switched back on only if it was on, so a caller that disabled it keeps it disabled.
    """

    @functools.wraps(parse)
    def wrapper(*args, **kwargs):
        with paused_gc():
            return parse(*args, **kwargs)

    return wrapper


def latest_allowed(now: datetime | None) -> tuple[datetime, datetime]:
    """(now, the latest timestamp accepted), both timezone-aware UTC."""
    if now is None:
        now = datetime.now(UTC)
    elif now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be a timezone-aware datetime")
    now = now.astimezone(UTC)
    return now, now + MAX_FUTURE


def aware_utc(value: datetime, name: str) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime (got {value!r})")
    return value.astimezone(UTC)


def future_error(line_number: int, timestamp: datetime, now: datetime) -> RowError:
    return line_error(
        line_number,
        sentence(
            gettext_noop(
                "timestamp %(timestamp)s is more than 1 day in the future (now is %(now)s)"
            ),
            timestamp=timestamp.isoformat(),
            now=now.replace(microsecond=0).isoformat(),
        ),
    )


# What a too-early instant is called in a row error: the line's own column, or the scrape
# time that dated a dcgm line without a timestamp of its own.
TIMESTAMP_WORD = sentence(gettext_noop("timestamp"))
SCRAPE_TIME_WORD = sentence(gettext_noop("scrape time"))


def past_error(line_number: int, timestamp: datetime, what: str = TIMESTAMP_WORD) -> RowError:
    """``what`` names where the instant came from when it is not the line's own column."""
    return line_error(
        line_number,
        sentence(
            gettext_noop(
                "%(what)s %(timestamp)s is before %(earliest)s: the node's clock is not set"
            ),
            what=what,
            timestamp=f"{timestamp.astimezone(UTC):%Y-%m-%d %H:%M:%S}",
            earliest=f"{EARLIEST_TIMESTAMP:%Y-%m-%d}",
        ),
    )


# The problems every parser names with a column (or label, or metric) and the value the
# file holds: one sentence each, whatever the format.


def not_a_number(column: str, value: str) -> Sentence:
    return sentence(
        gettext_noop("%(column)s '%(value)s' is not a number"), column=column, value=value
    )


def not_finite(column: str, value: str) -> Sentence:
    return sentence(
        gettext_noop("%(column)s '%(value)s' is not a finite number"), column=column, value=value
    )


def not_whole(column: str, value: str) -> Sentence:
    return sentence(
        gettext_noop("%(column)s '%(value)s' is not a whole number"), column=column, value=value
    )


def is_negative(column: str, value: str) -> Sentence:
    return sentence(gettext_noop("%(column)s '%(value)s' is negative"), column=column, value=value)


def outside_percent(column: str, value: str) -> Sentence:
    return sentence(
        gettext_noop("%(column)s '%(value)s' is outside 0–100"), column=column, value=value
    )


def is_empty(column: str) -> Sentence:
    return sentence(gettext_noop("%(column)s is empty"), column=column)


def cell_count_problem(found: int, expected: int) -> Sentence:
    return sentence(
        gettext_noop("%(found)s cells where the header has %(expected)s"),
        found=found,
        expected=expected,
    )


def plain_float(text: str) -> float | None:
    """``float(text)``, or None when it is not a number; an exponent (``5e1``, ``1E3``) is
    not read as one: no field of a telemetry file writes numbers that way, and a cell that
    does is more likely a mangled value than fifty."""
    try:
        number = float(text)
    except ValueError:
        return None
    if "e" in text or "E" in text:
        # "inf", "nan" and their spellings hold no "e"; "infinity" neither.
        return None
    return number


def is_missing(value: str) -> bool:
    """nvidia-smi writes "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]"… for a value
    it cannot read; an empty cell means the same in a generic CSV."""
    return not value or value == "N/A" or (value[0] == "[" and value[-1] == "]")


def to_utc(value: datetime, tz: tzinfo) -> datetime:
    """A naive datetime is read as wall-clock time in ``tz``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=tz)
    return value.astimezone(UTC)


def parse_timestamp(value: str, tz: tzinfo) -> datetime:
    """ISO 8601 (naive ones in ``tz``) or unix seconds, int or float, as UTC.

    Raises ValueError whose only argument is a Sentence fit for a RowError (read it with
    ``as_sentence(error.args[0])``: ``str(error)`` keeps only its English).
    """
    seconds = plain_float(value)
    if seconds is not None:
        if seconds != seconds or abs(seconds) >= _UNIX_SECONDS_CEILING:
            if seconds == seconds:
                msgid = gettext_noop(
                    "timestamp '%(value)s' is out of range (milliseconds? unix seconds expected)"
                )
            else:
                msgid = gettext_noop("timestamp '%(value)s' is out of range")
            raise ValueError(sentence(msgid, value=value))
        return datetime.fromtimestamp(seconds, UTC)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            sentence(
                gettext_noop("timestamp '%(value)s' is neither ISO 8601 nor unix seconds"),
                value=value,
            )
        ) from None
    return to_utc(parsed, tz)


def read_csv(
    source: "str | Iterable[str]",
) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """(header cells stripped, the records after it as (line number, cells)), blank lines
    dropped. ``source`` is a text or an iterable of lines that keep their ends (FileLines);
    the records are read as they are consumed.

    Raises TelemetryFormatError when the text is empty or, while the records are read,
    not CSV at all.
    """
    if isinstance(source, str):
        source = io.StringIO(source.removeprefix(BYTE_ORDER_MARK), newline="")
    reader = csv.reader(source, skipinitialspace=True)

    def records():
        try:
            for cells in reader:
                # csv yields [] for an empty line, [""] for one holding only blanks
                if cells and (len(cells) > 1 or cells[0].strip()):
                    yield reader.line_num, cells
        except csv.Error as error:
            # The csv module's reason ("unexpected end of data") is Python's own English.
            problem = sentence(gettext_noop("not valid CSV (%(reason)s)"), reason=str(error))
            raise TelemetryFormatError(on_line(reader.line_num, problem)) from None

    iterator = records()
    first = next(iterator, None)
    if first is None:
        raise TelemetryFormatError(
            sentence(gettext_noop("the file is empty: expected a CSV header line"))
        )
    return [cell.strip() for cell in first[1]], iterator
