"""Pilot benchmarks for the demo fleet (``manage.py seed_demo``): two vLLM
``benchmark_serving`` results of the Asia chat API, on its own L40S GPUs and on the
H100 PCIe the procurement scenario weighs, so the scenario normalises by measured
throughput. The figures are the demo's own, shaped as ``benchmark_serving.py
--save-result`` writes them. Idempotent: the same file imported again for the same
workload stores nothing (``services.import_benchmark`` matches it by its SHA-256)."""

import json

from apps.catalog.models import GpuModel
from apps.pilots import parsers, services

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


# The same load on 4 × H100 PCIe (2.0 TB/s against the L40S's 0.86 TB/s): more tokens
# per GPU, shorter latencies.
DEMO_H100_RESULT = {
    **DEMO_RESULT,
    "date": "20250302-101500",
    "duration": 127.9,
    "request_throughput": 7.818,
    "output_throughput": 3620.4,
    "total_token_throughput": 18102.0,
    "mean_ttft_ms": 188.3,
    "median_ttft_ms": 171.6,
    "std_ttft_ms": 41.2,
    "p99_ttft_ms": 356.9,
    "mean_tpot_ms": 14.1,
    "median_tpot_ms": 13.7,
    "std_tpot_ms": 1.9,
    "p99_tpot_ms": 20.4,
    "mean_itl_ms": 13.9,
    "median_itl_ms": 13.5,
    "std_itl_ms": 2.3,
    "p99_itl_ms": 24.8,
}
# (GPU model slug or None for the workload's own, result, file name, notes)
DEMO_PILOTS = (
    (
        None,
        DEMO_RESULT,
        "vllm_serving_fp8_4xL40S_rate8.json",
        "Demo pilot: FP8 weights and KV cache, 4 × L40S, 8 requests/s, 1,024 in / 256 out tokens.",
    ),
    (
        "h100-pcie",
        DEMO_H100_RESULT,
        "vllm_serving_fp8_4xH100-PCIe_rate8.json",
        "Demo pilot: the same load and settings on 4 × H100 PCIe.",
    ),
)


def seed_pilots_demo(workload, user=None) -> int:
    """Import the demo's pilot results into the demo's ``workload`` (its
    ``DEMO_WORKLOAD``); returns how many were created."""
    if workload is None:
        return 0
    created = 0
    for gpu_slug, result, filename, notes in DEMO_PILOTS:
        gpu_model = (
            GpuModel.objects.filter(slug=gpu_slug).first() if gpu_slug else workload.pool.gpu_model
        )
        if gpu_model is None:
            continue
        outcome = services.import_benchmark(
            workload=workload,
            gpu_model=gpu_model,
            gpu_count=DEMO_GPU_COUNT,
            source_format=parsers.VLLM,
            content=json.dumps(result, indent=1).encode(),
            filename=filename,
            notes=notes,
            user=user,
        )
        created += int(outcome.created)
    return created
