"""Pulling raw samples from a Prometheus server's ``/api/v1/query_range``: the DCGM
metrics over the range since the last pull, one row per device and instant. Evaluation
instants sit on a grid of ``step_seconds`` counted from the epoch, so an overlapping or
repeated pull asks for the very same instants and the (device, timestamp) key stores
nothing twice. Prometheus API reference:
https://prometheus.io/docs/prometheus/latest/querying/api/ ("Range queries", "Format
overview", "Expression query result formats")."""

import logging
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import orjson
from django.utils import timezone

from apps.core.sentences import Sentence, gettext_noop, sentence
from apps.telemetry.ingest.parsers import (
    EARLIEST_TIMESTAMP,
    DeviceKey,
    GpuSampleRow,
    ParseResult,
    RowError,
    TelemetryFormatError,
)
from apps.telemetry.models import ImportRun, PullSource
from apps.telemetry.pull import base
from apps.telemetry.pull.base import (
    STATUS_ERROR,
    STATUS_WARNING,
    PullError,
    http_error,
    http_get,
    record_on_source,
    record_pull,
    source_headers,
)

logger = logging.getLogger(__name__)

# Prometheus refuses a query_range with more points than this per series
# ("exceeded maximum resolution of 11,000 points per timeseries").
PROMETHEUS_MAX_POINTS_PER_SERIES = 11_000
DEFAULT_FIRST_WINDOW = timedelta(hours=1)
MAX_FUTURE = timedelta(days=1)  # as the file parsers: a clock or zone mistake, not data


# DCGM metric → GpuSampleRow field. GPU_UTIL and GR_ENGINE_ACTIVE both feed utilization:
# the engine-active ratio ×100 wins where present (it exists per MIG slice), as in
# parse_dcgm.
_GPU_UTIL = "gpu_util"
_GR_ENGINE_ACTIVE = "gr_engine_active"
PROMETHEUS_METRICS = {
    "DCGM_FI_DEV_GPU_UTIL": _GPU_UTIL,
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": _GR_ENGINE_ACTIVE,
    "DCGM_FI_DEV_FB_USED": "memory_used_mib",
    "DCGM_FI_DEV_FB_FREE": "memory_free_mib",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "energy_mj",
    "DCGM_FI_DEV_GPU_TEMP": "temperature_c",
}

# DCGM's in-band "no value" markers, the same rule as apps/telemetry/ingest/parsers/dcgm.py:
# int64 fields use DCGM_INT64_BLANK = 0x7ffffffffffffff0 and the next three values
# (9223372036854775794 is "not supported"), which Prometheus, holding float64, returns as
# "9223372036854775808"; double fields use DCGM_FP64_BLANK = 2^47 and the next three.
_INT64_SENTINEL_FLOOR = 9.2e18
_FP64_SENTINELS = frozenset(float(2**47 + offset) for offset in range(4))
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_dcgm_blank(value: float) -> bool:
    """True for DCGM's blank/"not supported" sentinels, NaN and ±Inf: a missing reading."""
    return (
        math.isnan(value)
        or math.isinf(value)
        or value >= _INT64_SENTINEL_FLOOR
        or value in _FP64_SENTINELS
    )


# --- Prometheus: series → rows (framework-free) -----------------------------------------


def raw_series(data: dict) -> Iterator[tuple[dict, list]]:
    """``(labels, [[timestamp, value text]…])`` per series of a query result's ``data``,
    the points as the server wrote them: a ``matrix`` (query_range: ``values``) or a
    ``vector`` (instant query: ``value``). Prometheus writes timestamps as float seconds
    and values as strings ("NaN", "+Inf")."""
    result_type = data.get("resultType")
    if result_type not in ("matrix", "vector"):
        raise TelemetryFormatError(
            f"expected a matrix or vector result, got resultType {result_type!r}"
        )
    for series in data.get("result") or []:
        if result_type == "matrix":
            points = series.get("values") or []
        else:
            points = [series["value"]] if series.get("value") else []
        yield series.get("metric") or {}, points


def series_points(data: dict) -> Iterator[tuple[dict, list[tuple[int, str]]]]:
    """``(labels, [(timestamp ms, value text)…])`` per series of a query result's
    ``data`` (``raw_series``), the timestamps in whole milliseconds."""
    for labels, points in raw_series(data):
        yield labels, [(round(float(timestamp) * 1000), value) for timestamp, value in points]


def _host_of(instance: str) -> str:
    """``node-1:9400`` → ``node-1``; ``[fd00::1]:9400`` → ``fd00::1``."""
    if instance.startswith("["):
        return instance[1 : instance.find("]")] if "]" in instance else instance
    host, separator, port = instance.rpartition(":")
    return host if separator and port.isdigit() and ":" not in host else instance


def _workload_labels(labels: dict) -> tuple[str, str, str]:
    """(pod, namespace, container) of the workload using the GPU.

    When Prometheus scrapes the exporter without ``honor_labels``, the exporter's own
    pod/namespace/container labels are renamed ``exported_*`` and the plain ones name the
    exporter's pod (Kubernetes service discovery). Series of GPUs that no pod uses carry
    only those: a pod named after the scrape job or service (``nvidia-dcgm-exporter-wqqqn``
    under job ``nvidia-dcgm-exporter``) is the exporter, not a workload, and is left out.
    """
    if labels.get("exported_pod") or labels.get("exported_namespace"):
        return (
            labels.get("exported_pod", ""),
            labels.get("exported_namespace", ""),
            labels.get("exported_container", ""),
        )
    pod = labels.get("pod") or labels.get("pod_name") or ""
    namespace = labels.get("namespace") or labels.get("pod_namespace") or ""
    container = labels.get("container") or labels.get("container_name") or ""
    exporter_names = {labels.get("job"), labels.get("service")} - {None, ""}
    if any(pod.startswith(f"{name}-") for name in exporter_names) or container in exporter_names:
        return "", "", ""
    return pod, namespace, container


def _describe_series(name: str, labels: dict) -> str:
    shown = [
        f'{key}="{labels[key]}"'
        for key in ("UUID", "uuid", "GPU_I_ID", "Hostname", "hostname", "instance")
        if labels.get(key)
    ]
    return f"{name}{{{', '.join(shown)}}}"


@dataclass
class _Sample:
    first_series: str
    context: dict
    values: dict = field(default_factory=dict)
    rejected: bool = False


def _not_whole_number(label: str, value: str) -> Sentence:
    # The msgid parse_dcgm says it with, translated once for both.
    return sentence(
        gettext_noop("label %(label)s '%(value)s' is not a whole number"), label=label, value=value
    )


def _device_context(labels: dict) -> tuple[DeviceKey, dict] | Sentence:
    """The device and what it says about itself, or why the series names no device."""
    uuid = labels.get("UUID") or labels.get("uuid")
    if not uuid:
        return sentence(
            gettext_noop("has no UUID label (nor the old uuid), so the GPU cannot be identified")
        )
    gpu_instance_id = gpu_index = None
    if labels.get("GPU_I_ID"):
        try:
            gpu_instance_id = int(labels["GPU_I_ID"])
        except ValueError:
            return _not_whole_number("GPU_I_ID", labels["GPU_I_ID"])
    if labels.get("gpu"):
        try:
            gpu_index = int(labels["gpu"])
        except ValueError:
            return _not_whole_number("gpu", labels["gpu"])
    pod, namespace, container = _workload_labels(labels)
    return DeviceKey(uuid, gpu_instance_id), {
        "hostname": (
            labels.get("Hostname") or labels.get("hostname") or _host_of(labels.get("instance", ""))
        ),
        "gpu_index": gpu_index,
        "model_name": labels.get("modelName", ""),
        "driver_version": labels.get("DCGM_FI_DRIVER_VERSION", ""),
        "mig_profile": labels.get("GPU_I_PROFILE", ""),
        "pod": pod,
        "namespace": namespace,
        "container": container,
    }


def _checked_value(slot: str, value_text: str) -> tuple[float | None, Sentence | str]:
    """(value or None when DCGM says "no value", problem or "")."""
    try:
        value = float(value_text)
    except (TypeError, ValueError):
        return None, sentence(gettext_noop("value '%(value)s' is not a number"), value=value_text)
    if is_dcgm_blank(value):
        return None, ""
    if slot == _GPU_UTIL and not 0.0 <= value <= 100.0:
        return None, sentence(gettext_noop("value '%(value)s' is outside 0–100"), value=value_text)
    if slot == _GR_ENGINE_ACTIVE and not 0.0 <= value <= 1.0:
        return None, sentence(
            gettext_noop("value '%(value)s' is outside 0–1 (a ratio: 1 means 100%% busy)"),
            value=value_text,
        )
    return value, ""


def _series_error(series: str, moment: str, problem: Sentence) -> RowError:
    """A sample's problem, after the series it came from and its instant (no line: 0)."""
    return RowError(
        0,
        sentence(
            gettext_noop("%(series)s at %(moment)s: %(problem)s"),
            series=series,
            moment=moment,
            problem=problem,
        ),
    )


def rows_from_prometheus(
    results: Iterable[tuple[str, dict]], *, now: datetime | None = None
) -> ParseResult:
    """One GpuSampleRow per (device, instant) from query results of the DCGM metrics.

    ``results`` holds ``(metric queried, response["data"])`` pairs; a series' own
    ``__name__`` wins over the metric queried. Devices and labels as in ``parse_dcgm``:
    ``UUID``/``uuid`` + ``GPU_I_ID``, ``gpu``, ``Hostname``/``hostname`` (else the
    ``instance`` host), ``modelName``, ``DCGM_FI_DRIVER_VERSION``, ``GPU_I_PROFILE``, and
    the workload's pod labels (see ``_workload_labels``). Values: DCGM's sentinels, NaN and
    ±Inf are missing; GR_ENGINE_ACTIVE (0–1) ×100 is preferred over GPU_UTIL (0–100) for
    ``utilization_pct``. A sample with a value that is not a number or out of range, two
    different values of one metric (e.g. two jobs scraping one exporter), a time more
    than a day ahead or before 2000 is left out and reported; errors have no line, so
    ``line_number`` 0.
    """
    latest = (now or datetime.now(UTC)) + MAX_FUTURE
    samples: dict[tuple, _Sample] = {}
    errors: list[RowError] = []
    for metric, data in results:
        for labels, points in series_points(data):
            _read_series(metric, labels, points, samples, errors)
    rows = [
        row
        for key, sample in samples.items()
        if not sample.rejected and (row := _row_of_sample(key, sample, latest, errors))
    ]
    return ParseResult(rows=rows, errors=errors)


def _read_series(metric: str, labels: dict, points, samples: dict, errors: list) -> None:
    """A series' points into the samples of its device, one per instant."""
    name = labels.get("__name__") or metric
    slot = PROMETHEUS_METRICS.get(name)
    if slot is None:
        raise TelemetryFormatError(f"{name} is not one of the DCGM metrics pulled")
    described = _describe_series(name, labels)
    context = _device_context(labels)
    if isinstance(context, str):
        errors.append(
            RowError(
                0,
                sentence(
                    gettext_noop("%(series)s %(problem)s; %(points)s point(s) left out"),
                    series=described,
                    problem=context,
                    points=len(points),
                ),
            )
        )
        return
    device, descriptive = context
    for timestamp_ms, value_text in points:
        sample = _sample_of(samples, (device, timestamp_ms), described, descriptive)
        problem = _store_point(sample, slot, value_text)
        if problem:
            moment = _EPOCH + timedelta(milliseconds=timestamp_ms)
            errors.append(_series_error(described, moment.isoformat(), problem))
            sample.rejected = True


def _sample_of(samples: dict, key: tuple, described: str, descriptive: dict) -> "_Sample":
    """The sample of a device and instant; a later series fills in labels it lacks."""
    sample = samples.get(key)
    if sample is None:
        # A copy: merging fills in labels of this sample alone.
        sample = samples[key] = _Sample(described, dict(descriptive))
    else:
        for label_field, label_value in descriptive.items():
            if sample.context[label_field] in ("", None):
                sample.context[label_field] = label_value
    return sample


def _store_point(sample: "_Sample", slot: str, value_text: str) -> Sentence | str:
    """A point's value into its slot of the sample; the problem with it, or ""."""
    value, problem = _checked_value(slot, value_text)
    if problem or value is None:
        return problem
    previous = sample.values.get(slot)
    if previous is not None and previous != value:
        return sentence(
            gettext_noop(
                "value '%(value)s' contradicts %(previous)s reported for the "
                "same GPU and time by another series"
            ),
            value=value_text,
            previous=f"{previous:g}",
        )
    sample.values[slot] = value
    return ""


def _row_of_sample(
    key: tuple, sample: "_Sample", latest: datetime, errors: list
) -> GpuSampleRow | None:
    """The row of a sample read without error, unless its time is too late or too early."""
    device, timestamp_ms = key
    timestamp = _EPOCH + timedelta(milliseconds=timestamp_ms)
    if timestamp > latest:
        errors.append(
            _series_error(
                sample.first_series,
                timestamp.isoformat(),
                sentence(
                    gettext_noop(
                        "more than 1 day in the future (is the Prometheus server's clock right?)"
                    )
                ),
            )
        )
        return None
    if timestamp < EARLIEST_TIMESTAMP:
        errors.append(
            _series_error(
                sample.first_series,
                f"{timestamp:%Y-%m-%d %H:%M:%S}",
                sentence(
                    gettext_noop(
                        "before %(earliest)s (is the clock of the node or of the "
                        "Prometheus server set?)"
                    ),
                    earliest=f"{EARLIEST_TIMESTAMP:%Y-%m-%d}",
                ),
            )
        )
        return None
    values = sample.values
    engine_active = values.pop(_GR_ENGINE_ACTIVE, None)
    gpu_util = values.pop(_GPU_UTIL, None)
    return GpuSampleRow(
        line_number=0,
        device=device,
        timestamp=timestamp,
        utilization_pct=engine_active * 100.0 if engine_active is not None else gpu_util,
        **sample.context,
        **values,
    )


# --- Prometheus: the HTTP API -------------------------------------------------------------


def prometheus_data(payload, *, query: str) -> dict:
    """The ``data`` of a Prometheus API answer; raises PullError for an error answer
    (``{"status": "error", "errorType": …, "error": …}``) or one that is not the API's."""
    if not isinstance(payload, dict) or payload.get("status") not in ("success", "error"):
        raise PullError(
            sentence(
                gettext_noop("the answer to %(query)s is not a Prometheus API response"),
                query=query,
            )
        )
    if payload["status"] == "error":
        raise PullError(
            sentence(
                gettext_noop("Prometheus refused the query %(query)s (%(error_type)s): %(reason)s"),
                query=query,
                error_type=payload.get("errorType") or "error",
                reason=payload.get("error") or sentence(gettext_noop("no reason given")),
            )
        )
    data = payload.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise PullError(
            sentence(gettext_noop("the answer to %(query)s has no data.result"), query=query)
        )
    return data


@dataclass
class RangeAnswer:
    """A query_range answer: its ``data``, the server's warnings, and whether it says the
    answer is partial (VictoriaMetrics cluster's ``isPartial``: a storage node did not
    answer)."""

    data: dict
    warnings: list[str]
    partial: bool


def query_range_answer(
    base_url: str,
    query: str,
    *,
    start: datetime,
    end: datetime,
    step_seconds: int,
    timeout_seconds: float | None = None,
    extra_params: dict | None = None,
    headers: dict[str, str] | None = None,
) -> RangeAnswer:
    """``GET {base_url}/api/v1/query_range``; raises PullError."""
    timeout = base.HTTP_TIMEOUT_SECONDS if timeout_seconds is None else timeout_seconds
    url = f"{base_url.rstrip('/')}/api/v1/query_range?" + urlencode(
        {
            "query": query,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": str(step_seconds),
            # The server gives up a little before we would, and says so in its answer.
            "timeout": f"{max(1, math.ceil(timeout) - 1)}s",
            **(extra_params or {}),
        }
    )
    shown_as = f"{base_url} (query_range {query})"
    response = http_get(
        url, accept="application/json", shown_as=shown_as, timeout_seconds=timeout, headers=headers
    )
    try:
        # orjson: an hourly pull's answers are tens of MiB, which the standard library
        # decodes several times slower. Invalid UTF-8 is its JSONDecodeError too.
        payload = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        if response.status != 200:
            raise http_error(shown_as, response) from None
        raise PullError(
            sentence(
                gettext_noop("%(url)s did not answer JSON: is it a Prometheus server?"),
                url=shown_as,
            )
        ) from None
    # Prometheus answers 400/422/503 with the error JSON, which says more than the status.
    data = prometheus_data(payload, query=query)
    return RangeAnswer(
        data,
        [str(warning) for warning in payload.get("warnings") or []],
        payload.get("isPartial") is True,
    )


def query_range(
    base_url: str,
    query: str,
    *,
    start: datetime,
    end: datetime,
    step_seconds: int,
    headers: dict[str, str] | None = None,
) -> tuple[dict, list[str]]:
    """``(data, warnings)`` of ``GET {base_url}/api/v1/query_range``; raises PullError."""
    answer = query_range_answer(
        base_url, query, start=start, end=end, step_seconds=step_seconds, headers=headers
    )
    return answer.data, answer.warnings


def _align_down(moment: datetime, step_seconds: int) -> datetime:
    seconds = math.floor(moment.timestamp() / step_seconds) * step_seconds
    return datetime.fromtimestamp(seconds, UTC)


def prometheus_range(
    pulled_until: datetime | None,
    now: datetime,
    *,
    step_seconds: int,
    max_window: timedelta,
) -> tuple[datetime, datetime]:
    """[start, end] of the next pull, both on the step grid: from where the last pull
    ended (the last instant is asked again: harmless, it is keyed, and fills it if the
    server had not ingested it yet) or an hour back, to now, at most ``max_window`` and
    at most Prometheus's 11,000 points per series."""
    end = _align_down(now, step_seconds)
    start = _align_down(pulled_until or now - DEFAULT_FIRST_WINDOW, step_seconds)
    window = min(
        max_window, timedelta(seconds=step_seconds * (PROMETHEUS_MAX_POINTS_PER_SERIES - 1))
    )
    if end - start > window:
        end = _align_down(start + window, step_seconds)
    return min(start, end), end


def pull_prometheus(
    source: PullSource,
    *,
    now: datetime | None = None,
    step_seconds: int = 60,
    max_window: timedelta = timedelta(hours=6),
    run: ImportRun | None = None,
) -> ImportRun:
    """Fetch the DCGM metrics from ``source.pulled_until`` (or an hour back) to ``now``,
    one ``step_seconds`` apart, import them and move ``pulled_until`` on. A pull that
    fails imports nothing and leaves ``pulled_until`` where it was. ``run``: the run to
    record it on, one a worker has claimed (apps/telemetry/pull/connect.py), else a new one."""
    now = now or timezone.now()
    if step_seconds < 1:
        raise ValueError("step_seconds must be at least 1")
    start, end = prometheus_range(
        source.pulled_until, now, step_seconds=step_seconds, max_window=max_window
    )
    note = sentence(
        gettext_noop("%(start)s–%(end)s UTC every %(step_seconds)s s"),
        start=f"{start:%Y-%m-%d %H:%M:%S}",
        end=f"{end:%Y-%m-%d %H:%M:%S}",
        step_seconds=step_seconds,
    )

    def fetch():
        results, warnings = [], set()
        for metric in PROMETHEUS_METRICS:
            data, metric_warnings = query_range(
                source.url,
                metric,
                start=start,
                end=end,
                step_seconds=step_seconds,
                headers=source_headers(source),
            )
            results.append((metric, data))
            warnings.update(metric_warnings)
        result = rows_from_prometheus(results)
        if warnings:
            warned = sentence(
                gettext_noop("%(note)s (Prometheus warned: %(warnings)s)"),
                note=note,
                warnings="; ".join(sorted(warnings)),
            )
            return result, warned
        return result, note

    run, status = record_pull(
        source,
        now,
        format="prometheus",
        run_source=ImportRun.Source.PROMETHEUS,
        fetch=fetch,
        run=run,
    )
    if status == STATUS_ERROR:
        return run
    if not run.rows_total:
        # Not an error (an exporter can be down for a while) but worth seeing at a glance.
        status = STATUS_WARNING
        none_held = sentence(
            gettext_noop(" Prometheus holds none of the DCGM metrics pulled in this range.")
        )
        run.message += none_held
        if run.message_parts:
            run.message_parts.append(none_held.to_data())
        run.save(update_fields=["message", "message_parts"])
    record_on_source(source, now, status, run.message, run.message_parts, pulled_until=end)
    return run
