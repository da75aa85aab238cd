"""dcgm-exporter ``/metrics`` scrapes (Prometheus text exposition format) → GpuSampleRow.

One pass over the lines, no regex per line. What makes it fast:

- a line's metric name is looked up before anything else, and the ~80% of lines that carry
  metrics we do not store (clocks, PCIe, ECC, HELP/TYPE comments…) are dropped right there;
- every metric of one GPU repeats the same label set, so the text between ``{`` and the
  last ``}`` of the line is parsed once and then found in a dict;
- the ``}`` closing the label set is the *last* one on the line, because only a number and
  an optional integer timestamp may follow it, so label values holding ``}`` or ``,``
  need no quote-aware scan on the hot path.

Format reference: Prometheus "Exposition formats", text-based format
(https://prometheus.io/docs/instrumenting/exposition_formats/); label names and DCGM field
semantics from NVIDIA dcgm-exporter (``etc/default-counters.csv``,
``etc/1.x-compatibility-metrics.csv``) and DCGM's ``dcgm_structs.h`` (blank sentinels).
"""

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta

from apps.core.sentences import Sentence, gettext, gettext_noop, sentence

from ._common import (
    CHUNK_ROWS,
    EARLIEST_TIMESTAMP,
    SCRAPE_TIME_WORD,
    LineReader,
    ReadOptions,
    aware_utc,
    future_error,
    latest_allowed,
    merge_chunks,
    not_a_number,
    numbered_lines,
    outside_percent,
    past_error,
    pausing_gc,
    read_in_chunks,
)
from .detect import Head, Recognised, shorten
from .rows import (
    DeviceKey,
    GpuSampleRow,
    ParseResult,
    RowError,
    TelemetryFormatError,
    gpu_sample_row,
    line_error,
    on_line,
)

# Slots of a sample's readings, in this order.
_GPU_UTIL, _GR_ENGINE_ACTIVE, _FB_USED, _FB_FREE, _FB_RESERVED = 0, 1, 2, 3, 4
_POWER, _ENERGY, _GPU_TEMP, _MEMORY_TEMP = 5, 6, 7, 8
_SLOT_COUNT = 9
_FIRST_SLOT = 3  # a sample record is [first line, context, has_error, *readings]

_METRIC_SLOTS = {
    "DCGM_FI_DEV_GPU_UTIL": _GPU_UTIL,
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": _GR_ENGINE_ACTIVE,
    "DCGM_FI_DEV_FB_USED": _FB_USED,
    "DCGM_FI_DEV_FB_FREE": _FB_FREE,
    "DCGM_FI_DEV_FB_RESERVED": _FB_RESERVED,
    "DCGM_FI_DEV_POWER_USAGE": _POWER,
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": _ENERGY,
    "DCGM_FI_DEV_GPU_TEMP": _GPU_TEMP,
    "DCGM_FI_DEV_MEMORY_TEMP": _MEMORY_TEMP,
    # dcgm-exporter's 1.x-compatibility names (etc/1.x-compatibility-metrics.csv), which
    # come with the old label names uuid/pod_name/pod_namespace/container_name. Same DCGM
    # fields, same units: gr_engine_active is still a 0–1 ratio despite its "(in %)" help.
    "dcgm_gpu_utilization": _GPU_UTIL,
    "dcgm_fi_prof_gr_engine_active": _GR_ENGINE_ACTIVE,
    "dcgm_fb_used": _FB_USED,
    "dcgm_fb_free": _FB_FREE,
    "dcgm_power_usage": _POWER,
    "dcgm_total_energy_consumption": _ENERGY,
    "dcgm_gpu_temp": _GPU_TEMP,
    "dcgm_memory_temp": _MEMORY_TEMP,
}
METRIC_NAMES = tuple(_METRIC_SLOTS)

# DCGM reports "no value" in-band. Int64 fields: DCGM_INT64_BLANK = 0x7ffffffffffffff0 and
# NOT_FOUND/NOT_SUPPORTED/NOT_PERMISSIONED = BLANK+1…+3 (9223372036854775794 is the
# "not supported" one seen in scrapes); anything that large is no reading. Double fields
# (power, GR_ENGINE_ACTIVE): DCGM_FP64_BLANK = 2^47 = 140737488355328.0, and +1…+3.
_INT64_SENTINEL_FLOOR = 9.2e18
_FP64_SENTINELS = frozenset(float(2**47 + offset) for offset in range(4))
_FP64_SENTINEL_MIN = float(2**47)
_NEGATIVE_INFINITY = float("-inf")

# One match per label pair; the value is matched as runs of plain characters between
# escapes ("unrolled loop"), not one alternation per character.
_LABEL_PAIR = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"([^"\\]*(?:\\.[^"\\]*)*)"\s*(?:,|$)')
_ESCAPE = re.compile(r'\\[\\n"]')
_ESCAPES = {"\\\\": "\\", "\\n": "\n", '\\"': '"'}

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Line timestamps are milliseconds; a GPU sample from before 2000 is a unit mistake (seconds),
# and year 10000 is where Python's datetime ends.
_EARLIEST_MS = int(EARLIEST_TIMESTAMP.timestamp()) * 1000
_YEAR_10000_MS = 253_402_300_800_000

# What is wrong with a line's own timestamp, said after it.
_NOT_MILLISECONDS = sentence(gettext_noop("is not a whole number of milliseconds"))
_SECONDS_NOT_MILLISECONDS = sentence(
    gettext_noop("is before 2000: seconds instead of milliseconds?")
)
_OUT_OF_RANGE = sentence(gettext_noop("is out of range"))


# A line of a dcgm-exporter scrape, anywhere in a file's head: a HELP/TYPE comment of a DCGM
# metric or a sample ``DCGM_FI_…{…} value`` (also the 1.x-compatibility names ``dcgm_…``),
# since one scrape has no HELP/TYPE lines and another starts with a clock metric.
_DCGM_LINE = re.compile(
    r"^(?:# (?:HELP|TYPE) (?:DCGM_|dcgm_)|(?:DCGM_FI_[A-Z0-9_]+|dcgm_[a-z0-9_]+)[{ ])",
    re.MULTILINE,
)


def detect(head: Head) -> Recognised | None:
    """A head holding a dcgm-exporter line, named by the first one."""
    dcgm_line = _DCGM_LINE.search(head.text)
    if dcgm_line is None:
        return None
    shown = head.text[dcgm_line.start() :].split("\n", 1)[0]
    return Recognised(gettext("dcgm-exporter metrics (%(line)s)") % {"line": shorten(shown)})


def _metric_error(line_number: int, metric: str, problem: Sentence) -> RowError:
    """ "line N: <metric> <problem>", the problem said after the metric's name."""
    return line_error(
        line_number,
        sentence(gettext_noop("%(metric)s %(problem)s"), metric=metric, problem=problem),
    )


def _unescape(value: str) -> str:
    # Only \\, \n and \" are escapes in the text format; any other backslash is literal.
    return _ESCAPE.sub(lambda match: _ESCAPES[match.group(0)], value)


def _parse_labels(label_text: str) -> dict[str, str] | None:
    """The label set between the braces as a dict, or None when it is malformed."""
    labels: dict[str, str] = {}
    position, end = 0, len(label_text)
    while position < end:
        match = _LABEL_PAIR.match(label_text, position)
        if match is None:
            if label_text[position:].strip():
                return None
            break
        value = match.group(2)
        if "\\" in value:
            value = _unescape(value)
        labels[match.group(1)] = value
        position = match.end()
    return labels


def _device_context(label_text: str) -> tuple | Sentence:
    """(device, hostname, gpu_index, model, driver, mig_profile, pod, namespace, container,
    (uuid, gpu_instance_id)) for a label set, or why it cannot identify a device (a
    Sentence said after the metric's name). The last item groups lines: a plain tuple
    hashes in C, a DeviceKey in Python."""
    labels = _parse_labels(label_text)
    if labels is None:
        return sentence(gettext_noop("malformed label set %(labels)s"), labels=f"{{{label_text}}}")
    get = labels.get
    uuid = get("UUID") or get("uuid")
    if not uuid:
        return sentence(
            gettext_noop("has no UUID label (nor the old uuid), so the GPU cannot be identified")
        )
    instance_text = get("GPU_I_ID") or ""
    gpu_instance_id = None
    if instance_text:
        try:
            gpu_instance_id = int(instance_text)
        except ValueError:
            return _label_not_whole("GPU_I_ID", instance_text)
    index_text = get("gpu") or ""
    gpu_index = None
    if index_text:
        try:
            gpu_index = int(index_text)
        except ValueError:
            return _label_not_whole("gpu", index_text)
    return (
        DeviceKey(uuid, gpu_instance_id),
        get("Hostname") or get("hostname") or "",
        gpu_index,
        get("modelName") or "",
        get("DCGM_FI_DRIVER_VERSION") or "",
        get("GPU_I_PROFILE") or "",
        get("pod") or get("pod_name") or "",
        get("namespace") or get("pod_namespace") or "",
        get("container") or get("container_name") or "",
        (uuid, gpu_instance_id),
    )


def _label_not_whole(label: str, value: str) -> Sentence:
    return sentence(
        gettext_noop("label %(label)s '%(value)s' is not a whole number"), label=label, value=value
    )


def read(source: str | Iterable[str], options: ReadOptions) -> Iterator[ParseResult]:
    """``iter_dcgm`` as the format registry calls it: undated lines dated now unless the
    import says when the scrape was taken."""
    scraped_at = options.scraped_at or datetime.now(UTC)
    return iter_dcgm(source, scraped_at=scraped_at, chunk_rows=options.chunk_rows)


@pausing_gc
def parse_dcgm(text: str, *, scraped_at: datetime, now: datetime | None = None) -> ParseResult:
    """``iter_dcgm`` of a whole text as one ParseResult."""
    return merge_chunks(iter_dcgm(text, scraped_at=scraped_at, now=now))


def iter_dcgm(
    source: str | Iterable[str],
    *,
    scraped_at: datetime,
    now: datetime | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> Iterator[ParseResult]:
    """Parse one or more dcgm-exporter scrapes into one GpuSampleRow per (device, timestamp).

    ``source`` is a text or an iterable of lines (FileLines). Rows come as a ParseResult
    per run of whole scrapes of at least ``chunk_rows`` samples: a chunk is cut only where
    a scrape begins (a ``# HELP`` line of a metric family already seen since the last cut),
    because a sample's metrics are spread over the lines of one scrape. A file without
    HELP lines is one chunk. A sample whose device and time were already reported by an
    earlier chunk's scrape is an error naming that scrape's line.

    ``scraped_at`` (timezone-aware) stamps every line that carries no timestamp of its own;
    a line's own timestamp (integer milliseconds since the epoch, as the text format
    defines it) overrides it. Lines with the same device and timestamp form one sample,
    whose ``line_number`` is its first line.

    Stored metrics: DCGM_FI_DEV_GPU_UTIL (%), DCGM_FI_PROF_GR_ENGINE_ACTIVE (0–1 ratio, ×100,
    preferred for ``utilization_pct`` when present: it exists per MIG slice, GPU_UTIL does
    not), DCGM_FI_DEV_FB_USED/FREE/RESERVED (MiB), DCGM_FI_DEV_POWER_USAGE (W),
    DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ), DCGM_FI_DEV_GPU_TEMP and _MEMORY_TEMP (°C),
    plus their 1.x-compatibility names (``dcgm_gpu_utilization``…); other metrics are
    ignored, so a device seen only in ignored metrics yields no row.

    Labels: ``UUID``/``uuid``, ``gpu``, ``Hostname``/``hostname``, ``modelName``,
    ``DCGM_FI_DRIVER_VERSION``, MIG ``GPU_I_PROFILE``/``GPU_I_ID``, and
    ``pod``/``pod_name``, ``namespace``/``pod_namespace``, ``container``/``container_name``.

    Missing, not errors: DCGM's blank/"not supported" sentinels (≥ 9.2e18, and 2^47…2^47+3
    for double fields), NaN and ±Inf. Errors (the sample is left out of ``rows``): a value or
    timestamp that is not a number, a line timestamp before 2000 (seconds, not ms),
    utilization outside 0–100 (0–1 for the ratio), a stored metric without a UUID label, two
    different values for one metric of one sample, a timestamp more than 1 day after ``now``,
    a ``scraped_at`` before 2000 for the lines it stamps (a clock never set).
    A sample with no readable metric (e.g. a MIG slice without GR_ENGINE_ACTIVE) is still
    returned: see ``GpuSampleRow``.

    Raises TelemetryFormatError when the text holds none of the stored metrics, or when a
    line is not Prometheus text at all (another format appended to the scrape: an
    nvidia-smi CSV, say), naming that line.
    """
    reader = _ScrapeReader(scraped_at, now, chunk_rows)
    return read_in_chunks(numbered_lines(source), reader)


# A metric line without labels, ``name value [timestamp]``, as the text format defines it.
_UNLABELLED_SAMPLE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*(?:\s+\S+){1,2}\s*")


class _ScrapeReader(LineReader):
    """The lines of one or more scrapes, read one at a time into sample records keyed by
    (device, line timestamp); the rows are built from the records when a chunk ends."""

    def __init__(self, scraped_at: datetime, now: datetime | None, chunk_rows: int):
        super().__init__(chunk_rows)
        self.now, self.latest = latest_allowed(now)
        self.default_timestamp = aware_utc(scraped_at, "scraped_at")
        # Lines with their own timestamp are checked as they are read; the others take this.
        self.default_too_early = self.default_timestamp < EARLIEST_TIMESTAMP
        self.contexts: dict[str, tuple | Sentence] = {}
        self.samples: dict[tuple, list] = {}
        # (device, timestamp) → first line, of the samples of the chunks already returned
        self.earlier_samples: dict[tuple, int] = {}
        self.families_since_cut: set[str] = set()
        self.stored_lines = 0
        self.seen_text = False
        # The first line that is no Prometheus text: (line number, line), or None
        self.foreign_line: tuple[int, str] | None = None

    # A chunk ends only where a scrape begins: at a ``# HELP`` line of a metric family
    # already seen since the last cut, once the chunk holds ``chunk_rows`` samples.
    def ends_chunk_before(self, line_number: int, line: str) -> bool:
        return (
            len(self.samples) >= self.chunk_rows
            and line.startswith("# HELP ")
            and _help_family(line) in self.families_since_cut
        )

    def take_chunk(self, line_number: int) -> ParseResult:
        chunk = self._result_of_samples()
        for key, record in self.samples.items():
            self.earlier_samples[key] = record[0]
        self.samples, self.errors = {}, []
        return chunk

    def last_chunk(self, read_any: bool) -> ParseResult:
        if not self.stored_lines:
            if not self.seen_text:
                raise TelemetryFormatError(sentence(gettext_noop("the scrape is empty")))
            raise TelemetryFormatError(
                sentence(
                    gettext_noop(
                        "no dcgm-exporter GPU metrics found (looked for %(names)s…): is this a "
                        "dcgm-exporter /metrics scrape?"
                    ),
                    names=", ".join(METRIC_NAMES[:3]),
                )
            )
        return self._result_of_samples()

    def _result_of_samples(self) -> ParseResult:
        rows = _rows_of_samples(
            self.samples,
            self.default_timestamp,
            self.default_too_early,
            self.latest,
            self.now,
            self.errors,
        )
        self.errors.sort(key=lambda error: error.line_number)
        return ParseResult(rows=rows, errors=self.errors)

    def read(self, line_number: int, line: str) -> None:
        """One line: a comment, a metric we do not store, or a reading of a sample."""
        if not line:
            return
        if not self.seen_text and not line.isspace():
            self.seen_text = True
        first_character = line[0]
        if first_character == "#":
            if line.startswith("# HELP "):
                self._read_help(line)
            return
        if first_character in " \t\r":
            line = line.strip()
            if not line or line[0] == "#":
                return
        brace = line.find("{")
        if brace == -1:
            self._read_unlabelled(line_number, line)
            return
        name, slot = _stored_metric(line[:brace])
        if slot is None:
            return
        self.stored_lines += 1
        if self.foreign_line is not None:
            raise _two_formats(*self.foreign_line)
        close = line.rfind("}")
        if close < brace:
            self.errors.append(
                _metric_error(
                    line_number, name, sentence(gettext_noop("has an unterminated label set"))
                )
            )
            return
        context = self._context_of(line[brace + 1 : close])
        if context.__class__ is Sentence:
            self.errors.append(_metric_error(line_number, name, context))
            return
        tokens = line[close + 1 :].split()
        if len(tokens) != 1:
            if not tokens:
                self.errors.append(
                    _metric_error(line_number, name, sentence(gettext_noop("has no value")))
                )
                return
            timestamp_ms = self._line_timestamp(line_number, name, tokens[1])
            if timestamp_ms is None:
                return
        else:
            timestamp_ms = None
        record = self._record_of(line_number, name, (context[9], timestamp_ms), context)
        if record is not None:
            self._store_value(line_number, name, slot, tokens[0], record)

    def _read_help(self, line: str) -> None:
        """A HELP line names a metric family; seen twice, it starts a new scrape."""
        family = _help_family(line)
        if family in self.families_since_cut:
            self.families_since_cut.clear()
        self.families_since_cut.add(family)

    def _read_unlabelled(self, line_number: int, line: str) -> None:
        """A metric we store names its GPU by labels; another metric without labels is
        ignored, and a line that is no metric at all is where a second format begins."""
        name = line.split(None, 1)[0]
        if _METRIC_SLOTS.get(name) is not None:
            self.stored_lines += 1
            self.errors.append(
                _metric_error(
                    line_number,
                    name,
                    sentence(gettext_noop("has no labels, so the GPU cannot be identified")),
                )
            )
        elif not _UNLABELLED_SAMPLE.fullmatch(line):
            # Text before any scrape line is what "no dcgm-exporter GPU metrics found" is
            # said of, unless a scrape follows it.
            if self.stored_lines:
                raise _two_formats(line_number, line)
            if self.foreign_line is None:
                self.foreign_line = (line_number, line)

    def _context_of(self, label_text: str) -> tuple | Sentence:
        """The device a label set names, parsed once per distinct label set."""
        context = self.contexts.get(label_text)
        if context is None:
            context = self.contexts[label_text] = _device_context(label_text)
        return context

    def _line_timestamp(self, line_number: int, name: str, text: str) -> int | None:
        """A line's own timestamp in milliseconds, or None after reporting what is wrong."""
        try:
            timestamp_ms = int(text)
        except ValueError:
            problem = _NOT_MILLISECONDS
        else:
            if _EARLIEST_MS <= timestamp_ms < _YEAR_10000_MS:
                return timestamp_ms
            if 0 <= timestamp_ms < _EARLIEST_MS:
                problem = _SECONDS_NOT_MILLISECONDS
            else:
                problem = _OUT_OF_RANGE
        self.errors.append(
            line_error(
                line_number,
                sentence(
                    gettext_noop("%(metric)s timestamp '%(value)s' %(problem)s"),
                    metric=name,
                    value=text,
                    problem=problem,
                ),
            )
        )
        return None

    def _record_of(self, line_number: int, name: str, key: tuple, context: tuple) -> list | None:
        """The record of the sample ``key`` names, begun at its first line; None when an
        earlier chunk's scrape already reported that GPU and time (an error)."""
        record = self.samples.get(key)
        if record is not None:
            return record
        earlier = self.earlier_samples
        if earlier and key in earlier:
            self.errors.append(
                line_error(
                    line_number,
                    sentence(
                        gettext_noop(
                            "%(metric)s repeats the GPU and time of the sample from line "
                            "%(first)s on, in an earlier scrape"
                        ),
                        metric=name,
                        first=earlier[key],
                    ),
                )
            )
            return None
        record = self.samples[key] = [line_number, context, False, *([None] * _SLOT_COUNT)]
        return record

    def _store_value(
        self, line_number: int, name: str, slot: int, value_text: str, record: list
    ) -> None:
        """A reading into its slot of the sample; a bad one marks the sample in error."""
        try:
            value = float(value_text)
        except ValueError:
            self.errors.append(line_error(line_number, not_a_number(name, value_text)))
            record[2] = True
            return
        if not _NEGATIVE_INFINITY < value < _FP64_SENTINEL_MIN and (
            value >= _INT64_SENTINEL_FLOOR
            or value in _FP64_SENTINELS
            or value != value
            or value == _NEGATIVE_INFINITY
        ):
            return  # DCGM's "no value" sentinels, NaN, ±Inf: missing, not an error
        if slot < _FB_USED:
            problem = _utilization_problem(name, slot, value, value_text)
            if problem is not None:
                self.errors.append(line_error(line_number, problem))
                record[2] = True
                return
        index = _FIRST_SLOT + slot
        previous = record[index]
        if previous is None:
            record[index] = value
        elif previous != value:
            self.errors.append(
                line_error(
                    line_number,
                    sentence(
                        gettext_noop(
                            "%(metric)s '%(value)s' contradicts %(previous)s reported for the "
                            "same GPU and time from line %(first)s on"
                        ),
                        metric=name,
                        value=value_text,
                        previous=f"{previous:g}",
                        first=record[0],
                    ),
                )
            )
            record[2] = True


def _two_formats(line_number: int, line: str) -> TelemetryFormatError:
    """A file whose lines are a scrape and something else (an nvidia-smi CSV appended to
    it, say) is refused at the first line that is not Prometheus text."""
    return TelemetryFormatError(
        on_line(
            line_number,
            sentence(
                gettext_noop(
                    "“%(line)s” is not Prometheus text: this file holds a dcgm-exporter "
                    "scrape and another format, from this line on; import each format as a "
                    "file of its own"
                ),
                line=shorten(line.strip()),
            ),
        )
    )


def _help_family(line: str) -> str:
    """The metric family a ``# HELP`` line describes."""
    return line[7:].split(None, 1)[0] if len(line) > 7 else ""


def _stored_metric(name: str) -> tuple[str, int | None]:
    """(the metric's name, its slot) for the text before a line's ``{``; slot None for a
    metric we do not store."""
    slot = _METRIC_SLOTS.get(name)
    if slot is None and name[-1:] in (" ", "\t"):
        name = name.rstrip()
        slot = _METRIC_SLOTS.get(name)
    return name, slot


def _utilization_problem(name: str, slot: int, value: float, value_text: str) -> Sentence | None:
    """Utilization is a percentage; the engine-active ratio is 0–1."""
    if slot == _GPU_UTIL:
        return None if 0.0 <= value <= 100.0 else outside_percent(name, value_text)
    if 0.0 <= value <= 1.0:
        return None
    return sentence(
        gettext_noop("%(metric)s '%(value)s' is outside 0–1 (a ratio: 1 means 100%% busy)"),
        metric=name,
        value=value_text,
    )


def _rows_of_samples(
    samples: dict[tuple, list],
    default_timestamp: datetime,
    default_too_early: bool,
    latest: datetime,
    now: datetime,
    errors: list[RowError],
) -> list[GpuSampleRow]:
    """One row per sample record read without error; the samples dated too late, or at a
    scrape time before 2000, go to ``errors``."""
    rows: list[GpuSampleRow] = []
    timestamps: dict[int | None, datetime] = {None: default_timestamp}
    for (_device_identity, timestamp_ms), record in samples.items():
        if record[2]:
            continue
        timestamp = timestamps.get(timestamp_ms)
        if timestamp is None:
            timestamp = timestamps[timestamp_ms] = _EPOCH + timedelta(milliseconds=timestamp_ms)
        first_line = record[0]
        if timestamp > latest:
            errors.append(future_error(first_line, timestamp, now))
            continue
        if timestamp_ms is None and default_too_early:
            errors.append(past_error(first_line, timestamp, SCRAPE_TIME_WORD))
            continue
        context = record[1]
        engine_active = record[_FIRST_SLOT + _GR_ENGINE_ACTIVE]
        rows.append(
            gpu_sample_row(
                line_number=first_line,
                device=context[0],
                timestamp=timestamp,
                hostname=context[1],
                gpu_index=context[2],
                model_name=context[3],
                driver_version=context[4],
                mig_profile=context[5],
                utilization_pct=(
                    engine_active * 100.0
                    if engine_active is not None
                    else record[_FIRST_SLOT + _GPU_UTIL]
                ),
                memory_used_mib=record[_FIRST_SLOT + _FB_USED],
                memory_free_mib=record[_FIRST_SLOT + _FB_FREE],
                memory_reserved_mib=record[_FIRST_SLOT + _FB_RESERVED],
                power_w=record[_FIRST_SLOT + _POWER],
                energy_mj=record[_FIRST_SLOT + _ENERGY],
                temperature_c=record[_FIRST_SLOT + _GPU_TEMP],
                memory_temperature_c=record[_FIRST_SLOT + _MEMORY_TEMP],
                pod=context[6],
                namespace=context[7],
                container=context[8],
            )
        )
    return rows
