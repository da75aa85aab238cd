"""Cost of measured throughput: framework-free, numbers in, numbers out."""

SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 1_000_000


def output_tokens_per_second_per_gpu(*, output_tokens_per_second: float, gpu_count: int) -> float:
    """The run's output throughput shared over the GPUs that served it."""
    if gpu_count < 1:
        raise ValueError("gpu_count must be at least 1")
    return output_tokens_per_second / gpu_count


def cost_per_million_output_tokens_usd(
    *, price_per_gpu_hour_usd: float, gpu_count: int, output_tokens_per_second: float
) -> float:
    """USD per 10⁶ output tokens at a measured throughput.

    price per GPU-hour × GPUs ÷ (output tokens/s × 3600) × 10⁶ — the project's
    cost-per-1M-tokens formula (FORMULAS.md, "Compute and throughput"), fed a measured
    throughput instead of the decode ceiling: what the GPUs cost in an hour over the
    tokens they produce in that hour.
    """
    if output_tokens_per_second <= 0:
        raise ValueError("output_tokens_per_second must be positive")
    tokens_per_hour = output_tokens_per_second * SECONDS_PER_HOUR
    return price_per_gpu_hour_usd * gpu_count / tokens_per_hour * TOKENS_PER_MILLION
