"""Azure LLM inference traces (AzurePublicDataset, 2023) → RequestRow.

``TIMESTAMP,ContextTokens,GeneratedTokens`` with CRLF line ends, no final newline and
7-digit fractional seconds without a time zone (``2023-11-16 18:15:46.6805900``), read as
UTC. Python keeps microseconds, so the 7th digit is dropped; it is 0 throughout the
published files. Format: Azure/AzurePublicDataset, AzureLLMInferenceDataset2023.md.
"""

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from apps.core.sentences import gettext, gettext_noop, sentence

from ._common import (
    CHUNK_ROWS,
    EARLIEST_TIMESTAMP,
    LineReader,
    ReadOptions,
    future_error,
    is_negative,
    latest_allowed,
    lines_without_ends,
    merge_chunks,
    not_whole,
    past_error,
    pausing_gc,
    read_in_chunks,
)
from .detect import Head, Recognised
from .rows import ParseResult, RequestRow, RowError, TelemetryFormatError, line_error, on_line

HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


def detect(head: Head) -> Recognised | None:
    """The trace's header ``TIMESTAMP,ContextTokens,GeneratedTokens``."""
    if head.cells != HEADER:
        return None
    return Recognised(
        gettext("the Azure LLM trace header %(header)s") % {"header": ", ".join(head.cells)},
        head.headers,
    )


def _tokens(text: str, column: str, line_number: int, errors: list[RowError]) -> int | None:
    try:
        tokens = int(text)
    except ValueError:
        errors.append(line_error(line_number, not_whole(column, text)))
        return None
    if tokens < 0:
        errors.append(line_error(line_number, is_negative(column, text)))
        return None
    return tokens


def read(source: str | Iterable[str], options: ReadOptions) -> Iterator[ParseResult]:
    """``iter_azure_llm`` as the format registry calls it (the trace's times are UTC)."""
    return iter_azure_llm(source, chunk_rows=options.chunk_rows)


@pausing_gc
def parse_azure_llm(text: str, *, now: datetime | None = None) -> ParseResult:
    """``iter_azure_llm`` of a whole text as one ParseResult."""
    return merge_chunks(iter_azure_llm(text, now=now))


def iter_azure_llm(
    source: str | Iterable[str], *, now: datetime | None = None, chunk_rows: int = CHUNK_ROWS
) -> Iterator[ParseResult]:
    """One RequestRow per line: ContextTokens → input_tokens, GeneratedTokens →
    output_tokens, count 1, no latency or status (the trace has neither); a ParseResult
    per ``chunk_rows`` lines of ``source``, a text or an iterable of lines (FileLines).

    Errors (the line is left out): not three cells, a timestamp that does not parse, is
    before 2000 or is more than 1 day after ``now``, a token count that is not a whole number ≥ 0.
    Raises TelemetryFormatError when the first line is not the trace's header, or when
    no data row follows it.
    """
    now, latest = latest_allowed(now)
    lines = iter(lines_without_ends(source))
    first_line = next(lines, "")
    header = tuple(cell.strip() for cell in first_line.split(","))
    if header != HEADER:
        raise TelemetryFormatError(
            on_line(
                1,
                sentence(
                    gettext_noop("expected the Azure LLM trace header %(header)s, found %(found)s"),
                    header=",".join(HEADER),
                    found=repr(first_line.strip()[:200]),
                ),
            )
        )
    return read_in_chunks(enumerate(lines, 2), _TraceReader(now, latest, chunk_rows))


class _TraceReader(LineReader):
    """One RequestRow per line after the header."""

    def __init__(self, now: datetime, latest: datetime, chunk_rows: int):
        super().__init__(chunk_rows, first_line=2)
        self.now, self.latest = now, latest
        self.data_rows = 0

    def read(self, line_number: int, line: str) -> None:
        cells = line.split(",")
        if len(cells) != 3:
            if not line.strip():
                return
            self.errors.append(
                line_error(
                    line_number,
                    sentence(
                        gettext_noop("%(found)s cells where 3 are expected"), found=len(cells)
                    ),
                )
            )
            self.data_rows += 1
            return
        self.data_rows += 1
        timestamp_text, context_text, generated_text = cells
        timestamp = self._timestamp(line_number, timestamp_text.strip())
        if timestamp is None:
            return
        errors = self.errors
        error_count = len(errors)
        input_tokens = _tokens(context_text.strip(), "ContextTokens", line_number, errors)
        output_tokens = _tokens(generated_text.strip(), "GeneratedTokens", line_number, errors)
        if len(errors) != error_count:
            return
        if timestamp > self.latest:
            errors.append(future_error(line_number, timestamp, self.now))
            return
        if timestamp < EARLIEST_TIMESTAMP:
            errors.append(past_error(line_number, timestamp))
            return
        self.rows.append(RequestRow(line_number, timestamp, input_tokens, output_tokens))

    def _timestamp(self, line_number: int, text: str) -> datetime | None:
        """The line's time, read as UTC unless it says its zone; None after an error."""
        try:
            timestamp = datetime.fromisoformat(text)
        except ValueError:
            self.errors.append(
                line_error(
                    line_number,
                    sentence(
                        gettext_noop(
                            "%(column)s '%(value)s' is not like 2023-11-16 18:15:46.6805900"
                        ),
                        column="TIMESTAMP",
                        value=text,
                    ),
                )
            )
            return None
        return (
            timestamp.replace(tzinfo=UTC) if timestamp.tzinfo is None else timestamp.astimezone(UTC)
        )

    def last_chunk(self, read_any: bool) -> ParseResult:
        # Blank lines are no data rows: a header followed by them is refused too.
        return super().last_chunk(read_any and self.data_rows > 0)
