"""Framework-free telemetry parsers: raw text in, plain rows and line-numbered errors out.

No Django imports and no database: the importer (apps/telemetry/ingest/importer.py) decides
what to store. Every parser returns a ParseResult whose ``rows`` passed every check and
whose ``errors`` name the line and the reason; a file that cannot be read at all raises
TelemetryFormatError. Each ``parse_*`` has an ``iter_*`` twin that reads a text or a file's
lines (FileLines) and yields a ParseResult per chunk of lines, so that an import of a large
file holds one chunk of rows at a time.
"""

from . import azure_llm, dcgm, generic_csv, nvidia_smi
from ._common import CHUNK_ROWS, EARLIEST_TIMESTAMP, NUL_SENTENCE, FileLines, paused_gc
from .azure_llm import iter_azure_llm, parse_azure_llm
from .dcgm import iter_dcgm, parse_dcgm
from .generic_csv import (
    GPU_CSV_FIELDS,
    REQUEST_CSV_FIELDS,
    iter_gpu_csv,
    iter_request_csv,
    parse_gpu_csv,
    parse_request_csv,
)
from .nvidia_smi import iter_nvidia_smi_csv, parse_nvidia_smi_csv
from .rows import (
    METRIC_FIELDS,
    DeviceKey,
    GpuSampleRow,
    ParseResult,
    RequestRow,
    RowError,
    TelemetryFormatError,
    has_any_metric,
)

__all__ = [
    "azure_llm",
    "dcgm",
    "generic_csv",
    "nvidia_smi",
    "CHUNK_ROWS",
    "EARLIEST_TIMESTAMP",
    "GPU_CSV_FIELDS",
    "METRIC_FIELDS",
    "NUL_SENTENCE",
    "REQUEST_CSV_FIELDS",
    "DeviceKey",
    "FileLines",
    "GpuSampleRow",
    "ParseResult",
    "RequestRow",
    "RowError",
    "TelemetryFormatError",
    "has_any_metric",
    "iter_azure_llm",
    "iter_dcgm",
    "iter_gpu_csv",
    "iter_nvidia_smi_csv",
    "iter_request_csv",
    "parse_azure_llm",
    "parse_dcgm",
    "parse_gpu_csv",
    "parse_nvidia_smi_csv",
    "parse_request_csv",
    "paused_gc",
]
