"""FORMATS"""

from datetime import UTC

from django.utils import timezone

from apps.core.sentences import Sentence, gettext_noop, sentence
from apps.telemetry.ingest import parsers
from apps.telemetry.ingest.parsers import paused_gc
from apps.telemetry.ingest.parsers._common import merge_chunks

# Lines parsed, staged and inserted at a time by an import: memory holds one chunk's rows.
IMPORT_CHUNK_ROWS = 50_000

GPU_FORMATS = ("dcgm", "nvidia-smi", "csv")
REQUEST_FORMATS = ("azure-llm", "csv")


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


def gpu_chunks(source, *, format: str, columns=None, tz=None, scraped_at=None):
    """The ParseResults of ``source`` (a text, or FileLines of a file) in the format's
    parser (apps/telemetry/parsers/), a chunk of lines at a time."""
    tz = tz or UTC
    if format == "dcgm":
        return parsers.iter_dcgm(
            source, scraped_at=scraped_at or timezone.now(), chunk_rows=IMPORT_CHUNK_ROWS
        )
    if format == "nvidia-smi":
        return parsers.iter_nvidia_smi_csv(source, tz=tz, chunk_rows=IMPORT_CHUNK_ROWS)
    if format == "csv":
        if not columns:
            raise parsers.TelemetryFormatError(
                sentence(
                    gettext_noop(
                        "a generic CSV needs a column mapping: "
                        "timestamp=…,device=…,utilization_pct=…"
                    )
                )
            )
        return parsers.iter_gpu_csv(source, columns=columns, tz=tz, chunk_rows=IMPORT_CHUNK_ROWS)
    raise parsers.TelemetryFormatError(_unknown_format(format, GPU_FORMATS))


def request_chunks(source, *, format: str, columns=None, tz=None):
    """As ``gpu_chunks``, for request logs."""
    if format == "azure-llm":
        return parsers.iter_azure_llm(source, chunk_rows=IMPORT_CHUNK_ROWS)
    if format == "csv":
        if not columns:
            raise parsers.TelemetryFormatError(
                sentence(
                    gettext_noop(
                        "a generic request CSV needs a column mapping: "
                        "timestamp=…,input_tokens=…,output_tokens=…"
                    )
                )
            )
        return parsers.iter_request_csv(
            source, columns=columns, tz=tz or UTC, chunk_rows=IMPORT_CHUNK_ROWS
        )
    raise parsers.TelemetryFormatError(_unknown_format(format, REQUEST_FORMATS))


def _unknown_format(format: str, known: tuple[str, ...]) -> Sentence:
    return sentence(
        gettext_noop("unknown format “%(format)s”; expected one of %(known)s"),
        format=format,
        known=str(known),
    )


def parse_gpu_text(text: str, *, format: str, columns=None, tz=None, scraped_at=None):
    """The whole text parsed as one ParseResult."""
    with paused_gc():
        return merge_chunks(
            gpu_chunks(text, format=format, columns=columns, tz=tz, scraped_at=scraped_at)
        )
