"""Training event logs → plain rows: framework-free, no database.

Two formats:

- ``jsonl``: the JSON-lines event log of Google's ``resiliency.goodput_measure``
  (AI-Hypercomputer/resiliency: the training job logs it with the library's
  ``log_event``, ``resiliency/goodput_measure/calculator.py`` reads it): one object per
  line with ``timestamp`` (ISO 8601, naive read as UTC), ``job_name``, ``event_type``
  (job_started, checkpoint_loaded, checkpoint_saved, job_terminated; user_scheduled and
  user_terminated too), ``step`` and ``node_rank`` (whole numbers, written ``40.0`` by
  some loggers). ``duration_seconds`` is gpufleet's addition for loggers that time their
  saves; other keys are ignored.
- ``csv``: any CSV with a header, read through ``columns`` (our field → the file's header).

Every problem names its line and what was expected; the importer stores nothing when
there is one (all-or-nothing).
"""

import csv
import io
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from apps.core.column_mapping import check_mapping, column_positions
from apps.core.sentences import Sentence, gettext_noop, sentence

from .goodput import EVENT_TYPES

FORMATS = ("jsonl", "csv")
CSV_REQUIRED = ("timestamp", "job_name", "event_type")
CSV_FIELDS = (*CSV_REQUIRED, "step", "node_rank", "duration_seconds")
MAX_JOB_NAME_CHARACTERS = 200
# Before this a clock was never set (nodes that report 1970).
EARLIEST_TIMESTAMP = datetime(2000, 1, 1, tzinfo=UTC)


class TrainingFormatError(ValueError):
    """The whole text is unusable (an unknown format, a wrong column mapping, no events);
    its only argument is a Sentence."""


@dataclass(frozen=True)
class EventRow:
    line_number: int
    job_name: str
    event_type: str
    timestamp: datetime  # timezone-aware UTC
    step: int | None = None
    node_rank: int | None = None
    duration_seconds: float | None = None


@dataclass(frozen=True)
class LineError:
    line_number: int
    message: Sentence


@dataclass
class ParsedEvents:
    rows: list[EventRow]
    errors: list[LineError]


def _on_line(line_number: int, problem: Sentence) -> LineError:
    return LineError(line_number, problem)


def parse_timestamp(value) -> datetime:
    """ISO 8601 (naive read as UTC) or unix seconds; ValueError with a Sentence otherwise."""
    if isinstance(value, bool) or value is None or value == "":
        raise ValueError(
            sentence(gettext_noop("timestamp is missing (ISO 8601 or unix seconds expected)"))
        )
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            seconds = None
        if seconds is None:
            try:
                parsed = datetime.fromisoformat(text)
            except ValueError:
                raise ValueError(
                    sentence(
                        gettext_noop("timestamp '%(value)s' is neither ISO 8601 nor unix seconds"),
                        value=text,
                    )
                ) from None
            parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
            return _not_too_early(parsed.astimezone(UTC), text)
    if not math.isfinite(seconds) or abs(seconds) >= 1e11:
        raise ValueError(
            sentence(
                gettext_noop("timestamp '%(value)s' is out of range (unix seconds expected)"),
                value=value,
            )
        )
    return _not_too_early(datetime.fromtimestamp(seconds, UTC), value)


def _not_too_early(timestamp: datetime, value) -> datetime:
    if timestamp < EARLIEST_TIMESTAMP:
        raise ValueError(
            sentence(
                gettext_noop("timestamp '%(value)s' is before 2000: a clock that was never set"),
                value=str(value),
            )
        )
    return timestamp


def _whole(value, field: str, problems: list[Sentence]) -> int | None:
    """A whole number ≥ 0 (``40`` or ``40.0``), None when absent."""
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or not number.is_integer():
        problems.append(
            sentence(
                gettext_noop("%(field)s '%(value)s' is not a whole number"),
                field=field,
                value=value,
            )
        )
        return None
    if number < 0:
        problems.append(
            sentence(gettext_noop("%(field)s '%(value)s' is negative"), field=field, value=value)
        )
        return None
    return int(number)


def _seconds(value, field: str, problems: list[Sentence]) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        problems.append(
            sentence(
                gettext_noop("%(field)s '%(value)s' is not a number of seconds ≥ 0"),
                field=field,
                value=value,
            )
        )
        return None
    return number


def _row(line_number: int, values: dict, errors: list[LineError]) -> EventRow | None:
    """One event from its field values; its problems go to ``errors``."""
    problems: list[Sentence] = []
    job_name = values.get("job_name")
    if not isinstance(job_name, str) or not job_name.strip():
        problems.append(sentence(gettext_noop("job_name is missing (the training job's name)")))
        job_name = ""
    elif len(job_name.strip()) > MAX_JOB_NAME_CHARACTERS:
        problems.append(
            sentence(
                gettext_noop("job_name is longer than %(limit)s characters"),
                limit=MAX_JOB_NAME_CHARACTERS,
            )
        )
    event_type = values.get("event_type")
    if event_type not in EVENT_TYPES:
        problems.append(
            sentence(
                gettext_noop("event_type '%(value)s' is not one of %(known)s"),
                value="" if event_type is None else event_type,
                known=", ".join(EVENT_TYPES),
            )
        )
    try:
        timestamp = parse_timestamp(values.get("timestamp"))
    except ValueError as error:
        problems.append(error.args[0])
        timestamp = None
    step = _whole(values.get("step"), "step", problems)
    node_rank = _whole(values.get("node_rank"), "node_rank", problems)
    duration_seconds = _seconds(values.get("duration_seconds"), "duration_seconds", problems)
    if problems:
        errors.extend(_on_line(line_number, problem) for problem in problems)
        return None
    return EventRow(
        line_number=line_number,
        job_name=job_name.strip(),
        event_type=event_type,
        timestamp=timestamp,
        step=step,
        node_rank=node_rank,
        duration_seconds=duration_seconds,
    )


def _no_events() -> TrainingFormatError:
    return TrainingFormatError(sentence(gettext_noop("the text holds no training events")))


def parse_jsonl(text: str) -> ParsedEvents:
    """The goodput_measure JSON-lines log; blank lines are skipped."""
    rows: list[EventRow] = []
    errors: list[LineError] = []
    for line_number, line in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
        if not line.strip():
            continue
        try:
            values = json.loads(line)
        except json.JSONDecodeError as error:
            errors.append(
                _on_line(
                    line_number,
                    sentence(
                        gettext_noop(
                            "not a JSON object (%(reason)s at column %(column)s); one event "
                            "per line expected, as goodput_measure writes them"
                        ),
                        reason=error.msg,
                        column=error.colno,
                    ),
                )
            )
            continue
        if not isinstance(values, dict):
            errors.append(
                _on_line(
                    line_number,
                    sentence(
                        gettext_noop(
                            "a JSON object with timestamp, job_name and event_type expected"
                        )
                    ),
                )
            )
            continue
        row = _row(line_number, values, errors)
        if row is not None:
            rows.append(row)
    if not rows and not errors:
        raise _no_events()
    return ParsedEvents(rows, errors)


def parse_csv(text: str, *, columns: dict[str, str]) -> ParsedEvents:
    """A CSV whose headers ``columns`` names (our field → header); TrainingFormatError
    when the mapping names unknown fields, lacks a required one or a header is absent."""
    check_mapping(columns, known=CSV_FIELDS, required=CSV_REQUIRED, error=TrainingFormatError)
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff")))
    try:
        header = [cell.strip() for cell in next(reader)]
    except StopIteration:
        raise _no_events() from None
    where = column_positions(header, columns, error=TrainingFormatError)
    rows: list[EventRow] = []
    errors: list[LineError] = []
    for cells in reader:
        line_number = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            errors.append(
                _on_line(
                    line_number,
                    sentence(
                        gettext_noop("%(found)s cells where the header has %(expected)s"),
                        found=len(cells),
                        expected=len(header),
                    ),
                )
            )
            continue
        values = {name: cells[index].strip() for name, index in where.items()}
        row = _row(line_number, values, errors)
        if row is not None:
            rows.append(row)
    if not rows and not errors:
        raise _no_events()
    return ParsedEvents(rows, errors)


def parse(text: str, *, format: str, columns: dict[str, str] | None = None) -> ParsedEvents:
    if format == "jsonl":
        return parse_jsonl(text)
    if format == "csv":
        return parse_csv(text, columns=columns or {})
    raise TrainingFormatError(
        sentence(
            gettext_noop("unknown format '%(format)s'; known: %(known)s"),
            format=format,
            known=", ".join(FORMATS),
        )
    )
