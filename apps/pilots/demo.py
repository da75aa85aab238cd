"""A pilot benchmark for the demo fleet (``manage.py seed_demo``): one vLLM
``benchmark_serving`` result of the Asia chat API's L40S pool. The figures are the demo's
own, shaped as ``benchmark_serving.py --save-result`` writes them. Idempotent: the same
file imported again for the same workload stores nothing (``services.import_benchmark``
matches it by its SHA-256)."""

import json

from apps.pilots import parsers, services
from apps.pools.models import Workload

DEMO_WORKLOAD = "chat-api-asia"
DEMO_GPU_COUNT = 4
DEMO_RESULT = {
    "date": "20250301-093000",
    "backend": "vllm",
    "model_id": "meta-llama/Meta-Llama-3-70B-Instruct",
    "tokenizer_id": "meta-llama/Meta-Llama-3-70B-Instruct",
    "num_prompts": 1000,
    "request_rate": "8.0",
    "burstiness": 1.0,
    "max_concurrency": 64,
    "duration": 131.52,
    "completed": 1000,
    "total_input_tokens": 1024000,
    "total_output_tokens": 256000,
    "request_throughput": 7.603,
    "output_throughput": 1946.47,
    "total_token_throughput": 9732.36,
    "mean_ttft_ms": 412.8,
    "median_ttft_ms": 388.1,
    "std_ttft_ms": 96.4,
    "p99_ttft_ms": 781.5,
    "mean_tpot_ms": 31.2,
    "median_tpot_ms": 30.4,
    "std_tpot_ms": 4.1,
    "p99_tpot_ms": 44.9,
    "mean_itl_ms": 30.9,
    "median_itl_ms": 29.8,
    "std_itl_ms": 5.2,
    "p99_itl_ms": 52.6,
}


def seed_pilots_demo(user=None) -> int:
    """Import the demo's pilot result when its workload exists; returns how many were
    created (0 or 1)."""
    workload = Workload.objects.select_related("pool__gpu_model").filter(slug=DEMO_WORKLOAD).first()
    if workload is None:
        return 0
    outcome = services.import_benchmark(
        workload=workload,
        gpu_model=workload.pool.gpu_model,
        gpu_count=DEMO_GPU_COUNT,
        source_format=parsers.VLLM,
        content=json.dumps(DEMO_RESULT, indent=1).encode(),
        filename="vllm_serving_fp8_4xL40S_rate8.json",
        notes="Demo pilot: FP8 weights and KV cache, 4 × L40S, 8 requests/s, 1,024 in / 256 "
        "out tokens.",
        user=user,
    )
    return int(outcome.created)
