"""Framework-free telemetry parsers: raw text in, plain rows and line-numbered errors out.

No Django imports and no database: the importer (services, commands, tasks) decides what
to store. Every parser returns a ParseResult whose ``rows`` passed every check and whose
``errors`` name the line and the reason; a file that cannot be read at all raises
TelemetryFormatError.
"""

from ._common import EARLIEST_TIMESTAMP
from .azure_llm import parse_azure_llm
from .dcgm import parse_dcgm
from .generic_csv import GPU_CSV_FIELDS, REQUEST_CSV_FIELDS, parse_gpu_csv, parse_request_csv
from .nvidia_smi import parse_nvidia_smi_csv
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
    "EARLIEST_TIMESTAMP",
    "GPU_CSV_FIELDS",
    "METRIC_FIELDS",
    "REQUEST_CSV_FIELDS",
    "DeviceKey",
    "GpuSampleRow",
    "ParseResult",
    "RequestRow",
    "RowError",
    "TelemetryFormatError",
    "has_any_metric",
    "parse_azure_llm",
    "parse_dcgm",
    "parse_gpu_csv",
    "parse_nvidia_smi_csv",
    "parse_request_csv",
]
