"""The four parsers read the real samples in tests/data/benchmarks/ (tests/data/SOURCES.md)
to the figures the files print, and refuse what is not their format naming the line or key.
Each expected figure is copied from the sample, with the line or key it is on."""

import json
from pathlib import Path

import pytest

from apps.pilots.parsers import BenchmarkFormatError, parse_benchmark

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "benchmarks"
MLPERF_SERVER = "mlperf_v4.1_AMD_8xMI300X_llama2-70b-99_Server_mlperf_log_summary.txt"
MLPERF_OFFLINE = "mlperf_v4.1_AMD_8xMI300X_llama2-70b-99_Offline_mlperf_log_summary.txt"
VLLM = "vllm_benchmark_serving_4xL40S_kvcache_rate-inf.json"
GENAI_PERF_CSV = "genai_perf_profile_export_genai_perf_cloudai_ai_dynamo.csv"
GUIDELLM = "guidellm_benchmarks_stripped_excerpt.json"


def _read(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def test_mlperf_server_summary():
    result = parse_benchmark(_read(MLPERF_SERVER), "mlperf")
    assert result.output_tokens_per_second == 21028.23  # line 8 "Completed tokens per second"
    assert result.requests_per_second == 71.74  # line 7 "Completed samples per second"
    # Lines 37 and 41: first-token latency p50 990199455 ns, p99 1604171041 ns.
    assert result.ttft_p50_ms == pytest.approx(990.199455)
    assert result.ttft_p99_ms == pytest.approx(1604.171041)
    # Lines 47 and 51: time per output token p50 143943044 ns, p99 197873909 ns.
    assert result.itl_p50_ms == pytest.approx(143.943044)
    assert result.itl_p99_ms == pytest.approx(197.873909)
    assert result.concurrency is None
    assert result.raw_figures["Scenario"] == "Server"
    assert result.raw_figures["Result is"] == "VALID"


def test_mlperf_offline_summary_has_throughput_without_latencies():
    result = parse_benchmark(_read(MLPERF_OFFLINE), "mlperf")
    assert result.output_tokens_per_second == 23514.8  # line 8 "Tokens per second"
    assert result.requests_per_second == 80.15  # line 7 "Samples per second"
    assert result.ttft_p99_ms is None and result.itl_p99_ms is None


def test_vllm_result_json():
    result = parse_benchmark(_read(VLLM), "vllm")
    assert result.output_tokens_per_second == 11011.349280220396  # "output_throughput"
    assert result.requests_per_second == 41.21716673334341  # "request_throughput"
    assert result.ttft_p50_ms == 867.6726769999732  # "median_ttft_ms"
    assert result.ttft_p99_ms == 1249.6421772296253  # "p99_ttft_ms"
    assert result.itl_p50_ms == 37.49666700059606  # "median_itl_ms"
    assert result.itl_p99_ms == 67.51899562010284  # "p99_itl_ms"
    assert result.concurrency is None  # "max_concurrency": null
    assert result.raw_figures["request_rate"] == "inf"
    # "total_input_tokens" 899,100 and "total_output_tokens" 240,439 over 900 "completed".
    assert result.input_tokens_per_request == 999.0
    assert result.output_tokens_per_request == pytest.approx(267.1544, abs=1e-4)


def test_genai_perf_csv():
    result = parse_benchmark(_read(GENAI_PERF_CSV), "genai-perf")
    assert result.output_tokens_per_second == 261.25  # line 10 "Output Token Throughput"
    assert result.requests_per_second == 1.50  # line 11 "Request Throughput"
    # Line 2 "Time To First Token (ms)": p99 "3,457.97", p50 640.07.
    assert result.ttft_p99_ms == 3457.97
    assert result.ttft_p50_ms == 640.07
    # Line 5 "Inter Token Latency (ms)": p99 35.23, p50 30.13.
    assert result.itl_p99_ms == 35.23
    assert result.itl_p50_ms == 30.13
    # Lines 7 and 6, "Input/Output Sequence Length (tokens)": avg "3,000.05" and 174.45;
    # the concurrency is not in the CSV.
    assert result.input_tokens_per_request == 3000.05
    assert result.output_tokens_per_request == 174.45
    assert result.concurrency is None


def test_genai_perf_json_with_units():
    text = """{
      "output_token_throughput": {"unit": "tokens/sec", "avg": 52.69},
      "request_throughput": {"unit": "requests/sec", "avg": 0.8233},
      "time_to_first_token": {"unit": "ns", "avg": 195840000, "p50": 175050000, "p99": 253450000},
      "inter_token_latency": {"unit": "ms", "avg": 35.2, "p50": 34.73, "p99": 35.96},
      "input_sequence_length": {"unit": "tokens", "avg": 550.0, "p50": 550},
      "output_sequence_length": {"unit": "tokens", "avg": 128.4, "p50": 128},
      "input_config": {"concurrency": 4}
    }"""
    result = parse_benchmark(text, "genai-perf")
    assert result.output_tokens_per_second == 52.69
    assert result.requests_per_second == 0.8233
    assert result.ttft_p50_ms == pytest.approx(175.05)
    assert result.ttft_p99_ms == pytest.approx(253.45)
    assert (result.itl_p50_ms, result.itl_p99_ms) == (34.73, 35.96)
    assert result.concurrency == 4
    assert (result.input_tokens_per_request, result.output_tokens_per_request) == (550.0, 128.4)


def test_aiperf_json_keeps_its_concurrency_under_loadgen():
    text = """{
      "output_token_throughput": {"unit": "tokens/sec", "avg": 1400.0},
      "input_sequence_length": {"min": 644, "avg": 644, "max": 644},
      "output_sequence_length": {"min": 7, "avg": 7, "max": 7},
      "input_config": {"loadgen": {"concurrency": 32}}
    }"""
    result = parse_benchmark(text, "genai-perf")
    assert (result.concurrency, result.input_tokens_per_request) == (32, 644)
    assert result.output_tokens_per_request == 7


def test_guidellm_benchmarks_json():
    result = parse_benchmark(_read(GUIDELLM), "guidellm")
    # metrics.output_tokens_per_second.successful.mean
    assert result.output_tokens_per_second == 198.13346751788123
    assert result.requests_per_second == 1.5481806532737452  # requests_per_second…mean
    assert result.ttft_p50_ms == 16.38054847717285  # time_to_first_token_ms…median
    assert result.ttft_p99_ms == 21.281957626342773  # …percentiles.p99
    assert result.itl_p50_ms == 4.9241227427805505  # inter_token_latency_ms…median
    assert result.itl_p99_ms == 5.258346167136365  # …percentiles.p99
    assert result.concurrency == 1  # "strategy": {"type_": "synchronous"}
    # The excerpt keeps no prompt_token_count or output_token_count distribution.
    assert result.input_tokens_per_request is None
    assert result.output_tokens_per_request is None


def test_guidellm_mean_tokens_per_request_come_from_the_token_counts():
    document = json.loads(_read(GUIDELLM))
    metrics = document["benchmarks"][0]["metrics"]
    # As GuideLLM writes them for "prompt_tokens=256,output_tokens=128".
    metrics["prompt_token_count"] = {"successful": {"mean": 256.0, "total_sum": 11776}}
    metrics["output_token_count"] = {"successful": {"mean": 127.6, "total_sum": 5870}}
    result = parse_benchmark(json.dumps(document), "guidellm")
    assert (result.input_tokens_per_request, result.output_tokens_per_request) == (256.0, 127.6)


def test_guidellm_sweep_needs_a_benchmark_number():
    one = _read(GUIDELLM)
    two = one.replace(
        '{"benchmarks": [', '{"benchmarks": [' + one[len('{"benchmarks": [') : -3] + ", ", 1
    )
    with pytest.raises(BenchmarkFormatError, match="holds 2 benchmarks"):
        parse_benchmark(two, "guidellm")
    assert parse_benchmark(two, "guidellm", benchmark_number=2).output_tokens_per_second > 0
    with pytest.raises(BenchmarkFormatError, match="benchmark 3: the file holds benchmarks 1 to 2"):
        parse_benchmark(two, "guidellm", benchmark_number=3)


@pytest.mark.parametrize(
    ("text", "source_format", "message"),
    [
        ("hello\n", "mlperf", "line 1: expected an MLPerf LoadGen summary"),
        (
            "MLPerf Results Summary\nScenario : Server\nCompleted tokens per second: fast\n",
            "mlperf",
            "line 3: “Completed tokens per second” is “fast”: expected a number.",
        ),
        (
            "MLPerf Results Summary\nScenario : SingleStream\nQPS w/o loadgen overhead : 20.89\n",
            "mlperf",
            "no “Completed tokens per second” (Server) or “Tokens per second” (Offline) line",
        ),
        ('{"request_throughput": 1.0}', "vllm", "key “output_throughput” is missing"),
        ('{"output_throughput": "lots"}', "vllm", 'key “output_throughput” is "lots"'),
        ('{"output_throughput": 0, "request_throughput": 1}', "vllm", "expected more than 0"),
        ("[1, 2]", "vllm", "line 1: expected one JSON object"),
        ('{"a": 1}\n{"a": 2}\n', "vllm", "line 2: a second JSON value"),
        ('{"output_throughput": 1,\n', "vllm", "line 2, column 1: not JSON"),
        ("Metric,Value\nRequest Throughput (per sec),1.50\n", "genai-perf", "no “Output Token"),
        (
            "Metric,Value\nOutput Token Throughput (per sec),n/a\n",
            "genai-perf",
            "line 2: “Output Token Throughput (per sec)” is “n/a”: expected a number.",
        ),
        ('{"benchmarks": []}', "guidellm", "key “benchmarks” is missing or empty"),
        (
            '{"benchmarks": [{"metrics": {}}]}',
            "guidellm",
            "key “benchmarks[0].metrics.output_tokens_per_second.successful.mean” is missing",
        ),
        ("abc\x00def", "vllm", "line 1: a NUL character"),
    ],
)
def test_errors_name_the_line_or_key_and_what_was_expected(text, source_format, message):
    with pytest.raises(BenchmarkFormatError) as raised:
        parse_benchmark(text, source_format)
    assert message in str(raised.value)


def test_a_format_that_does_not_match_is_refused():
    with pytest.raises(BenchmarkFormatError, match="line 1: expected an MLPerf LoadGen summary"):
        parse_benchmark(_read(VLLM), "mlperf")
    with pytest.raises(BenchmarkFormatError, match="not JSON"):
        parse_benchmark(_read(MLPERF_SERVER), "vllm")
