"""The PromQL of the hourly-aggregates pull (framework-free): label filters checked and
written back, and the queries that turn DCGM series into device-hours.

Label filters are PromQL label matchers (Prometheus docs, "Querying basics", "Time series
selectors"): ``name op "value"`` separated by commas, op one of ``=``, ``!=``, ``=~``,
``!~``, the value a double-quoted string with PromQL's escapes; regular expressions are
fully anchored RE2, checked here with Python's ``re``, which accepts what RE2 does for the
patterns people write for labels. ``__name__`` cannot be filtered on: the queries choose
the metrics.

Hour windows. gpufleet's hour is [h, h + 1 h); a range selector ``[1h]`` evaluated at T
covers (T − 1 h, T] in VictoriaMetrics and Prometheus 3.x (Prometheus docs, "Range vector
selectors": left-open since 3.0), [T − 1 h, T] in Prometheus 2.x. Evaluated at
T = h + 1 h − 1 ms it covers (h − 1 ms, h + 1 h − 1 ms], which for millisecond timestamps
(both servers store milliseconds) is exactly [h, h + 1 h): every sample lands in exactly
one hour, the common sample stamped on the hour (h:00:00.000) in hour h. Prometheus 2.x
also counts a sample stamped at the very last millisecond of the previous hour.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

HOUR = timedelta(hours=1)
# The evaluation instant of hour h: its last millisecond.
EVALUATION_OFFSET = HOUR - timedelta(milliseconds=1)

# The labels that identify a GPU (UUID; gpu + Hostname for exporters without UUID), its
# MIG slice and its pod (dcgm-exporter's pod labels, or exported_* when Prometheus
# renamed them; job and service tell the exporter's own pod from a workload's:
# apps/telemetry/pull/prometheus.py, _workload_labels), plus what the GPU says about itself.
GROUP_LABELS = (
    "UUID",
    "uuid",
    "gpu",
    "Hostname",
    "GPU_I_ID",
    "GPU_I_PROFILE",
    "modelName",
    "namespace",
    "pod",
    "container",
    "exported_namespace",
    "exported_pod",
    "exported_container",
    "job",
    "service",
)

ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"  # fraction 0–1, per MIG slice too
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"  # percent 0–100, whole GPUs only
FB_USED = "DCGM_FI_DEV_FB_USED"  # MiB
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # mJ counter since boot
POWER = "DCGM_FI_DEV_POWER_USAGE"  # W


@dataclass(frozen=True)
class HourlyQuery:
    """One query of the pull: ``field`` is where its value goes on the device-hour."""

    field: str
    promql: str


def hourly_queries(label_filters: str = "") -> list[HourlyQuery]:
    """The seven queries of an hourly pull, each grouped by ``GROUP_LABELS``.

    Duplicated series (one exporter scraped by two jobs) fall into separate groups by
    ``job``; the pull keeps one of them. Within a group ``max``/``avg`` of one series is
    the series itself; ``avg`` for means, ``max`` for counts, peaks and counter increases,
    so that a duplicate never adds up.
    """
    matchers = format_label_filters(parse_label_filters(label_filters))
    by = ", ".join(GROUP_LABELS)

    def selector(metric: str) -> str:
        return f"{metric}{{{matchers}}}[1h]" if matchers else f"{metric}[1h]"

    return [
        HourlyQuery(
            "engine_samples", f"max by ({by}) (count_over_time({selector(ENGINE_ACTIVE)}))"
        ),
        HourlyQuery("engine_mean", f"avg by ({by}) (avg_over_time({selector(ENGINE_ACTIVE)}))"),
        HourlyQuery("util_samples", f"max by ({by}) (count_over_time({selector(GPU_UTIL)}))"),
        HourlyQuery("util_mean", f"avg by ({by}) (avg_over_time({selector(GPU_UTIL)}))"),
        HourlyQuery("max_memory_used_mib", f"max by ({by}) (max_over_time({selector(FB_USED)}))"),
        HourlyQuery("energy_mj", f"max by ({by}) (increase({selector(ENERGY)}))"),
        HourlyQuery("power_w", f"avg by ({by}) (avg_over_time({selector(POWER)}))"),
    ]


def evaluation_instant(hour: datetime) -> datetime:
    """The instant whose ``[1h]`` window is exactly the hour [hour, hour + 1 h)."""
    return hour + EVALUATION_OFFSET


def hour_of_instant(timestamp_ms: int) -> datetime:
    """The hour whose evaluation instant is ``timestamp_ms`` (ms since the epoch)."""
    return datetime.fromtimestamp((timestamp_ms + 1) / 1000, UTC) - HOUR


# --- Label filters ------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATOR = re.compile(r"=~|!~|!=|=")
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}


class LabelFilterError(ValueError):
    """Why a label filter text is not PromQL label matchers, in a sentence."""


@dataclass(frozen=True)
class LabelMatcher:
    name: str
    operator: str
    value: str


def parse_label_filters(text: str) -> list[LabelMatcher]:
    """``cluster="a",namespace=~"ml-.*"`` → matchers; raises LabelFilterError naming the
    position and what was expected. Braces around the whole text are accepted."""
    text = (text or "").strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    matchers: list[LabelMatcher] = []
    position = 0

    def skip_spaces():
        nonlocal position
        while position < len(text) and text[position].isspace():
            position += 1

    def fail(expected: str):
        found = text[position : position + 10] or "the end"
        raise LabelFilterError(
            f"expected {expected} at character {position + 1} (found “{found}”); write "
            'label matchers such as cluster="a",namespace=~"ml-.*"'
        )

    skip_spaces()
    while position < len(text):
        name = _NAME.match(text, position)
        if name is None:
            fail("a label name")
        position = name.end()
        skip_spaces()
        operator = _OPERATOR.match(text, position)
        if operator is None:
            fail("=, !=, =~ or !~")
        position = operator.end()
        skip_spaces()
        if position >= len(text) or text[position] != '"':
            fail("a value in double quotes")
        position += 1
        value = []
        while True:
            if position >= len(text):
                fail('the closing " of the value')
            char = text[position]
            if char == "\\":
                escaped = text[position + 1 : position + 2]
                if escaped not in _ESCAPES:
                    fail('an escape \\", \\\\, \\n, \\t or \\r')
                value.append(_ESCAPES[escaped])
                position += 2
                continue
            position += 1
            if char == '"':
                break
            value.append(char)
        matcher = LabelMatcher(name.group(), operator.group(), "".join(value))
        if matcher.name == "__name__":
            raise LabelFilterError(
                "__name__ cannot be filtered on: the pull chooses the DCGM metrics itself"
            )
        if matcher.operator in ("=~", "!~"):
            try:
                re.compile(matcher.value)
            except (re.error, OverflowError, RecursionError) as error:
                raise LabelFilterError(
                    f"the regular expression of {matcher.name} is not valid ({error})"
                ) from None
        matchers.append(matcher)
        skip_spaces()
        if position < len(text):
            if text[position] != ",":
                fail("a comma between matchers")
            position += 1
            skip_spaces()
    return matchers


def _quoted(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped.replace(chr(9), chr(92) + "t").replace(chr(13), chr(92) + "r")}"'


def format_label_filters(matchers: list[LabelMatcher]) -> str:
    """The matchers as PromQL, in one canonical spelling: ``a="x",b=~"y.*"``."""
    return ",".join(f"{m.name}{m.operator}{_quoted(m.value)}" for m in matchers)
