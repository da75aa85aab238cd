from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "benchmarks"


@pytest.fixture
def sample():
    """``sample("vllm")``: the bytes of the real sample of that format."""
    names = {
        "mlperf": "mlperf_v4.1_AMD_8xMI300X_llama2-70b-99_Server_mlperf_log_summary.txt",
        "vllm": "vllm_benchmark_serving_4xL40S_kvcache_rate-inf.json",
        "genai-perf": "genai_perf_profile_export_genai_perf_cloudai_ai_dynamo.csv",
        "guidellm": "guidellm_benchmarks_stripped_excerpt.json",
    }

    def read(source_format: str) -> bytes:
        return (SAMPLES / names[source_format]).read_bytes()

    read.path = lambda source_format: SAMPLES / names[source_format]
    return read
