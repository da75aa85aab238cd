"""The formats gpufleet imports: one table, read by every channel.

Each ``Format`` names its parser's ``read`` (a text or a file's lines in, a ParseResult
per chunk out) and ``detect`` (a file's head in, what it saw out), its labels, whether it
needs a column mapping or a scrape time, and which channels offer it: the upload form,
the API, the import commands and the scheduled pull. The import (``chunks``), the upload
forms' choices, the API's and the commands' ``--format`` choices and format detection all
read ``FORMATS``; so a new format is its parser's module (with ``read`` and ``detect``)
and one line below.

A format is one kind of data: GPU telemetry ("gpu") or an inference request log
("requests"), as ``ImportRun.kind`` says; "csv" names the generic CSV of either kind.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.core.sentences import Sentence, gettext_noop, sentence
from apps.telemetry.ingest.parsers import (
    ParseResult,
    TelemetryFormatError,
    azure_llm,
    dcgm,
    generic_csv,
    nvidia_smi,
    paused_gc,
)
from apps.telemetry.ingest.parsers._common import ReadOptions, merge_chunks
from apps.telemetry.ingest.parsers.detect import Detection, Detector
from apps.telemetry.ingest.parsers.detect import detect_format as detect_in_order

# Lines parsed, staged and inserted at a time by an import: memory holds one chunk's rows.
IMPORT_CHUNK_ROWS = 50_000

GPU, REQUESTS = "gpu", "requests"
# The channels a format may be offered on.
UPLOAD, API, COMMAND, PULL = "upload", "api", "command", "pull"
FILES = frozenset({UPLOAD, API, COMMAND})


@dataclass(frozen=True)
class Format:
    name: str  # as ImportRun.format keeps it and --format, the API and the form say it
    kind: str  # GPU or REQUESTS (ImportRun.kind)
    # (source, ReadOptions) → ParseResults, a chunk of lines at a time
    read: Callable[[object, ReadOptions], Iterator[ParseResult]]
    detect: Detector  # (Head) → Recognised | None
    label: str  # "dcgm-exporter scrape"
    label_in_a_sentence: str  # "a dcgm-exporter scrape": languages without articles
    choice: str  # what the upload form's list of formats says
    needs_columns: bool = False  # read through a column mapping (field=header)
    needs_scrape_time: bool = False  # its lines carry no time: the scrape's dates them
    channels: frozenset = FILES
    # Formats detected in a file that this one's parser still reads (a generic CSV
    # mapping can name an nvidia-smi CSV's columns); any other is a contradiction.
    also_reads: frozenset = frozenset()
    # Asked last by detection: it recognises what no other format claims.
    detected_last: bool = False


# fmt: off
FORMATS = (
    Format("dcgm", GPU, dcgm.read, dcgm.detect, _("dcgm-exporter scrape"), _("a dcgm-exporter scrape"), _("dcgm-exporter scrape (Prometheus text from /metrics)"), needs_scrape_time=True, channels=FILES | {PULL}),  # noqa: E501
    Format("nvidia-smi", GPU, nvidia_smi.read, nvidia_smi.detect, _("nvidia-smi CSV"), _("an nvidia-smi CSV"), "nvidia-smi --query-gpu … --format=csv", also_reads=frozenset({"csv"})),  # noqa: E501
    Format("csv", GPU, generic_csv.read_gpu, generic_csv.detect, _("generic CSV"), _("a generic CSV"), _("Generic CSV with a column mapping"), needs_columns=True, also_reads=frozenset({"nvidia-smi", "azure-llm"}), detected_last=True),  # noqa: E501
    Format("azure-llm", REQUESTS, azure_llm.read, azure_llm.detect, _("Azure LLM inference trace"), _("an Azure LLM inference trace"), _("Azure LLM inference trace (TIMESTAMP,ContextTokens,GeneratedTokens)")),  # noqa: E501
    Format("csv", REQUESTS, generic_csv.read_requests, generic_csv.detect, _("generic CSV"), _("a generic CSV"), _("Generic CSV with a column mapping"), needs_columns=True, also_reads=frozenset({"nvidia-smi", "azure-llm"}), detected_last=True),  # noqa: E501
)
# fmt: on


def formats_of(kind: str, channel: str | None = None) -> tuple[Format, ...]:
    """The formats of one kind of data, in the table's order, offered on ``channel``."""
    return tuple(
        each
        for each in FORMATS
        if each.kind == kind and (channel is None or channel in each.channels)
    )


def names_of(kind: str, channel: str | None = None) -> tuple[str, ...]:
    return tuple(each.name for each in formats_of(kind, channel))


def choices_of(kind: str, channel: str) -> list[tuple[str, str]]:
    """(name, what the upload form's list says) of the formats offered on ``channel``."""
    return [(each.name, each.choice) for each in formats_of(kind, channel)]


def format_of(kind: str, name: str) -> Format | None:
    return next((each for each in FORMATS if each.kind == kind and each.name == name), None)


def any_named(name: str) -> Format | None:
    """The first format of that name, whatever its kind (their labels are the same)."""
    return next((each for each in FORMATS if each.name == name), None)


GPU_FORMATS = names_of(GPU)
REQUEST_FORMATS = names_of(REQUESTS)
# Label of a format by name, for the pages (a run's format, a detected one).
FORMAT_LABELS = {each.name: each.label for each in FORMATS}
FORMAT_LABELS_IN_A_SENTENCE = {each.name: each.label_in_a_sentence for each in FORMATS}


def contradicts(chosen: str, detected: str | None) -> bool:
    """A file detected as ``detected`` that the chosen format's parser would refuse whole."""
    if detected is None or detected == chosen:
        return False
    format = any_named(chosen)
    return format is not None and detected not in format.also_reads


def _detectors():
    """(name, label, detect) of every format once, in the table's order, the ones that
    recognise any CSV last."""
    seen, first, last = set(), [], []
    for each in FORMATS:
        if each.name in seen:
            continue
        seen.add(each.name)
        (last if each.detected_last else first).append((each.name, str(each.label), each.detect))
    return first + last


def detect_format(head: bytes, *, whole_file: bool | None = None) -> Detection:
    """The registered format a file whose first bytes are ``head`` is in, or what it holds
    instead (apps/telemetry/ingest/parsers/detect.py)."""
    return detect_in_order(head, _detectors(), whole_file=whole_file)


def parse_column_mapping(text: str) -> dict[str, str]:
    """``timestamp=Time,device=GPU`` → {"timestamp": "Time", "device": "GPU"}."""
    mapping = {}
    for part in filter(None, (piece.strip() for piece in (text or "").split(","))):
        field_name, separator, header = part.partition("=")
        if not separator or not field_name.strip() or not header.strip():
            # A Sentence, said in the reader's language by the form (texts.translated).
            raise ValueError(
                sentence(gettext_noop("column mapping “%(part)s” is not field=header"), part=part)
            )
        mapping[field_name.strip()] = header.strip()
    return mapping


def chunks(kind: str, source, *, format: str, columns=None, tz=None, scraped_at=None):
    """The ParseResults of ``source`` (a text, or FileLines of a file) in the format's
    parser, a chunk of lines at a time. An unknown format is refused, naming the known."""
    each = format_of(kind, format)
    if each is None:
        raise TelemetryFormatError(_unknown_format(format, names_of(kind)))
    options = ReadOptions(
        columns=columns,
        tz=tz or ReadOptions.tz,
        scraped_at=scraped_at,
        chunk_rows=IMPORT_CHUNK_ROWS,
    )
    return each.read(source, options)


def gpu_chunks(source, *, format: str, columns=None, tz=None, scraped_at=None):
    """``chunks`` of GPU telemetry."""
    return chunks(GPU, source, format=format, columns=columns, tz=tz, scraped_at=scraped_at)


def request_chunks(source, *, format: str, columns=None, tz=None):
    """``chunks`` of a request log."""
    return chunks(REQUESTS, source, format=format, columns=columns, tz=tz)


def _unknown_format(format: str, known: tuple[str, ...]) -> Sentence:
    return sentence(
        gettext_noop("unknown format “%(format)s”; expected one of %(known)s"),
        format=format,
        known=str(known),
    )


def parse_gpu_text(
    text: str, *, format: str, columns=None, tz=None, scraped_at=None
) -> ParseResult:
    """The whole text parsed as one ParseResult."""
    with paused_gc():
        return merge_chunks(
            gpu_chunks(text, format=format, columns=columns, tz=tz, scraped_at=scraped_at)
        )
