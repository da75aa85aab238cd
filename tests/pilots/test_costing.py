import pytest

from apps.pilots.costing import (
    cost_per_million_output_tokens_usd,
    output_tokens_per_second_per_gpu,
)


def test_cost_per_million_output_tokens():
    # $2 per GPU-hour × 8 GPUs = $16 an hour; 1000 tokens/s × 3600 s = 3.6 M tokens an hour.
    assert cost_per_million_output_tokens_usd(
        price_per_gpu_hour_usd=2.0, gpu_count=8, output_tokens_per_second=1000.0
    ) == pytest.approx(16 / 3.6)


def test_per_gpu_throughput_and_refusals():
    assert output_tokens_per_second_per_gpu(output_tokens_per_second=900.0, gpu_count=4) == 225.0
    with pytest.raises(ValueError):
        output_tokens_per_second_per_gpu(output_tokens_per_second=900.0, gpu_count=0)
    with pytest.raises(ValueError):
        cost_per_million_output_tokens_usd(
            price_per_gpu_hour_usd=1.0, gpu_count=1, output_tokens_per_second=0.0
        )
