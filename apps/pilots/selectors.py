"""Reads of the pilot page and API: each result with the price it is costed at."""

from dataclasses import dataclass

from apps.pilots import costing
from apps.pilots.models import PilotResult

POOL_PRICE = "pool"
CATALOG_PRICE = "catalog"
NO_PRICE = "none"


@dataclass(frozen=True)
class PricedPilot:
    """A result and its measured cost; ``price_source`` says which price: the pool's
    effective price for the workload's own GPU model, the catalog's reference price for
    another, or none."""

    result: PilotResult
    price_per_gpu_hour_usd: float | None
    price_source: str
    cost_per_million_output_tokens_usd: float | None

    # The table sorts on these names (apps/core/tables.RowsData).
    @property
    def gpu_model_name(self) -> str:
        return self.result.gpu_model.name

    @property
    def name(self) -> str:
        return self.result.name

    @property
    def gpu_count(self) -> int:
        return self.result.gpu_count

    @property
    def concurrency(self) -> int | None:
        return self.result.concurrency

    @property
    def output_tokens_per_second(self) -> float:
        return self.result.output_tokens_per_second

    @property
    def output_tokens_per_second_per_gpu(self) -> float:
        return self.result.output_tokens_per_second_per_gpu

    @property
    def ttft_p99_ms(self) -> float | None:
        return self.result.ttft_p99_ms

    @property
    def itl_p99_ms(self) -> float | None:
        return self.result.itl_p99_ms


def price_for(workload, gpu_model) -> tuple[float | None, str]:
    """The price per GPU-hour (USD) a result on ``gpu_model`` is costed at."""
    pool = workload.pool
    # A pool whose cost inputs are missing stores 0: it has no price to cost at.
    if gpu_model.pk == pool.gpu_model_id and pool.effective_price_per_gpu_hour_usd > 0:
        return float(pool.effective_price_per_gpu_hour_usd), POOL_PRICE
    if gpu_model.reference_price_per_gpu_hour_usd is not None:
        return float(gpu_model.reference_price_per_gpu_hour_usd), CATALOG_PRICE
    return None, NO_PRICE


def priced(result: PilotResult, workload) -> PricedPilot:
    price, source = price_for(workload, result.gpu_model)
    cost = (
        None
        if price is None
        else costing.cost_per_million_output_tokens_usd(
            price_per_gpu_hour_usd=price,
            gpu_count=result.gpu_count,
            output_tokens_per_second=result.output_tokens_per_second,
        )
    )
    return PricedPilot(result, price, source, cost)


def pilots_of(workload) -> list[PricedPilot]:
    """The workload's results, each with its price and cost per 10⁶ output tokens."""
    results = PilotResult.objects.filter(workload=workload).select_related("gpu_model")
    return [priced(result, workload) for result in results]
