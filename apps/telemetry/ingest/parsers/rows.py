"""Plain rows that every telemetry parser returns, and the errors they report.

Framework-free: the parsers turn raw text into these dataclasses and never touch a database;
the importer decides what to store, skip or reject.
"""

from dataclasses import MISSING, dataclass, fields
from datetime import datetime

from apps.core.sentences import Sentence, as_sentence, gettext_noop, sentence, to_data


@dataclass(frozen=True)
class DeviceKey:
    """A GPU, or a MIG slice of one (the slice is the parent's UUID plus its GPU instance id)."""

    uuid: str  # "GPU-…" as reported
    gpu_instance_id: int | None = None  # MIG GPU_I_ID; None for a whole GPU


@dataclass(frozen=True)
class GpuSampleRow:
    """One device's readings at one instant.

    A row can carry no usable metric at all, e.g. a MIG slice scraped from an exporter that
    has no DCGM_FI_PROF_GR_ENGINE_ACTIVE (DCGM_FI_DEV_GPU_UTIL is never reported per slice),
    or an nvidia-smi row of a MIG-enabled GPU, whose ``utilization.gpu`` is ``[N/A]``. Such
    rows are still returned; the importer decides. Detect them with
    ``row.utilization_pct is None``, or "nothing measured at all" with
    ``not has_any_metric(row)``.
    """

    line_number: int  # where it came from (first line of the sample for dcgm)
    device: DeviceKey
    timestamp: datetime  # timezone-aware UTC
    hostname: str = ""
    gpu_index: int | None = None
    model_name: str = ""
    driver_version: str = ""
    mig_profile: str = ""
    # nvidia-smi ``mig.mode.current`` "Enabled": the GPU is split into MIG slices, so its
    # ``utilization.gpu`` is [N/A], unmeasurable rather than idle. False when not reported.
    mig_mode_enabled: bool = False
    # DCGM_FI_PROF_GR_ENGINE_ACTIVE×100 preferred, else DCGM_FI_DEV_GPU_UTIL;
    # nvidia-smi utilization.gpu
    utilization_pct: float | None = None
    memory_used_mib: float | None = None
    memory_free_mib: float | None = None
    memory_reserved_mib: float | None = None
    power_w: float | None = None
    energy_mj: float | None = None  # DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ counter)
    temperature_c: float | None = None
    memory_temperature_c: float | None = None
    pod: str = ""
    namespace: str = ""
    container: str = ""


_GPU_ROW_DEFAULTS = {
    field.name: field.default for field in fields(GpuSampleRow) if field.default is not MISSING
}
_new_object = object.__new__


def gpu_sample_row(**values) -> GpuSampleRow:
    """``GpuSampleRow(**values)``, built the fast way for the parsers' per-row loops.

    A frozen dataclass's ``__init__`` sets each of its 21 fields through
    ``object.__setattr__``; filling the instance's ``__dict__`` with the defaults and
    the values given makes an equal row in a fraction of the time, which counts in a loop
    run once per row of every file. The row stays frozen: its attributes cannot be
    assigned.
    Callers pass every required field and only field names (checked in tests, not here).
    """
    row = _new_object(GpuSampleRow)
    attributes = row.__dict__
    attributes.update(_GPU_ROW_DEFAULTS)
    attributes.update(values)
    return row


# The measured (numeric) fields of a GpuSampleRow, as opposed to its identity and labels.
METRIC_FIELDS = (
    "utilization_pct",
    "memory_used_mib",
    "memory_free_mib",
    "memory_reserved_mib",
    "power_w",
    "energy_mj",
    "temperature_c",
    "memory_temperature_c",
)


def has_any_metric(row: GpuSampleRow) -> bool:
    """True when at least one measured field of the row is present (not None)."""
    return any(getattr(row, field_name) is not None for field_name in METRIC_FIELDS)


@dataclass(frozen=True)
class RequestRow:
    """One line of an inference request log (``count`` requests sharing these values)."""

    line_number: int
    timestamp: datetime  # timezone-aware UTC
    input_tokens: int
    output_tokens: int
    latency_ms: float | None = None
    status: str = ""
    count: int = 1


@dataclass(frozen=True)
class RowError:
    """A rejected row or line; ``message`` starts with "line N: " and says why. It may be
    a ``Sentence`` (apps/core/sentences.py), stored with its msgid so the import's page
    says it in its reader's language."""

    line_number: int
    message: str  # e.g. "line 7: utilization.gpu '140 %' is outside 0–100"

    def as_data(self) -> dict:
        """As an import run keeps it (``ImportRun.errors``)."""
        data = {"line": self.line_number, "message": str(self.message)}
        if isinstance(self.message, Sentence):
            data["message_parts"] = to_data(self.message)
        return data


def on_line(line_number: int, problem: str) -> Sentence:
    """ "line N: <problem>", with ``problem`` a ``Sentence`` where it can be translated."""
    return sentence(
        gettext_noop("line %(line)s: %(problem)s"), line=line_number, problem=as_sentence(problem)
    )


def line_error(line_number: int, problem: str) -> RowError:
    """The RowError "line N: <problem>" (``on_line``)."""
    return RowError(line_number, on_line(line_number, problem))


@dataclass
class ParseResult:
    """Rows that passed every check, and one error per problem found.

    A row with any error is left out of ``rows`` (its errors say why), so that an importer
    can either reject the whole file when ``errors`` is not empty or keep ``rows`` and
    report each error.
    """

    rows: list
    errors: list[RowError]


class TelemetryFormatError(ValueError):
    """The whole file is unusable (wrong format, missing required column): the message says
    why, a ``Sentence`` where it can be said in the reader's language."""

    @property
    def sentence(self) -> str:
        """The message as raised (a ``Sentence`` keeps its msgid; ``str()`` would not)."""
        return self.args[0] if len(self.args) == 1 else str(self)
