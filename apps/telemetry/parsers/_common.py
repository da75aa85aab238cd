"""Helpers shared by the parsers: timestamps, numbers, missing-value markers, CSV headers."""

import csv
import functools
import gc
import io
from datetime import UTC, datetime, timedelta, tzinfo

from .rows import RowError, TelemetryFormatError

# A sample stamped further ahead than this is refused: a clock or time-zone mistake that
# would otherwise land in hours that have not happened yet.
MAX_FUTURE = timedelta(days=1)
# A sample stamped before this is refused: a node whose clock was never set reports 1970.
# The same instant as apps.pools.models.EARLIEST_SERVICE_START, kept here because the
# parsers import no Django.
EARLIEST_TIMESTAMP = datetime(2000, 1, 1, tzinfo=UTC)

# Unix seconds this large are surely milliseconds (10^11 s is the year 5138).
_UNIX_SECONDS_CEILING = 1e11


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
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return parse(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

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
    return RowError(
        line_number,
        f"line {line_number}: timestamp {timestamp.isoformat()} is more than 1 day in the "
        f"future (now is {now.replace(microsecond=0).isoformat()})",
    )


def past_error(line_number: int, timestamp: datetime, what: str = "timestamp") -> RowError:
    """``what`` names where the instant came from when it is not the line's own column."""
    return RowError(
        line_number,
        f"line {line_number}: {what} {timestamp.astimezone(UTC):%Y-%m-%d %H:%M:%S} is before "
        f"{EARLIEST_TIMESTAMP:%Y-%m-%d}: the node's clock is not set",
    )


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

    Raises ValueError with a message fit for a RowError.
    """
    try:
        seconds = float(value)
    except ValueError:
        seconds = None
    if seconds is not None:
        if seconds != seconds or abs(seconds) >= _UNIX_SECONDS_CEILING:
            hint = " (milliseconds? unix seconds expected)" if seconds == seconds else ""
            raise ValueError(f"timestamp '{value}' is out of range{hint}")
        return datetime.fromtimestamp(seconds, UTC)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"timestamp '{value}' is neither ISO 8601 nor unix seconds") from None
    return to_utc(parsed, tz)


def read_csv(text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(header cells stripped, [(line number, cells)…]) with blank lines dropped.

    Raises TelemetryFormatError when the text is empty or not CSV at all.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)
    records: list[tuple[int, list[str]]] = []
    append = records.append
    try:
        for cells in reader:
            # csv yields [] for an empty line, [""] for one holding only blanks
            if cells and (len(cells) > 1 or cells[0].strip()):
                append((reader.line_num, cells))
    except csv.Error as error:
        raise TelemetryFormatError(f"line {reader.line_num}: not valid CSV ({error})") from None
    if not records:
        raise TelemetryFormatError("the file is empty: expected a CSV header line")
    header = [cell.strip() for cell in records[0][1]]
    return header, records[1:]


def describe_headers(header: list[str], limit: int = 40) -> str:
    shown = ", ".join(repr(name) for name in header[:limit])
    if len(header) > limit:
        shown += f", … ({len(header)} in all)"
    return shown
