"""Framework-free parsers of measured inference benchmarks: a file's text in, the key
figures of one run out, or a ``BenchmarkFormatError`` naming the line or key and what was
expected. Nothing here touches the database: ``services.import_benchmark`` stores a
result only when its file parsed whole.

The four formats, each read as its tool writes it:

- MLPerf Inference ``mlperf_log_summary.txt`` (LoadGen's summary; the LLM benchmarks add
  tokens per second, first-token latency and time per output token, in nanoseconds);
- vLLM ``benchmarks/benchmark_serving.py --save-result`` (``vllm bench serve``): one JSON
  object, latencies in ms;
- GenAI-Perf ``profile_export_genai_perf.json`` or ``.csv``: per metric ``avg``/``p50``/
  ``p99`` with its unit, throughputs per second;
- GuideLLM ``benchmarks.json``: a list of benchmarks (a sweep writes several), each with
  ``metrics.<name>.successful`` distributions (mean, median, percentiles).
"""

import csv
import io
import json
import math
from dataclasses import dataclass, field

from apps.core.sentences import gettext_noop, sentence

MLPERF = "mlperf"
VLLM = "vllm"
GENAI_PERF = "genai-perf"
GUIDELLM = "guidellm"
FORMATS = (MLPERF, VLLM, GENAI_PERF, GUIDELLM)

NANOSECONDS_PER_MILLISECOND = 1_000_000


class BenchmarkFormatError(ValueError):
    """The file is not a result of the chosen format; the message says where and why."""


@dataclass(frozen=True)
class ParsedBenchmark:
    """The figures of one measured run; a latency the tool did not report is None."""

    output_tokens_per_second: float
    requests_per_second: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None
    concurrency: int | None = None
    # Mean prompt and generated tokens of the run's requests, when the file says them:
    # with the concurrency, the settings a decode ceiling for this run is computed at.
    input_tokens_per_request: float | None = None
    output_tokens_per_request: float | None = None
    # The file's own names and values of the figures above and their context (scenario,
    # request rate, model), kept as the tool printed them.
    raw_figures: dict = field(default_factory=dict)


def _fail(msgid: str, **values):
    raise BenchmarkFormatError(sentence(msgid, **values))


def _finite(value) -> float | None:
    """``value`` as a finite float, or None when it is not a number."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _positive_throughput(value: float, where: str) -> float:
    if value <= 0:
        _fail(
            gettext_noop("%(where)s: output tokens per second is %(value)s: expected more than 0."),
            where=where,
            value=value,
        )
    return value


# --- MLPerf Inference -----------------------------------------------------------------

# LoadGen's label → our figure. The Server scenario prints "Completed …", Offline not.
_MLPERF_TOKENS = ("Completed tokens per second", "Tokens per second")
_MLPERF_SAMPLES = ("Completed samples per second", "Samples per second")
_MLPERF_LATENCIES_NS = {
    "ttft_p50_ms": "50.00 percentile first token latency (ns)",
    "ttft_p99_ms": "99.00 percentile first token latency (ns)",
    "itl_p50_ms": "50.00 percentile time to output token (ns)",
    "itl_p99_ms": "99.00 percentile time to output token (ns)",
}


def parse_mlperf(text: str) -> ParsedBenchmark:
    """An MLPerf Inference ``mlperf_log_summary.txt``: ``label : value`` lines.

    Output tokens/s is "Completed tokens per second" (Server) or "Tokens per second"
    (Offline); requests/s the matching samples per second. TTFT and ITL are LoadGen's
    first-token latency and time per output token (TPOT), converted from ns to ms.
    """
    lines = text.splitlines()
    if not any("MLPerf Results Summary" in line for line in lines[:5]):
        _fail(
            gettext_noop(
                "line 1: expected an MLPerf LoadGen summary starting with "
                "“MLPerf Results Summary” (mlperf_log_summary.txt)."
            )
        )
    values: dict[str, tuple[int, str]] = {}
    for line_number, line in enumerate(lines, start=1):
        label, separator, value = line.partition(":")
        if not separator:
            continue
        label = label.strip()
        # A label printed twice (tokens per second is) keeps its first line.
        values.setdefault(label, (line_number, value.strip()))

    def number(label: str) -> float | None:
        if label not in values:
            return None
        line_number, value = values[label]
        parsed = _finite(value)
        if parsed is None:
            _fail(
                gettext_noop("line %(line)s: “%(label)s” is “%(value)s”: expected a number."),
                line=line_number,
                label=label,
                value=value,
            )
        return parsed

    tokens_label = next((label for label in _MLPERF_TOKENS if label in values), None)
    if tokens_label is None:
        _fail(
            gettext_noop(
                "no “Completed tokens per second” (Server) or “Tokens per second” (Offline) "
                "line: expected the summary of an LLM benchmark (llama2-70b, mixtral, …), "
                "which counts tokens."
            )
        )
    output_tokens_per_second = _positive_throughput(
        number(tokens_label), f"line {values[tokens_label][0]}"
    )
    samples_label = next((label for label in _MLPERF_SAMPLES if label in values), None)
    latencies = {}
    for name, label in _MLPERF_LATENCIES_NS.items():
        nanoseconds = number(label)
        latencies[name] = None if nanoseconds is None else nanoseconds / NANOSECONDS_PER_MILLISECOND
    raw_labels = [
        "SUT name",
        "Scenario",
        "Mode",
        "Result is",
        tokens_label,
        *([samples_label] if samples_label else []),
        *_MLPERF_LATENCIES_NS.values(),
        "target_qps",
    ]
    return ParsedBenchmark(
        output_tokens_per_second=output_tokens_per_second,
        requests_per_second=number(samples_label) if samples_label else None,
        concurrency=None,
        raw_figures={label: values[label][1] for label in raw_labels if label in values},
        **latencies,
    )


# --- JSON helpers ---------------------------------------------------------------------


def _load_json(text: str, *, what: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        if error.msg == "Extra data":
            _fail(
                gettext_noop(
                    "line %(line)s: a second JSON value: the file holds more than one "
                    "result (%(what)s writes one per line when appending); keep the line "
                    "of the run to import."
                ),
                line=error.lineno,
                what=what,
            )
        _fail(
            gettext_noop("line %(line)s, column %(column)s: not JSON (%(reason)s)."),
            line=error.lineno,
            column=error.colno,
            reason=error.msg,
        )


def _require_object(value, where: str, expected: str) -> dict:
    if not isinstance(value, dict):
        _fail(gettext_noop("%(where)s: expected %(expected)s."), where=where, expected=expected)
    return value


def _json_number(document: dict, key: str, *, where: str = "", required: bool = False):
    """``document[key]`` as a float; None when absent or null unless ``required``."""
    path = f"{where}{key}"
    if key not in document or document[key] is None:
        if required:
            _fail(gettext_noop("key “%(key)s” is missing: expected a number."), key=path)
        return None
    parsed = _finite(document[key])
    if parsed is None:
        _fail(
            gettext_noop("key “%(key)s” is %(value)s: expected a number."),
            key=path,
            value=json.dumps(document[key])[:80],
        )
    return parsed


def _mean_tokens(value) -> float | None:
    """A mean token count per request, when it is one (a positive finite number)."""
    number = _finite(value)
    return number if number is not None and number > 0 else None


def _per_request(total, requests) -> float | None:
    total, requests = _finite(total), _finite(requests)
    if total is None or not requests or requests < 1:
        return None
    return _mean_tokens(total / requests)


def _concurrency(value) -> int | None:
    number = _finite(value)
    if number is None or number < 1 or number != int(number):
        return None
    return int(number)


# --- vLLM -------------------------------------------------------------------------------

_VLLM_RAW_KEYS = (
    "date",
    "backend",
    "model_id",
    "num_prompts",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "duration",
    "completed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_itl_ms",
    "p99_itl_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
)


def parse_vllm(text: str) -> ParsedBenchmark:
    """vLLM ``benchmark_serving.py --save-result`` JSON: ``output_throughput`` (output
    tokens/s), ``request_throughput`` (requests/s), ``median_ttft_ms``/``p99_ttft_ms`` and
    ``median_itl_ms``/``p99_itl_ms``; ``max_concurrency`` when the run capped it; the
    mean tokens per request are ``total_input_tokens`` and ``total_output_tokens`` over
    the ``completed`` requests."""
    document = _require_object(
        _load_json(text, what="vLLM's --append-result"),
        "line 1",
        "one JSON object, as benchmark_serving.py --save-result writes it",
    )
    output = _json_number(document, "output_throughput", required=True)
    return ParsedBenchmark(
        output_tokens_per_second=_positive_throughput(output, "key “output_throughput”"),
        requests_per_second=_json_number(document, "request_throughput", required=True),
        ttft_p50_ms=_json_number(document, "median_ttft_ms"),
        ttft_p99_ms=_json_number(document, "p99_ttft_ms"),
        itl_p50_ms=_json_number(document, "median_itl_ms"),
        itl_p99_ms=_json_number(document, "p99_itl_ms"),
        concurrency=_concurrency(document.get("max_concurrency")),
        input_tokens_per_request=_per_request(
            document.get("total_input_tokens"), document.get("completed")
        ),
        output_tokens_per_request=_per_request(
            document.get("total_output_tokens"), document.get("completed")
        ),
        raw_figures={key: document[key] for key in _VLLM_RAW_KEYS if key in document},
    )


# --- GenAI-Perf -----------------------------------------------------------------------

_GENAI_PERF_UNIT_TO_MS = {"ms": 1.0, "ns": 1 / NANOSECONDS_PER_MILLISECOND, "us": 1e-3, "s": 1e3}


def _genai_perf_latency(document: dict, key: str, stat: str) -> float | None:
    metric = document.get(key)
    if metric is None:
        return None
    metric = _require_object(metric, f"key “{key}”", "an object of statistics (avg, p50, p99)")
    value = _json_number(metric, stat, where=f"{key}.")
    if value is None:
        return None
    unit = metric.get("unit", "ms")
    if unit not in _GENAI_PERF_UNIT_TO_MS:
        _fail(
            gettext_noop("key “%(key)s.unit” is “%(unit)s”: expected ms, us, ns or s."),
            key=key,
            unit=unit,
        )
    return value * _GENAI_PERF_UNIT_TO_MS[unit]


def _parse_genai_perf_json(text: str) -> ParsedBenchmark:
    document = _require_object(
        _load_json(text, what="GenAI-Perf"), "line 1", "the JSON object of profile_export"
    )
    if "output_token_throughput" not in document:
        _fail(
            gettext_noop(
                "key “output_token_throughput” is missing: expected GenAI-Perf's "
                "profile_export_genai_perf.json of an LLM run."
            )
        )
    throughput = _require_object(
        document["output_token_throughput"], "key “output_token_throughput”", "an object"
    )
    output = _json_number(throughput, "avg", where="output_token_throughput.", required=True)
    requests = document.get("request_throughput")
    input_config = document.get("input_config")
    concurrency = None
    if isinstance(input_config, dict):
        # GenAI-Perf keeps it at the top of its input_config, AIPerf under "loadgen".
        loadgen = input_config.get("loadgen")
        concurrency = _concurrency(input_config.get("concurrency")) or (
            _concurrency(loadgen.get("concurrency")) if isinstance(loadgen, dict) else None
        )
    figures = {
        name: document[name]
        for name in (
            "output_token_throughput",
            "request_throughput",
            "time_to_first_token",
            "inter_token_latency",
            "input_sequence_length",
            "output_sequence_length",
        )
        if name in document
    }
    lengths = {
        name: _mean_tokens(document[name].get("avg"))
        if isinstance(document.get(name), dict)
        else None
        for name in ("input_sequence_length", "output_sequence_length")
    }
    return ParsedBenchmark(
        output_tokens_per_second=_positive_throughput(output, "key “output_token_throughput.avg”"),
        requests_per_second=_json_number(requests, "avg", where="request_throughput.")
        if isinstance(requests, dict)
        else None,
        ttft_p50_ms=_genai_perf_latency(document, "time_to_first_token", "p50"),
        ttft_p99_ms=_genai_perf_latency(document, "time_to_first_token", "p99"),
        itl_p50_ms=_genai_perf_latency(document, "inter_token_latency", "p50"),
        itl_p99_ms=_genai_perf_latency(document, "inter_token_latency", "p99"),
        concurrency=concurrency,
        input_tokens_per_request=lengths["input_sequence_length"],
        output_tokens_per_request=lengths["output_sequence_length"],
        raw_figures=figures,
    )


def _csv_number(cell: str, line_number: int, label: str) -> float:
    # GenAI-Perf prints thousands with a comma inside a quoted cell: "1,146.31".
    parsed = _finite(cell.replace(",", ""))
    if parsed is None:
        _fail(
            gettext_noop("line %(line)s: “%(label)s” is “%(value)s”: expected a number."),
            line=line_number,
            label=label,
            value=cell,
        )
    return parsed


def _parse_genai_perf_csv(text: str) -> ParsedBenchmark:
    """Two tables: ``Metric,avg,min,max,p99,…,p50,…`` (latencies with their unit in the
    metric's name), a blank line, then ``Metric,Value`` (the throughputs per second)."""
    statistics: dict[str, tuple[int, dict[str, str]]] = {}
    values: dict[str, tuple[int, str]] = {}
    header: list[str] | None = None
    for line_number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not any(cell.strip() for cell in row):
            header = None
            continue
        if row[0] == "Metric":
            header = row
            continue
        if header is None:
            _fail(
                gettext_noop(
                    "line %(line)s: expected a “Metric,…” header before the rows "
                    "(GenAI-Perf's profile_export_genai_perf.csv)."
                ),
                line=line_number,
            )
        if header[1:2] == ["Value"]:
            values[row[0]] = (line_number, row[1] if len(row) > 1 else "")
        else:
            statistics[row[0]] = (line_number, dict(zip(header[1:], row[1:], strict=False)))

    def statistic(prefix: str, stat: str) -> float | None:
        for label, (line_number, cells) in statistics.items():
            if label.startswith(prefix) and stat in cells:
                unit = label[len(prefix) :].strip(" ()") or "ms"
                if unit not in _GENAI_PERF_UNIT_TO_MS:
                    _fail(
                        gettext_noop(
                            "line %(line)s: “%(label)s”: expected a unit of ms, us or ns."
                        ),
                        line=line_number,
                        label=label,
                    )
                return _csv_number(cells[stat], line_number, label) * _GENAI_PERF_UNIT_TO_MS[unit]
        return None

    output_label = "Output Token Throughput (per sec)"
    if output_label not in values:
        _fail(
            gettext_noop(
                "no “%(label)s” row: expected GenAI-Perf's profile_export_genai_perf.csv "
                "of an LLM run."
            ),
            label=output_label,
        )
    line_number, cell = values[output_label]
    output = _positive_throughput(
        _csv_number(cell, line_number, output_label), f"line {line_number}"
    )
    requests_label = "Request Throughput (per sec)"
    requests = None
    if requests_label in values:
        requests = _csv_number(values[requests_label][1], values[requests_label][0], requests_label)

    def mean_length(label: str) -> float | None:
        if label not in statistics or "avg" not in statistics[label][1]:
            return None
        line_number, cells = statistics[label]
        return _mean_tokens(_csv_number(cells["avg"], line_number, label))

    return ParsedBenchmark(
        output_tokens_per_second=output,
        requests_per_second=requests,
        ttft_p50_ms=statistic("Time To First Token", "p50"),
        ttft_p99_ms=statistic("Time To First Token", "p99"),
        itl_p50_ms=statistic("Inter Token Latency", "p50"),
        itl_p99_ms=statistic("Inter Token Latency", "p99"),
        input_tokens_per_request=mean_length("Input Sequence Length (tokens)"),
        output_tokens_per_request=mean_length("Output Sequence Length (tokens)"),
        raw_figures={
            **{label: cells for label, (_, cells) in statistics.items()},
            **{label: value for label, (_, value) in values.items()},
        },
    )


def parse_genai_perf(text: str) -> ParsedBenchmark:
    """GenAI-Perf's export, JSON (``profile_export_genai_perf.json``) or CSV: output
    tokens/s is ``output_token_throughput.avg`` ("Output Token Throughput (per sec)"),
    TTFT and ITL their p50 and p99, converted to ms from the unit the file names; the
    mean tokens per request ``input_sequence_length.avg`` and
    ``output_sequence_length.avg`` ("Input/Output Sequence Length (tokens)"); the
    concurrency only the JSON's ``input_config`` says."""
    if text.lstrip().startswith("{"):
        return _parse_genai_perf_json(text)
    return _parse_genai_perf_csv(text)


# --- GuideLLM ---------------------------------------------------------------------------


def _distribution(metrics: dict, key: str, where: str) -> dict | None:
    metric = metrics.get(key)
    if metric is None:
        return None
    metric = _require_object(metric, f"key “{where}{key}”", "an object with “successful”")
    successful = metric.get("successful")
    if successful is None:
        return None
    return _require_object(
        successful, f"key “{where}{key}.successful”", "a distribution (mean, median, percentiles)"
    )


def _percentile(distribution: dict | None, name: str, where: str) -> float | None:
    if distribution is None:
        return None
    percentiles = distribution.get("percentiles")
    if isinstance(percentiles, dict) and name in percentiles:
        return _json_number(percentiles, name, where=f"{where}percentiles.")
    if name == "p50":
        return _json_number(distribution, "median", where=where)
    return None


def _guidellm_concurrency(benchmark: dict) -> int | None:
    """The strategy's concurrency: 1 for synchronous, its streams for concurrent."""
    for holder in (benchmark.get("args"), benchmark.get("config")):
        if not isinstance(holder, dict) or not isinstance(holder.get("strategy"), dict):
            continue
        strategy = holder["strategy"]
        if strategy.get("type_") == "synchronous":
            return 1
        for key in ("streams", "max_concurrency"):
            concurrency = _concurrency(strategy.get(key))
            if concurrency:
                return concurrency
    return None


def parse_guidellm(text: str, *, benchmark_number: int | None = None) -> ParsedBenchmark:
    """GuideLLM ``benchmarks.json``: ``benchmarks[n].metrics``' successful requests —
    ``output_tokens_per_second.mean``, ``requests_per_second.mean``, the p50 (median)
    and p99 of ``time_to_first_token_ms`` and ``inter_token_latency_ms``, and the mean
    ``prompt_token_count`` and ``output_token_count`` per request. A sweep holds
    several benchmarks: ``benchmark_number`` (1-based) names the one to import."""
    document = _require_object(
        _load_json(text, what="GuideLLM"), "line 1", "GuideLLM's benchmarks.json object"
    )
    benchmarks = document.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        _fail(
            gettext_noop(
                "key “benchmarks” is missing or empty: expected GuideLLM's benchmarks.json "
                "(guidellm benchmark --output-path)."
            )
        )
    if benchmark_number is None:
        if len(benchmarks) > 1:
            _fail(
                gettext_noop(
                    "the file holds %(count)s benchmarks (a sweep): choose one, from 1 to "
                    "%(count)s."
                ),
                count=len(benchmarks),
            )
        benchmark_number = 1
    if not 1 <= benchmark_number <= len(benchmarks):
        _fail(
            gettext_noop("benchmark %(number)s: the file holds benchmarks 1 to %(count)s."),
            number=benchmark_number,
            count=len(benchmarks),
        )
    index = benchmark_number - 1
    where = f"benchmarks[{index}]."
    benchmark = _require_object(benchmarks[index], f"key “benchmarks[{index}]”", "an object")
    metrics = _require_object(
        benchmark.get("metrics"), f"key “{where}metrics”", "an object of metrics"
    )
    metrics_where = f"{where}metrics."
    output = _distribution(metrics, "output_tokens_per_second", metrics_where)
    if output is None:
        _fail(
            gettext_noop("key “%(key)s” is missing: expected a number."),
            key=f"{metrics_where}output_tokens_per_second.successful.mean",
        )
    output_where = f"{metrics_where}output_tokens_per_second.successful."
    output_mean = _json_number(output, "mean", where=output_where, required=True)
    requests = _distribution(metrics, "requests_per_second", metrics_where)
    ttft = _distribution(metrics, "time_to_first_token_ms", metrics_where)
    itl = _distribution(metrics, "inter_token_latency_ms", metrics_where)
    ttft_where = f"{metrics_where}time_to_first_token_ms.successful."
    itl_where = f"{metrics_where}inter_token_latency_ms.successful."
    concurrency_measured = _distribution(metrics, "request_concurrency", metrics_where)
    prompt_tokens = _distribution(metrics, "prompt_token_count", metrics_where)
    output_tokens = _distribution(metrics, "output_token_count", metrics_where)
    return ParsedBenchmark(
        output_tokens_per_second=_positive_throughput(output_mean, f"key “{output_where}mean”"),
        requests_per_second=_json_number(
            requests, "mean", where=f"{metrics_where}requests_per_second.successful."
        )
        if requests
        else None,
        ttft_p50_ms=_percentile(ttft, "p50", ttft_where),
        ttft_p99_ms=_percentile(ttft, "p99", ttft_where),
        itl_p50_ms=_percentile(itl, "p50", itl_where),
        itl_p99_ms=_percentile(itl, "p99", itl_where),
        concurrency=_guidellm_concurrency(benchmark),
        input_tokens_per_request=_mean_tokens((prompt_tokens or {}).get("mean")),
        output_tokens_per_request=_mean_tokens((output_tokens or {}).get("mean")),
        raw_figures={
            "benchmark": benchmark_number,
            "benchmarks_in_file": len(benchmarks),
            "output_tokens_per_second.mean": output_mean,
            "requests_per_second.mean": (requests or {}).get("mean"),
            "time_to_first_token_ms.median": (ttft or {}).get("median"),
            "time_to_first_token_ms.p99": _percentile(ttft, "p99", ttft_where),
            "inter_token_latency_ms.median": (itl or {}).get("median"),
            "inter_token_latency_ms.p99": _percentile(itl, "p99", itl_where),
            "request_concurrency.mean": (concurrency_measured or {}).get("mean"),
            "prompt_token_count.mean": (prompt_tokens or {}).get("mean"),
            "output_token_count.mean": (output_tokens or {}).get("mean"),
            "duration": benchmark.get("duration"),
        },
    )


def parse_benchmark(
    text: str, source_format: str, *, benchmark_number: int | None = None
) -> ParsedBenchmark:
    """``text`` read as ``source_format`` (one of FORMATS)."""
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        _fail(gettext_noop("line %(line)s: a NUL character: expected text."), line=line)
    if source_format == MLPERF:
        return parse_mlperf(text)
    if source_format == VLLM:
        return parse_vllm(text)
    if source_format == GENAI_PERF:
        return parse_genai_perf(text)
    if source_format == GUIDELLM:
        return parse_guidellm(text, benchmark_number=benchmark_number)
    _fail(
        gettext_noop("format “%(format)s”: expected one of %(formats)s."),
        format=source_format,
        formats=", ".join(FORMATS),
    )
