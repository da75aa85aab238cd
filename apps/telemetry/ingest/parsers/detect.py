"""Which format a file is in, from its first bytes only.

Uploads go up to hundreds of MiB and stream to disk, so detection reads
DETECTION_HEAD_BYTES and never the whole file. This module reads the head (``Head``) and
refuses what is no format at all, saying what was seen instead (JSON, a compressed
archive, Prometheus metrics without DCGM names, a line that is not a CSV header…); each
format's own ``detect`` (in its parser's module) says whether the head is in that format,
and the format registry (apps/telemetry/ingest/formats.py) asks them in its order, the
generic CSV last.
"""

import codecs
import csv
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from apps.core.sentences import gettext

from ._common import BYTE_ORDER_MARK

# Enough for the longest nvidia-smi header of the real captures (7.6 kB, every query
# field of driver 610) and for a scrape's first HELP/TYPE blocks.
DETECTION_HEAD_BYTES = 16 * 1024

# Prometheus exposition lines of some other exporter: HELP/TYPE comments and samples
# ``name{labels} value [timestamp]``.
_PROMETHEUS_COMMENT = re.compile(r"^# (?:HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]*(?: |$)")
_PROMETHEUS_SAMPLE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})? \S+(?: -?\d+)?$")
# A cell that holds a value rather than a column name: a number, a date or a time.
_VALUE_CELL = re.compile(r"^[-+]?(?:\d[\d.,:/ T-]*(?:Z|[+-]\d\d:?\d\d)?|\.\d+)$")
# nvidia-smi's own timestamp, "2026/01/09 13:40:12.345": a first cell like it means the
# header was left out (--format=csv,noheader).
_NVIDIA_SMI_TIMESTAMP = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?$")
_SHOWN_CHARACTERS = 60


@dataclass(frozen=True)
class Head:
    """The decoded head of a file, as the formats' detectors read it.

    ``lines``: its complete lines (the last line of a head cut short is left out);
    ``text``: those lines joined by "\\n"; ``first_line``: the first that is not blank;
    ``cell_count``: how many CSV cells that line holds; ``cells``: them, stripped, the last
    one left out when the line was cut at the head's end; ``headers``: the cells when the
    whole line was read, else empty."""

    lines: list[str]
    text: str
    first_line: str
    cell_count: int
    cells: tuple[str, ...]
    headers: tuple[str, ...]


@dataclass(frozen=True)
class Recognised:
    """What a format's detector saw, in words ("nvidia-smi query fields (…)"), and a
    CSV's header cells when its whole first line was read."""

    seen: str
    headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Detection:
    """What the head of a file was taken for. ``format`` is a registered format's name,
    or None when nothing fits; ``seen`` says what the head holds, in words ("nvidia-smi
    query fields timestamp, name, pci.bus_id, …"); ``headers`` are a CSV's header cells
    when its whole first line was read; ``label`` names the format."""

    format: str | None
    seen: str
    headers: tuple[str, ...] = ()
    label: str = "unknown"


# A format's detector: the head's Recognised when it is in that format, else None.
Detector = Callable[[Head], "Recognised | None"]


def read_head(handle, size_bytes: int = DETECTION_HEAD_BYTES) -> bytes:
    """The first ``size_bytes`` of an open binary file (its position is restored)."""
    position = handle.tell()
    try:
        return handle.read(size_bytes)
    finally:
        handle.seek(position)


def detect_format(
    head: bytes,
    detectors: Iterable[tuple[str, str, Detector]],
    *,
    whole_file: bool | None = None,
) -> Detection:
    """The format of a file whose first bytes are ``head``: the first of ``detectors``
    ((name, label, detector) in the order they are asked) that recognises it, else what
    was seen instead. ``whole_file`` says the head is the entire file (by default: when it
    is shorter than DETECTION_HEAD_BYTES); the last line of a head cut short is not read
    as a complete line."""
    if whole_file is None:
        whole_file = len(head) < DETECTION_HEAD_BYTES
    decoded = _decoded(head, whole_file)
    if isinstance(decoded, Detection):
        return decoded
    lines = decoded.splitlines()
    if not whole_file and len(lines) > 1:
        lines = lines[:-1]  # cut at the head's end, the rest of it is unread
    first_line = next(line for line in lines if line.strip())
    first_complete = whole_file or len(lines) > 1 or decoded.endswith(("\n", "\r"))
    refused = _not_text_lines(first_line.strip(), decoded)
    if refused is not None:
        return refused
    read = _head_of(lines, first_line, first_complete)
    for name, label, detector in detectors:
        recognised = detector(read)
        if recognised is not None:
            return Detection(name, recognised.seen, recognised.headers, label)
    return Detection(None, _seen_instead(read))


def _decoded(head: bytes, whole_file: bool) -> "str | Detection":
    """The head as text, or the Detection of what it holds instead of text."""
    binary = _binary_kind(head)
    if binary:
        return Detection(None, binary)
    text = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        decoded = text.decode(head, final=whole_file)
    except UnicodeDecodeError as error:
        return Detection(
            None,
            gettext("bytes that are not UTF-8 text (at byte %(byte)s)")
            % {"byte": f"{error.start:,}"},
        )
    decoded = decoded.removeprefix(BYTE_ORDER_MARK)
    if not decoded.strip():
        return Detection(
            None, gettext("an empty file") if not decoded else gettext("only blank lines")
        )
    return decoded


def _not_text_lines(stripped: str, decoded: str) -> Detection | None:
    """JSON, HTML or XML: no format gpufleet imports is either."""
    if stripped[:1] in "{[":
        values = {"start": shorten(stripped)}
        if "DCGM_" in decoded:
            return Detection(
                None,
                gettext(
                    "JSON with DCGM metric names (a Prometheus API response?), starting “%(start)s”"
                )
                % values,
            )
        return Detection(None, gettext("JSON, starting “%(start)s”") % values)
    if stripped.startswith("<"):
        return Detection(
            None, gettext("HTML or XML, starting “%(start)s”") % {"start": shorten(stripped)}
        )
    return None


def _head_of(lines: list[str], first_line: str, complete: bool) -> Head:
    try:
        cells = next(csv.reader([first_line], skipinitialspace=True))
    except (csv.Error, StopIteration):
        cells = []
    cells = [cell.strip() for cell in cells]
    cell_count = len(cells)
    if not complete:
        cells = cells[:-1]  # the last cell was cut at the head's end
    return Head(
        lines=lines,
        text="\n".join(lines),
        first_line=first_line,
        cell_count=cell_count,
        cells=tuple(cells),
        headers=tuple(cells) if complete else (),
    )


def _seen_instead(head: Head) -> str:
    """What a head no format recognised holds, in words."""
    shown = shorten(head.first_line.strip())
    if looks_like_prometheus(head.lines):
        return gettext("Prometheus metrics without DCGM_ names, starting “%(start)s”") % {
            "start": shown
        }
    if head.cell_count < 2:
        return gettext("a first line “%(line)s” that is not a CSV header") % {"line": shown}
    if head.cells and _NVIDIA_SMI_TIMESTAMP.match(head.cells[0]):
        return gettext(
            "nvidia-smi output without its header line (“%(line)s”; --format=csv,noheader?)"
        ) % {"line": shown}
    return gettext("a CSV without a header line (its first line holds values: “%(line)s”)") % {
        "line": shown
    }


def is_header_line(head: Head) -> bool:
    """The head's first line can be a CSV header: two cells or more, not Prometheus
    metrics, not nvidia-smi values without their header, not a line of values."""
    if head.cell_count < 2 or looks_like_prometheus(head.lines):
        return False
    if head.cells and _NVIDIA_SMI_TIMESTAMP.match(head.cells[0]):
        return False
    return not all(_VALUE_CELL.match(cell) for cell in head.cells if cell)


def _binary_kind(head: bytes) -> str:
    if head.startswith(b"\x1f\x8b"):
        return gettext("a gzip-compressed file (decompress it first)")
    if head.startswith(b"PK\x03\x04"):
        return gettext("a ZIP archive (an XLSX workbook? export it as CSV)")
    if b"\x00" in head:
        return gettext("binary data (a NUL byte in its first bytes)")
    return ""


def looks_like_prometheus(lines: list[str]) -> bool:
    """Most non-blank lines of the head are exposition lines of one metric or another,
    and at least one is a HELP/TYPE comment or carries labels."""
    candidates = [line for line in lines[:50] if line.strip()]
    comments = [line for line in candidates if _PROMETHEUS_COMMENT.match(line)]
    samples = [line for line in candidates if _PROMETHEUS_SAMPLE.match(line)]
    typical = comments or any("{" in line for line in samples)
    return bool(typical) and (len(comments) + len(samples)) * 2 > len(candidates)


def listed(cells, limit: int = 4) -> str:
    cells = list(cells)
    shown = ", ".join(cells[:limit])
    return f"{shown}, …" if len(cells) > limit else shown


def shorten(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARACTERS else text[: _SHOWN_CHARACTERS - 1] + "…"
