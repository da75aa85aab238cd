"""Which format a file is in, from its first bytes only.

Uploads go up to hundreds of MiB and stream to disk, so detection reads
DETECTION_HEAD_BYTES and never the whole file. What it recognises:

- a dcgm-exporter scrape: a ``# HELP DCGM_…``/``# TYPE DCGM_…`` comment or a sample line
  ``DCGM_FI_…{…} value`` (also the 1.x-compatibility names ``dcgm_…``), anywhere in the
  head, since one scrape has no HELP/TYPE lines and another starts with a clock metric;
- ``nvidia-smi --query-gpu=… --format=csv`` output: a header of nvidia-smi query fields
  (``timestamp, name, pci.bus_id, … utilization.gpu [%]``), units in brackets or not;
- an Azure LLM inference trace: the header ``TIMESTAMP,ContextTokens,GeneratedTokens``;
- any other CSV with a header line: a generic CSV, read through a column mapping.

Anything else is not detected, and the Detection says what was seen instead (JSON, a
compressed archive, Prometheus metrics without DCGM names, a line that is not a CSV
header…), for a sentence naming both what was seen and what was expected.
"""

import codecs
import csv
import re
from dataclasses import dataclass

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ._common import BYTE_ORDER_MARK

# Enough for the longest nvidia-smi header of the real captures (7.6 kB, every query
# field of driver 610) and for a scrape's first HELP/TYPE blocks.
DETECTION_HEAD_BYTES = 16 * 1024

DCGM, NVIDIA_SMI, GENERIC_CSV, AZURE_LLM = "dcgm", "nvidia-smi", "csv", "azure-llm"
FORMAT_LABELS = {
    DCGM: _("dcgm-exporter scrape"),
    NVIDIA_SMI: _("nvidia-smi CSV"),
    GENERIC_CSV: _("generic CSV"),
    AZURE_LLM: _("Azure LLM inference trace"),
}
# The label as a sentence names it, article included ("an nvidia-smi CSV"): languages
# without articles translate the whole phrase.
FORMAT_LABELS_IN_A_SENTENCE = {
    DCGM: _("a dcgm-exporter scrape"),
    NVIDIA_SMI: _("an nvidia-smi CSV"),
    GENERIC_CSV: _("a generic CSV"),
    AZURE_LLM: _("an Azure LLM inference trace"),
}

_DCGM_LINE = re.compile(
    r"^(?:# (?:HELP|TYPE) (?:DCGM_|dcgm_)|(?:DCGM_FI_[A-Z0-9_]+|dcgm_[a-z0-9_]+)[{ ])",
    re.MULTILINE,
)
# Prometheus exposition lines of some other exporter: HELP/TYPE comments and samples
# ``name{labels} value [timestamp]``.
_PROMETHEUS_COMMENT = re.compile(r"^# (?:HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]*(?: |$)")
_PROMETHEUS_SAMPLE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})? \S+(?: -?\d+)?$")
# The dotted query fields nvidia-smi names in its header (``nvidia-smi --help-query-gpu``);
# two of them, or one beside timestamp and uuid, make a header nvidia-smi's.
_NVIDIA_SMI_DOTTED_FIELDS = frozenset(
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
_AZURE_LLM_HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
# A cell that holds a value rather than a column name: a number, a date or a time.
_VALUE_CELL = re.compile(r"^[-+]?(?:\d[\d.,:/ T-]*(?:Z|[+-]\d\d:?\d\d)?|\.\d+)$")
# nvidia-smi's own timestamp, "2026/01/09 13:40:12.345": a first cell like it means the
# header was left out (--format=csv,noheader).
_NVIDIA_SMI_TIMESTAMP = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?$")
_SHOWN_CHARACTERS = 60


@dataclass(frozen=True)
class Detection:
    """What the head of a file was taken for. ``format`` is one of FORMAT_LABELS' keys,
    or None when nothing fits; ``seen`` says what the head holds, in words ("nvidia-smi
    query fields timestamp, name, pci.bus_id, …"); ``headers`` are a CSV's header cells
    when its whole first line was read."""

    format: str | None
    seen: str
    headers: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return FORMAT_LABELS.get(self.format, "unknown")


def read_head(handle, size_bytes: int = DETECTION_HEAD_BYTES) -> bytes:
    """The first ``size_bytes`` of an open binary file (its position is restored)."""
    position = handle.tell()
    try:
        return handle.read(size_bytes)
    finally:
        handle.seek(position)


def detect_format(head: bytes, *, whole_file: bool | None = None) -> Detection:
    """The format of a file whose first bytes are ``head``. ``whole_file`` says the head
    is the entire file (by default: when it is shorter than DETECTION_HEAD_BYTES); the
    last line of a head cut short is not read as a complete line."""
    if whole_file is None:
        whole_file = len(head) < DETECTION_HEAD_BYTES
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
    lines = decoded.splitlines()
    if not whole_file and len(lines) > 1:
        lines = lines[:-1]  # cut at the head's end, the rest of it is unread
    first_line = next(line for line in lines if line.strip())
    first_complete = whole_file or len(lines) > 1 or decoded.endswith(("\n", "\r"))

    stripped = first_line.strip()
    if stripped[:1] in "{[":
        values = {"start": _shorten(stripped)}
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
            None, gettext("HTML or XML, starting “%(start)s”") % {"start": _shorten(stripped)}
        )
    head_text = "\n".join(lines)
    dcgm_line = _DCGM_LINE.search(head_text)
    if dcgm_line:
        shown = head_text[dcgm_line.start() :].split("\n", 1)[0]
        return Detection(
            DCGM, gettext("dcgm-exporter metrics (%(line)s)") % {"line": _shorten(shown)}
        )
    if _looks_like_prometheus(lines):
        return Detection(
            None,
            gettext("Prometheus metrics without DCGM_ names, starting “%(start)s”")
            % {"start": _shorten(stripped)},
        )
    return _detect_csv(first_line, complete=first_complete)


def _binary_kind(head: bytes) -> str:
    if head.startswith(b"\x1f\x8b"):
        return gettext("a gzip-compressed file (decompress it first)")
    if head.startswith(b"PK\x03\x04"):
        return gettext("a ZIP archive (an XLSX workbook? export it as CSV)")
    if b"\x00" in head:
        return gettext("binary data (a NUL byte in its first bytes)")
    return ""


def _looks_like_prometheus(lines: list[str]) -> bool:
    """Most non-blank lines of the head are exposition lines of one metric or another,
    and at least one is a HELP/TYPE comment or carries labels."""
    candidates = [line for line in lines[:50] if line.strip()]
    comments = [line for line in candidates if _PROMETHEUS_COMMENT.match(line)]
    samples = [line for line in candidates if _PROMETHEUS_SAMPLE.match(line)]
    typical = comments or any("{" in line for line in samples)
    return bool(typical) and (len(comments) + len(samples)) * 2 > len(candidates)


def _detect_csv(first_line: str, *, complete: bool) -> Detection:
    try:
        cells = next(csv.reader([first_line], skipinitialspace=True))
    except (csv.Error, StopIteration):
        cells = []
    cells = [cell.strip() for cell in cells]
    shown = _shorten(first_line.strip())
    if len(cells) < 2:
        return Detection(
            None, gettext("a first line “%(line)s” that is not a CSV header") % {"line": shown}
        )
    if not complete:
        cells = cells[:-1]  # the last cell was cut at the head's end
    headers = tuple(cells) if complete else ()
    query_fields = [_query_field(cell) for cell in cells]
    dotted = [field for field in query_fields if field in _NVIDIA_SMI_DOTTED_FIELDS]
    if len(dotted) >= 2 or (dotted and {"timestamp", "uuid"} <= set(query_fields)):
        named = [cell for cell in cells if _query_field(cell) in ("timestamp", "uuid", *dotted)]
        return Detection(
            NVIDIA_SMI,
            gettext("nvidia-smi query fields (%(fields)s; %(columns)s columns)")
            % {"fields": _listed(named), "columns": len(cells)},
            headers=headers,
        )
    if tuple(cells) == _AZURE_LLM_HEADER:
        return Detection(
            AZURE_LLM,
            gettext("the Azure LLM trace header %(header)s") % {"header": ", ".join(cells)},
            headers,
        )
    if _NVIDIA_SMI_TIMESTAMP.match(cells[0]):
        return Detection(
            None,
            gettext(
                "nvidia-smi output without its header line (“%(line)s”; --format=csv,noheader?)"
            )
            % {"line": shown},
        )
    if all(_VALUE_CELL.match(cell) for cell in cells if cell):
        return Detection(
            None,
            gettext("a CSV without a header line (its first line holds values: “%(line)s”)")
            % {"line": shown},
        )
    return Detection(
        GENERIC_CSV,
        gettext("a CSV with the headers %(headers)s (%(columns)s columns)")
        % {"headers": _listed(cells), "columns": len(cells)},
        headers=headers,
    )


def _query_field(cell: str) -> str:
    """``memory.used [MiB]`` → ``memory.used``, as nvidia-smi's parser reads it."""
    bracket = cell.find(" [")
    return cell[:bracket] if bracket != -1 and cell.endswith("]") else cell


def _listed(cells: list[str], limit: int = 4) -> str:
    shown = ", ".join(cells[:limit])
    return f"{shown}, …" if len(cells) > limit else shown


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARACTERS else text[: _SHOWN_CHARACTERS - 1] + "…"
