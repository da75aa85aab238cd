"""Fit, placement and recommendations for a workload: Django objects in, plain results
out. The maths is in memory.py (FORMULAS.md); the rules are in placement.py."""

from dataclasses import dataclass, field, replace

from django.utils import timezone
from django.utils.translation import gettext

from apps.catalog.models import GpuModel, ModelArchitecture
from apps.core.texts import translated
from apps.currencies.rates import usd_price
from apps.pools import memory
from apps.pools.placement import Finding, PlacementFacts, placement_findings

# A workload using less than this share of its GPU's memory is "a lot to spare": a
# smaller or cheaper GPU would likely do.
SPARE_MEMORY_FRACTION = 0.5
RECOMMENDATION_LIMIT = 5
INFERENCE_TENSOR_PARALLEL_OPTIONS = (1, 2, 4, 8)


@dataclass(frozen=True)
class Recommendation:
    gpu_model: GpuModel
    gpus: int
    tensor_parallel: int
    memory_per_gpu_bytes: int
    price_per_hour_usd: float | None  # None when the catalog has no reference price

    @property
    def utilisation_of_memory(self) -> float:
        return self.memory_per_gpu_bytes / self.gpu_model.memory_bytes


@dataclass
class Assessment:
    breakdown: memory.MemoryBreakdown | None
    gpu_memory_bytes: int
    fits: bool | None
    headroom_bytes: int | None
    max_concurrent_sequences: int | None = None
    training_time_seconds: float | None = None
    decode_ceiling_tokens_per_second: float | None = None
    cost_per_million_tokens_usd: float | None = None
    findings: list[Finding] = field(default_factory=list)
    recommendations: list[Recommendation] = field(default_factory=list)
    missing: str = ""  # why no estimate could be made
    # The exchange rate the dollar figures need and no one recorded ("" when none).
    missing_rate_text: str = ""

    @property
    def status(self) -> str:
        if self.fits is None:
            return "unknown"
        if not self.fits:
            return "does_not_fit"
        if self.has_lots_to_spare:
            return "fits_with_spare"
        return "fits"

    @property
    def has_lots_to_spare(self) -> bool:
        return bool(
            self.fits
            and self.breakdown
            and self.breakdown.total < SPARE_MEMORY_FRACTION * self.gpu_memory_bytes
        )


def shape_of(architecture: ModelArchitecture) -> memory.ModelShape:
    return memory.ModelShape(
        params=architecture.total_params,
        layers=architecture.layers,
        hidden_size=architecture.hidden_size,
        attention_heads=architecture.attention_heads,
        kv_heads=architecture.kv_heads,
        head_dim=architecture.head_dim,
        active_params=architecture.active_params,
    )


def training_settings_of(workload) -> memory.TrainingSettings:
    return memory.TrainingSettings(
        precision=workload.precision,
        optimizer=workload.optimizer,
        zero_stage=workload.zero_stage,
        data_parallel=workload.data_parallel,
        tensor_parallel=workload.tensor_parallel,
        pipeline_parallel=workload.pipeline_parallel,
        sequence_parallel=workload.sequence_parallel,
        recompute=workload.recompute,
        micro_batch_size=workload.micro_batch_size,
        seq_len=workload.seq_len,
    )


def inference_settings_of(workload) -> memory.InferenceSettings:
    return memory.InferenceSettings(
        weight_precision=workload.weight_precision,
        kv_cache_precision=workload.kv_cache_precision,
        context_length=workload.context_length,
        concurrent_sequences=workload.concurrent_sequences,
        tensor_parallel=workload.inference_tensor_parallel,
    )


def assess_workload(workload, *, gpu_catalog=None, rates=None) -> Assessment:
    """Everything the workload page shows. ``gpu_catalog`` (a list of GpuModel) and
    ``rates`` (this month's exchange rates, ``usd_rates_at``) are passed by list pages that
    assess many workloads, to avoid one catalog query and one rates query each."""
    pool = workload.pool
    gpu = pool.gpu_model
    architecture = workload.model_architecture
    assessment = Assessment(
        breakdown=None, gpu_memory_bytes=gpu.memory_bytes, fits=None, headroom_bytes=None
    )
    if architecture is None:
        assessment.missing = gettext("Choose a model architecture to estimate memory.")
    else:
        try:
            _estimate(assessment, workload, architecture, gpu, pool, rates)
        except ValueError as error:
            assessment.missing = translated(error)
    assessment.findings = placement_findings(
        PlacementFacts(
            workload_is_training=workload.is_training,
            workload_is_online_inference=workload.is_online_inference,
            pool_purpose=pool.purpose,
            pool_interconnect=pool.interconnect,
            workload_gpus=workload.gpu_count,
            gpus_per_node=pool.gpus_per_node,
            weight_precision=None if workload.is_training else workload.weight_precision,
            quantization_validated=workload.quantization_validated,
            software_pinned=pool.software_pinned,
            fits=assessment.fits,
            memory_needed_bytes=assessment.breakdown.total if assessment.breakdown else None,
            gpu_memory_bytes=gpu.memory_bytes,
        )
    )
    if workload.kind == "lora_fine_tune" and assessment.breakdown is not None:
        assessment.findings.append(
            Finding(
                "info",
                "lora_estimated_as_full_fine_tune",
                gettext(
                    "LoRA is estimated as a full fine-tune of every weight: an upper bound. "
                    "Adapters need far less gradient and optimizer memory."
                ),
            )
        )
    wants_alternatives = assessment.fits is False or assessment.has_lots_to_spare
    if architecture is not None and wants_alternatives:
        catalog = gpu_catalog if gpu_catalog is not None else list(GpuModel.objects.all())
        assessment.recommendations = recommend_gpus(workload, architecture, catalog)
    return assessment


def _estimate(assessment, workload, architecture, gpu, pool, rates):
    shape = shape_of(architecture)
    # The pool's price in US dollars at this month's rate; no dollar figure without it.
    usd = usd_price(pool, timezone.now(), rates)
    assessment.missing_rate_text = usd.missing_text
    price = float(usd.usd or 0)
    if workload.is_training:
        settings = training_settings_of(workload)
        breakdown = memory.training_memory_per_gpu(shape, settings)
        peak = gpu.dense_peak_flops(workload.precision)
        if workload.tokens_to_train and peak:
            assessment.training_time_seconds = memory.training_time_seconds(
                shape.active_params or shape.params,
                workload.tokens_to_train,
                workload.gpu_count,
                peak,
                float(workload.expected_mfu),
            )
    else:
        settings = inference_settings_of(workload)
        breakdown = memory.inference_memory_per_gpu(shape, settings)
        assessment.max_concurrent_sequences = memory.max_concurrent_sequences(
            shape, settings, gpu.memory_bytes
        )
        ceiling = memory.decode_tokens_per_second_ceiling(
            shape, settings, gpu.memory_bandwidth_bytes_per_second
        )
        assessment.decode_ceiling_tokens_per_second = ceiling
        if price:
            assessment.cost_per_million_tokens_usd = memory.cost_per_million_tokens_usd(
                price, settings.tensor_parallel, ceiling
            )
    assessment.breakdown = breakdown
    assessment.fits = memory.fits(breakdown, gpu.memory_bytes)
    assessment.headroom_bytes = memory.headroom_bytes(breakdown, gpu.memory_bytes)


def recommend_gpus(workload, architecture, catalog) -> list[Recommendation]:
    """Catalog GPUs and counts that would hold the workload, cheapest per hour first.

    Inference tries tensor-parallel replicas of 1, 2, 4 and 8 GPUs and keeps the workload's
    replica count. Training keeps its tensor and pipeline degrees and GPU count (the data
    parallel degree follows): only the GPU model changes, because its parallel layout is a
    decision the team made, not ours.
    """
    shape = shape_of(architecture)
    options = []
    for gpu in catalog:
        if workload.is_training:
            breakdown = memory.training_memory_per_gpu(shape, training_settings_of(workload))
            if memory.fits(breakdown, gpu.memory_bytes):
                options.append((gpu, workload.gpu_count, workload.tensor_parallel, breakdown))
            continue
        for tensor_parallel in INFERENCE_TENSOR_PARALLEL_OPTIONS:
            if architecture.kv_heads % tensor_parallel and tensor_parallel % architecture.kv_heads:
                continue
            settings = replace(inference_settings_of(workload), tensor_parallel=tensor_parallel)
            breakdown = memory.inference_memory_per_gpu(shape, settings)
            if memory.fits(breakdown, gpu.memory_bytes):
                options.append(
                    (gpu, workload.replicas * tensor_parallel, tensor_parallel, breakdown)
                )
                break
    recommendations = [
        Recommendation(
            gpu_model=gpu,
            gpus=gpus,
            tensor_parallel=tensor_parallel,
            memory_per_gpu_bytes=breakdown.total,
            price_per_hour_usd=(
                float(gpu.reference_price_per_gpu_hour_usd) * gpus
                if gpu.reference_price_per_gpu_hour_usd is not None
                else None
            ),
        )
        for gpu, gpus, tensor_parallel, breakdown in options
    ]
    recommendations.sort(
        key=lambda option: (option.price_per_hour_usd is None, option.price_per_hour_usd or 0)
    )
    return recommendations[:RECOMMENDATION_LIMIT]
