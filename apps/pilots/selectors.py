"""Reads of the pilot page and API: each result with the price it is costed at, and
beside the decode ceiling its GPU model has at the workload's settings."""

from dataclasses import dataclass

from apps.pilots import costing
from apps.pilots.models import PilotResult
from apps.pools import memory
from apps.pools.assessment import inference_settings_of, shape_of

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
    decode_ceiling_tokens_per_second_per_gpu: float | None = None

    @property
    def share_of_decode_ceiling_pct(self) -> float | None:
        """Measured ÷ ceiling × 100, not clamped: above 100 the pilot ran at other settings
        than the workload's (``above_decode_ceiling`` flags it)."""
        ceiling = self.decode_ceiling_tokens_per_second_per_gpu
        if not ceiling:
            return None
        return self.result.output_tokens_per_second_per_gpu / ceiling * 100

    @property
    def above_decode_ceiling(self) -> bool:
        share = self.share_of_decode_ceiling_pct
        return share is not None and share > 100

    @property
    def cost_per_million_output_tokens_at_ceiling_usd(self) -> float | None:
        """The floor the ceiling puts on the cost: the same price at the ceiling's tokens/s."""
        ceiling = self.decode_ceiling_tokens_per_second_per_gpu
        if self.price_per_gpu_hour_usd is None or not ceiling:
            return None
        return costing.cost_per_million_output_tokens_usd(
            price_per_gpu_hour_usd=self.price_per_gpu_hour_usd,
            gpu_count=1,
            output_tokens_per_second=ceiling,
        )

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


def decode_ceiling_per_gpu(workload, gpu_model) -> float | None:
    """Tokens/s per GPU of ``gpu_model`` that memory bandwidth allows at the workload's
    inference settings (apps/pools/memory.py, per replica ÷ its tensor-parallel GPUs), or
    None for a training workload or one without a model architecture."""
    if workload.is_training or workload.model_architecture is None:
        return None
    try:
        settings = inference_settings_of(workload)
        replica = memory.decode_tokens_per_second_ceiling(
            shape_of(workload.model_architecture),
            settings,
            gpu_model.memory_bandwidth_bytes_per_second,
        )
    except ValueError:
        return None
    return replica / settings.tensor_parallel


def priced(result: PilotResult, workload, ceilings: dict | None = None) -> PricedPilot:
    """The result with its price, cost and ceiling; ``ceilings`` (GPU model id → ceiling)
    saves computing one ceiling per result on a list."""
    price, source = price_for(workload, result.gpu_model)
    ceilings = {} if ceilings is None else ceilings
    if result.gpu_model_id not in ceilings:
        ceilings[result.gpu_model_id] = decode_ceiling_per_gpu(workload, result.gpu_model)
    cost = (
        None
        if price is None
        else costing.cost_per_million_output_tokens_usd(
            price_per_gpu_hour_usd=price,
            gpu_count=result.gpu_count,
            output_tokens_per_second=result.output_tokens_per_second,
        )
    )
    return PricedPilot(result, price, source, cost, ceilings[result.gpu_model_id])


def pilots_of(workload) -> list[PricedPilot]:
    """The workload's results, each with its price, cost per 10⁶ output tokens and ceiling."""
    results = PilotResult.objects.filter(workload=workload).select_related("gpu_model")
    ceilings = {}
    return [priced(result, workload, ceilings) for result in results]
