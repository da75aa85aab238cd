"""Reads of the pilot page and API: each result with the price it is costed at, and
beside the decode ceiling its GPU model has at the settings the pilot ran at.

A ceiling is only comparable with a measurement at the same settings: 64 sequences of
1,280 tokens read far less KV cache per step than 16 of 8,192. So each result's ceiling
holds for its own concurrency and mean input + output tokens per request when its file
gives them (the workload's tensor parallelism and precisions, which no file records,
complete them), and for the workload's settings otherwise; ``CeilingSettings`` says
which, and why.
"""

import math
from dataclasses import dataclass, replace

from django.utils import timezone
from django.utils.translation import gettext

from apps.currencies.rates import UsdPrice, usd_price
from apps.pilots import costing
from apps.pilots.models import PilotResult
from apps.pools import memory
from apps.pools.assessment import inference_settings_of, shape_of

POOL_PRICE = "pool"
CATALOG_PRICE = "catalog"
NO_PRICE = "none"
# The pool's price is in a currency whose rate for this month no one recorded.
MISSING_RATE = "missing_rate"
# Whose settings a decode ceiling holds for.
PILOT_SETTINGS = "pilot"
WORKLOAD_SETTINGS = "workload"
CONCURRENCY = "concurrency"
LENGTHS = "lengths"


@dataclass(frozen=True)
class CeilingSettings:
    """The settings a result's decode ceiling is computed at: ``basis`` PILOT_SETTINGS
    (the result's own concurrency and tokens per request) or WORKLOAD_SETTINGS, then
    ``missing`` names what the file does not say (CONCURRENCY, LENGTHS).
    ``concurrent_sequences`` are per replica of ``tensor_parallel`` GPUs."""

    basis: str
    concurrent_sequences: int
    context_length_tokens: int
    tensor_parallel: int
    missing: tuple[str, ...] = ()

    @property
    def is_pilots_own(self) -> bool:
        return self.basis == PILOT_SETTINGS

    @property
    def description(self) -> str:
        """In words, for the panel and the API: which settings, and why those."""
        values = {
            "sequences": f"{self.concurrent_sequences:,}",
            "context": f"{self.context_length_tokens:,}",
        }
        if self.is_pilots_own:
            return gettext("at %(sequences)s sequences × %(context)s tokens, the pilot's own") % (
                values
            )
        if set(self.missing) == {CONCURRENCY, LENGTHS}:
            reason = gettext(
                "at the workload's settings (%(sequences)s sequences × %(context)s tokens): "
                "the file says neither its concurrency nor its input and output lengths"
            )
        elif CONCURRENCY in self.missing:
            reason = gettext(
                "at the workload's settings (%(sequences)s sequences × %(context)s tokens): "
                "the file does not say its concurrency"
            )
        else:
            reason = gettext(
                "at the workload's settings (%(sequences)s sequences × %(context)s tokens): "
                "the file does not say its input and output lengths"
            )
        return reason % values


@dataclass(frozen=True)
class PricedPilot:
    """A result and its measured cost; ``price_source`` says which price: the pool's
    effective price for the workload's own GPU model, the catalog's reference price for
    another, or none. The ceiling holds for ``decode_ceiling_settings``."""

    result: PilotResult
    price_per_gpu_hour_usd: float | None
    price_source: str
    cost_per_million_output_tokens_usd: float | None
    decode_ceiling_tokens_per_second_per_gpu: float | None = None
    decode_ceiling_settings: CeilingSettings | None = None
    missing_rate_text: str = ""

    @property
    def share_of_decode_ceiling_pct(self) -> float | None:
        """Measured ÷ ceiling × 100, not clamped: above 100 the pilot did what memory
        bandwidth cannot carry at the ceiling's settings (``above_decode_ceiling`` flags
        it): it ran at other settings than those, or its GPU count is wrong."""
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


def pool_usd_price(workload, prices: dict | None = None) -> UsdPrice:
    """The workload's pool's price in US dollars at this month's rate; ``prices`` (pool id
    → price) reads the rate once for every result of a list."""
    prices = {} if prices is None else prices
    if workload.pool_id not in prices:
        prices[workload.pool_id] = usd_price(workload.pool, timezone.now())
    return prices[workload.pool_id]


def price_for(workload, gpu_model, prices: dict | None = None) -> tuple[float | None, str]:
    """The price per GPU-hour (USD) a result on ``gpu_model`` is costed at: the pool's
    converted from its currency at this month's rate (none, ``MISSING_RATE``, without it)."""
    pool = workload.pool
    # A pool whose cost inputs are missing stores 0: it has no price to cost at.
    if gpu_model.pk == pool.gpu_model_id and pool.effective_price_per_gpu_hour_usd > 0:
        price = pool_usd_price(workload, prices)
        if price.usd is None:
            return None, MISSING_RATE
        return float(price.usd), POOL_PRICE
    if gpu_model.reference_price_per_gpu_hour_usd is not None:
        return float(gpu_model.reference_price_per_gpu_hour_usd), CATALOG_PRICE
    return None, NO_PRICE


def decode_ceiling_per_gpu(workload, gpu_model, settings=None) -> float | None:
    """Tokens/s per GPU of ``gpu_model`` that memory bandwidth allows at ``settings``
    (default: the workload's inference settings; apps/pools/memory.py, per replica ÷ its
    tensor-parallel GPUs), or None for a training workload or one without a model
    architecture."""
    if workload.is_training or workload.model_architecture is None:
        return None
    try:
        settings = settings or inference_settings_of(workload)
        replica = memory.decode_tokens_per_second_ceiling(
            shape_of(workload.model_architecture),
            settings,
            gpu_model.memory_bandwidth_bytes_per_second,
        )
    except ValueError:
        return None
    return replica / settings.tensor_parallel


def ceiling_settings_of(result: PilotResult, workload) -> memory.InferenceSettings | None:
    """The inference settings ``result``'s ceiling is computed at, or None for a workload
    without them: the pilot's concurrency, spread over its replicas (its GPUs ÷ the
    workload's tensor parallelism, at most its GPUs), and its mean input + output tokens
    per request as the context, when the file gives both; else the workload's."""
    try:
        settings = inference_settings_of(workload)
    except ValueError:
        return None
    if not (
        result.concurrency and result.input_tokens_per_request and result.output_tokens_per_request
    ):
        return settings
    tensor_parallel = min(settings.tensor_parallel, result.gpu_count)
    replicas = max(1, result.gpu_count // tensor_parallel)
    try:
        return replace(
            settings,
            tensor_parallel=tensor_parallel,
            concurrent_sequences=math.ceil(result.concurrency / replicas),
            context_length=math.ceil(
                result.input_tokens_per_request + result.output_tokens_per_request
            ),
        )
    except ValueError:
        return settings


def _described(result: PilotResult, settings) -> CeilingSettings:
    missing = ()
    if not result.concurrency:
        missing += (CONCURRENCY,)
    if not (result.input_tokens_per_request and result.output_tokens_per_request):
        missing += (LENGTHS,)
    return CeilingSettings(
        basis=WORKLOAD_SETTINGS if missing else PILOT_SETTINGS,
        concurrent_sequences=settings.concurrent_sequences,
        context_length_tokens=settings.context_length,
        tensor_parallel=settings.tensor_parallel,
        missing=missing,
    )


def priced(
    result: PilotResult, workload, ceilings: dict | None = None, prices: dict | None = None
) -> PricedPilot:
    """The result with its price, cost and ceiling; ``ceilings`` ((GPU model id,
    settings) → ceiling) and ``prices`` (``pool_usd_price``) save computing one ceiling
    and reading the rates once per result on a list."""
    prices = {} if prices is None else prices
    price, source = price_for(workload, result.gpu_model, prices)
    missing = pool_usd_price(workload, prices).missing_text if source == MISSING_RATE else ""
    ceilings = {} if ceilings is None else ceilings
    ceiling, described = None, None
    settings = None
    if not workload.is_training and workload.model_architecture is not None:
        settings = ceiling_settings_of(result, workload)
    if settings is not None:
        key = (result.gpu_model_id, settings)
        if key not in ceilings:
            ceilings[key] = decode_ceiling_per_gpu(workload, result.gpu_model, settings)
        ceiling = ceilings[key]
        if ceiling is not None:
            described = _described(result, settings)
    cost = (
        None
        if price is None
        else costing.cost_per_million_output_tokens_usd(
            price_per_gpu_hour_usd=price,
            gpu_count=result.gpu_count,
            output_tokens_per_second=result.output_tokens_per_second,
        )
    )
    return PricedPilot(result, price, source, cost, ceiling, described, missing)


def pilots_of(workload) -> list[PricedPilot]:
    """The workload's results, each with its price, cost per 10⁶ output tokens and ceiling."""
    results = PilotResult.objects.filter(workload=workload).select_related("gpu_model")
    ceilings = {}
    prices: dict = {}
    return [priced(result, workload, ceilings, prices) for result in results]
