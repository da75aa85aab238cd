"""What would fit, when an estimate does not: one change at a time to the calculator's
inputs, each recomputed with the same formulas (apps/pools/memory.py) so its per-GPU total
is exactly what the calculator would show after that change.

Inference: lower-precision weights (FP8, INT4: quantisation changes the model's answers,
so each carries a warning to validate it), a higher tensor-parallel degree (Megatron-LM
splits heads evenly: the degree must divide the attention heads, and the KV heads or be a
multiple of them), a catalog GPU with more memory, fewer concurrent sequences (the most
that fit, ``memory.max_concurrent_sequences``). Training: a higher ZeRO stage (with more
than one data-parallel rank: ZeRO shards across them, Rajbhandari et al. 2019), full
activation recompute (Korthikanti et al. 2022), a higher tensor-parallel degree, a
catalog GPU with more memory.

The price of a proposal is the GPUs it needs × the GPU's public reference price per hour
(the catalog's), None where the catalog has no price.
"""

from dataclasses import dataclass, replace

from apps.core.sentences import gettext_noop, sentence
from apps.pools import memory

QUANTISATION_WARNING = sentence(
    gettext_noop("Validate the quantised model's quality on your own prompts before serving it.")
)
TENSOR_PARALLEL_DEGREES = (2, 4, 8)
LARGER_GPUS_SHOWN = 2


@dataclass(frozen=True)
class Proposal:
    change: str
    gpu_name: str
    gpus: int
    per_gpu_bytes: int
    gpu_memory_bytes: int
    price_per_hour_usd: float | None
    warning: str = ""

    @property
    def headroom_bytes(self) -> int:
        return self.gpu_memory_bytes - self.per_gpu_bytes


def propose(shape, mode: str, settings, gpu, catalog) -> list[Proposal]:
    """Changes that make the estimate fit on ``gpu`` (or, for the GPU proposals, on
    another of ``catalog``), cheapest first within each kind of change; empty when it
    already fits."""
    estimate = _estimator(shape, mode)
    if memory.fits(estimate(settings), gpu.memory_bytes):
        return []
    gpus_of = _gpu_count(mode)
    proposals: list[Proposal] = []

    def offer(change, candidate, on_gpu=gpu, warning=""):
        try:
            breakdown = estimate(candidate)
        except ValueError:  # a degree the model's heads cannot be split by
            return False
        if not memory.fits(breakdown, on_gpu.memory_bytes):
            return False
        proposals.append(_proposal(change, on_gpu, gpus_of(candidate), breakdown, warning))
        return True

    if mode == "inference":
        current_bytes = memory.BYTES_PER_PARAMETER[settings.weight_precision]
        for precision, label in (("fp8", "FP8"), ("int4", "INT4")):
            if memory.BYTES_PER_PARAMETER[precision] < current_bytes:
                candidate = replace(settings, weight_precision=precision)
                if offer(
                    sentence(gettext_noop("%(precision)s weights"), precision=label),
                    candidate,
                    warning=QUANTISATION_WARNING,
                ):
                    break
        _offer_tensor_parallel(offer, shape, settings)
        if shape.has_kv_shape:
            most = memory.max_concurrent_sequences(shape, settings, gpu.memory_bytes)
            if 1 <= most < settings.concurrent_sequences:
                offer(
                    sentence(gettext_noop("%(count)s concurrent sequences"), count=most),
                    replace(settings, concurrent_sequences=most),
                )
    else:
        if settings.data_parallel > 1:
            for stage in range(settings.zero_stage + 1, 4):
                if offer(f"ZeRO-{stage}", replace(settings, zero_stage=stage)):
                    break
        if settings.recompute != "full":
            offer(
                sentence(gettext_noop("Full activation recompute")),
                replace(settings, recompute="full"),
            )
        _offer_tensor_parallel(offer, shape, settings)
    larger = [
        other for other in catalog if other.memory_bytes > gpu.memory_bytes and other.pk != gpu.pk
    ]
    larger.sort(key=_price_order)
    shown = 0
    for other in larger:
        if shown < LARGER_GPUS_SHOWN and offer(f"{other.name}", settings, on_gpu=other):
            shown += 1
    return proposals


def _offer_tensor_parallel(offer, shape, settings) -> None:
    for degree in TENSOR_PARALLEL_DEGREES:
        if degree <= settings.tensor_parallel:
            continue
        if shape.attention_heads and shape.attention_heads % degree:
            continue  # serving engines refuse a split of unequal head shares
        kv_heads = shape.effective_kv_heads
        if kv_heads and kv_heads % degree and degree % kv_heads:
            continue
        if offer(
            sentence(gettext_noop("Tensor parallel %(degree)s"), degree=degree),
            replace(settings, tensor_parallel=degree),
        ):
            return


def _estimator(shape, mode):
    if mode == "inference":
        return lambda settings: memory.inference_memory_per_gpu(shape, settings)
    return lambda settings: memory.training_memory_per_gpu(shape, settings)


def _gpu_count(mode):
    """GPUs of one inference replica (its tensor-parallel degree), or of the training job
    (data × tensor × pipeline parallel)."""
    if mode == "inference":
        return lambda settings: settings.tensor_parallel
    return lambda settings: (
        settings.data_parallel * settings.tensor_parallel * settings.pipeline_parallel
    )


def _price_order(gpu):
    price = gpu.reference_price_per_gpu_hour_usd
    return (price is None, float(price or 0), gpu.memory_bytes)


def _proposal(change, gpu, gpus, breakdown, warning) -> Proposal:
    price = gpu.reference_price_per_gpu_hour_usd
    return Proposal(
        change=change,
        gpu_name=gpu.name,
        gpus=gpus,
        per_gpu_bytes=breakdown.total,
        gpu_memory_bytes=gpu.memory_bytes,
        price_per_hour_usd=float(price) * gpus if price is not None else None,
        warning=warning,
    )
