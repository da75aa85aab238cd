"""A scenario's demand: measured from a pool's or a workload's telemetry, typed as GPU-hours
per month, or a training job's GPU-hours; and each option's throughput against the
reference GPU, measured by pilots where they exist."""

from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Max, Sum
from django.utils.translation import gettext as _

from apps.catalog.models import GpuModel
from apps.pilots.models import PilotResult
from apps.pools import memory
from apps.pools.assessment import inference_settings_of, shape_of
from apps.procurement.comparison import maths
from apps.procurement.models import (
    DemandSource,
    Scenario,
    ThroughputBasis,
)
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests

HOURS = maths.HOURS_PER_MONTH


@dataclass
class DemandInfo:
    """What the page says about where the demand came from."""

    source_label: str
    reference_gpu: GpuModel | None = None
    hours: int = 0
    window_start: object = None
    window_end: object = None
    empty_message: str = ""  # why there is no measured demand (the empty state)
    fallback_used: bool = False
    notes: list[str] = field(default_factory=list)
    hourly_times: list = field(default_factory=list)  # hour of each curve point, if measured


PILOT_THROUGHPUT = "pilot"
ESTIMATED_THROUGHPUT = "estimate"


@dataclass(frozen=True)
class ThroughputUsed:
    """How an option's throughput ratio was found: measured by pilots of the scenario's
    workload on both GPU models, or estimated from the catalog by the option's basis."""

    source: str  # PILOT_THROUGHPUT or ESTIMATED_THROUGHPUT
    explanation: str
    option_pilot: PilotResult | None = None
    reference_pilot: PilotResult | None = None

    @property
    def measured(self) -> bool:
        return self.source == PILOT_THROUGHPUT


def _window(latest_hour, window_days):
    return latest_hour - timedelta(days=window_days) + timedelta(hours=1), latest_hour


def _request_totals(start, end, **workloads) -> tuple[float | None, float | None]:
    """Output tokens and requests in the window, of ``workload=…`` or ``workload__pool=…``."""
    totals = WorkloadHourlyRequests.objects.filter(
        hour__gte=start, hour__lte=end, **workloads
    ).aggregate(tokens=Sum("output_tokens"), requests=Sum("requests"))
    return (
        float(totals["tokens"]) if totals["tokens"] else None,
        float(totals["requests"]) if totals["requests"] else None,
    )


def _pool_busy_curve(pool, window_days):
    latest = pool.hourly_usage.aggregate(latest=Max("hour"))["latest"]
    if latest is None:
        return None
    start, end = _window(latest, window_days)
    rows = list(
        PoolHourlyUsage.objects.filter(pool=pool, hour__gte=start, hour__lte=end)
        .order_by("hour")
        .values_list("hour", "busy_gpu_hours")
    )
    return start, end, rows


def _inference_setup(scenario):
    """(model shape, inference settings) for decode ceilings, or (None, None)."""
    workload = scenario.demand_workload
    if workload is not None and workload.model_architecture and not workload.is_training:
        return shape_of(workload.model_architecture), inference_settings_of(workload)
    if scenario.model_architecture is not None:
        precision = scenario.compute_precision
        return shape_of(scenario.model_architecture), memory.InferenceSettings(
            weight_precision=precision,
            kv_cache_precision=precision if precision != "int8" else "fp16",
            context_length=4096,
            concurrent_sequences=16,
        )
    return None, None


def per_gpu_throughput(scenario, gpu: GpuModel, basis: str) -> tuple[float | None, str]:
    """Work per second one GPU can do by ``basis`` (FLOP/s or tokens/s), or None and why."""
    if basis == ThroughputBasis.DECODE_CEILING:
        shape, settings = _inference_setup(scenario)
        if shape is None:
            return None, "the decode ceiling needs a measured inference workload with a model "
            "architecture, or the scenario's model architecture"
        ceiling = memory.decode_tokens_per_second_ceiling(
            shape, settings, gpu.memory_bandwidth_bytes_per_second
        )
        return ceiling / settings.tensor_parallel, ""
    peak = gpu.dense_peak_flops(scenario.compute_precision)
    if not peak:
        return None, _("%(gpu)s has no dense %(precision)s peak in the catalog") % {
            "gpu": gpu.name,
            "precision": scenario.compute_precision,
        }
    return peak, ""


def best_pilots(scenario) -> dict[int, PilotResult]:
    """GPU model id → the pilot of the scenario's inference workload with the most output
    tokens/s per GPU on that model (the earliest imported of equals): the capacity the
    comparison normalises by. Empty without a measured inference workload."""
    workload = scenario.demand_workload
    if workload is None or workload.is_training:
        return {}
    best = {}
    results = PilotResult.objects.filter(workload=workload).select_related("gpu_model")
    for result in results.order_by("pk"):
        current = best.get(result.gpu_model_id)
        per_gpu = result.output_tokens_per_second_per_gpu
        if current is None or per_gpu > current.output_tokens_per_second_per_gpu:
            best[result.gpu_model_id] = result
    return best


def _pilot_words(result: PilotResult) -> dict:
    return {
        "pilot": result.name,
        "gpu": result.gpu_model.name,
        "tokens": f"{result.output_tokens_per_second_per_gpu:,.0f}",
    }


def throughput_used(scenario, option, reference_gpu, pilots: dict) -> ThroughputUsed:
    """Measured where the workload has a pilot on both the option's GPU model and the
    reference GPU model: a ratio of two measurements, never of a measurement and a
    catalog bound. Otherwise the option's basis, and which pilot is missing."""
    option_pilot = pilots.get(option.gpu_model_id)
    reference_pilot = pilots.get(reference_gpu.pk)
    if option_pilot is not None and option_pilot == reference_pilot:
        return ThroughputUsed(
            PILOT_THROUGHPUT,
            _(
                "Measured: the reference GPU model itself, pilot “%(pilot)s” on %(gpu)s at "
                "%(tokens)s output tokens/s per GPU, so 1.00×."
            )
            % _pilot_words(option_pilot),
            option_pilot,
            reference_pilot,
        )
    if option_pilot is not None and reference_pilot is not None:
        return ThroughputUsed(
            PILOT_THROUGHPUT,
            _(
                "Measured: pilot “%(option_pilot)s” on %(option_gpu)s, %(option_tokens)s output "
                "tokens/s per GPU ÷ pilot “%(reference_pilot)s” on %(reference_gpu)s, "
                "%(reference_tokens)s output tokens/s per GPU."
            )
            % {
                **{f"option_{key}": value for key, value in _pilot_words(option_pilot).items()},
                **{
                    f"reference_{key}": value
                    for key, value in _pilot_words(reference_pilot).items()
                },
            },
            option_pilot,
            reference_pilot,
        )
    basis = option.get_throughput_basis_display()
    workload = scenario.demand_workload
    if workload is None or workload.is_training:
        why = _("the demand is not one inference workload's, so no pilot applies")
    else:
        missing = [
            gpu.name
            for gpu, pilot in ((option.gpu_model, option_pilot), (reference_gpu, reference_pilot))
            if pilot is None
        ]
        why = _("no pilot of %(workload)s on %(gpus)s") % {
            "workload": workload.name,
            "gpus": _(" or ").join(dict.fromkeys(missing)),
        }
    return ThroughputUsed(
        ESTIMATED_THROUGHPUT,
        _("Estimated: %(basis)s (%(why)s).") % {"basis": basis, "why": why},
    )


def _entered_curve(scenario) -> list[float]:
    return list(
        maths.entered_demand_curve(
            float(scenario.entered_gpu_hours_per_month), scenario.hourly_profile_weights()
        )
    )


def build_demand(
    scenario: Scenario, pilots: dict | None = None
) -> tuple[maths.Demand | None, DemandInfo]:
    """The scenario's demand curve and what the page says of it; ``pilots`` is
    ``best_pilots(scenario)`` when the caller has it already."""
    source = scenario.demand_source
    info = DemandInfo(source_label=scenario.get_demand_source_display())
    horizon = scenario.horizon_hours
    curve = None
    tokens = requests = None

    if source == DemandSource.MEASURED_POOL:
        pool = scenario.demand_pool
        if pool is None:
            info.empty_message = _("Choose the pool whose measured busy GPUs make the demand.")
        else:
            info.reference_gpu = pool.gpu_model
            measured = _pool_busy_curve(pool, scenario.window_days)
            if not measured or not measured[2]:
                info.empty_message = _(
                    "No hourly rollups for %(pool)s yet: import or pull its telemetry."
                ) % {"pool": pool.name}
            else:
                info.window_start, info.window_end, rows = measured
                info.hourly_times = [hour for hour, _ in rows]
                curve = [busy for _, busy in rows]
                tokens, requests = _request_totals(
                    info.window_start, info.window_end, workload__pool=pool
                )
    elif source == DemandSource.MEASURED_WORKLOAD:
        workload = scenario.demand_workload
        if workload is None:
            info.empty_message = _("Choose the workload whose measured curve makes the demand.")
        else:
            if pilots is None:
                pilots = best_pilots(scenario)
            curve, tokens, requests = _workload_curve(scenario, workload, info, pilots)
    elif source == DemandSource.ENTERED:
        info.reference_gpu = scenario.reference_gpu_model
        if scenario.entered_gpu_hours_per_month is None:
            info.empty_message = _("Enter GPU-hours per month.")
        else:
            curve = _entered_curve(scenario)
    elif source == DemandSource.TRAINING_JOB:
        curve = _training_curve(scenario, info)

    measured = source in (DemandSource.MEASURED_POOL, DemandSource.MEASURED_WORKLOAD)
    if curve is None and measured and scenario.entered_gpu_hours_per_month is not None:
        info.fallback_used = True
        info.reference_gpu = info.reference_gpu or scenario.reference_gpu_model
        curve = _entered_curve(scenario)
        info.notes.append(_("Using the entered GPU-hours per month until measurements exist."))
    if info.reference_gpu is None and curve is not None:
        info.empty_message = info.empty_message or _("Choose a reference GPU.")
        return None, info
    if not curve or max(curve) <= 0:
        if curve is not None and not info.empty_message:
            info.empty_message = _("The demand is zero in every hour: nothing to buy.")
        return None, info
    info.hours = len(curve)
    return (
        maths.Demand(tuple(curve), horizon, output_tokens=tokens, requests=requests),
        info,
    )


def _workload_curve(scenario, workload, info, pilots: dict):
    """The workload's pool's busy GPUs × its share of the pool's GPUs; without pool
    rollups, its output tokens per hour ÷ the decode ceiling × reference efficiency."""
    pool = workload.pool
    info.reference_gpu = pool.gpu_model
    measured = _pool_busy_curve(pool, scenario.window_days)
    if measured and measured[2]:
        info.window_start, info.window_end, rows = measured
        share = min(1.0, workload.gpu_count / pool.gpu_count)
        info.hourly_times = [hour for hour, _ in rows]
        info.notes.append(
            _(
                "%(pool)s's busy GPUs × %(used)s of its %(gpus)s GPUs (%(share)s) used by "
                "%(workload)s."
            )
            % {
                "pool": pool.name,
                "used": workload.gpu_count,
                "gpus": pool.gpu_count,
                "share": f"{share:.0%}",
                "workload": workload.name,
            }
        )
        tokens, requests = _request_totals(info.window_start, info.window_end, workload=workload)
        return [busy * share for _, busy in rows], tokens, requests
    latest = workload.hourly_requests.aggregate(latest=Max("hour"))["latest"]
    if latest is None:
        info.empty_message = _(
            "No hourly rollups for %(workload)s or its pool %(pool)s yet: import or pull their "
            "telemetry."
        ) % {"workload": workload.name, "pool": pool.name}
        return None, None, None
    pilot = pilots.get(pool.gpu_model_id)
    if pilot is not None:
        # A measured GPU's tokens/s already includes its efficiency.
        per_gpu_hour = pilot.output_tokens_per_second_per_gpu * 3600
        note = _(
            "Output tokens per hour ÷ (%(tokens)s output tokens/s per %(gpu)s, measured by "
            "pilot “%(pilot)s”)."
        ) % _pilot_words(pilot)
    else:
        throughput, why = per_gpu_throughput(
            scenario, pool.gpu_model, ThroughputBasis.DECODE_CEILING
        )
        if throughput is None:
            info.empty_message = _("%(workload)s has request rollups but %(why)s.") % {
                "workload": workload.name,
                "why": why,
            }
            return None, None, None
        per_gpu_hour = throughput * float(scenario.reference_efficiency) * 3600
        note = _(
            "Output tokens per hour ÷ (%(throughput)s tokens/s decode ceiling per %(gpu)s × "
            "%(efficiency)s efficiency)."
        ) % {
            "throughput": f"{throughput:,.0f}",
            "gpu": pool.gpu_model.name,
            "efficiency": scenario.reference_efficiency,
        }
    info.window_start, info.window_end = _window(latest, scenario.window_days)
    rows = list(
        workload.hourly_requests.filter(hour__gte=info.window_start, hour__lte=info.window_end)
        .order_by("hour")
        .values_list("hour", "output_tokens", "requests")
    )
    info.hourly_times = [hour for hour, _, _ in rows]
    info.notes.append(note)
    curve = [output / per_gpu_hour for _, output, _ in rows]
    tokens = float(sum(output for _, output, _ in rows)) or None
    requests = float(sum(count for _, _, count in rows)) or None
    return curve, tokens, requests


def _training_curve(scenario, info):
    info.reference_gpu = scenario.reference_gpu_model
    missing = [
        label
        for label, value in (
            (_("model architecture"), scenario.model_architecture),
            (_("training tokens"), scenario.training_tokens),
            (_("training GPUs"), scenario.training_gpus),
            (_("reference GPU"), scenario.reference_gpu_model),
        )
        if not value
    ]
    if missing:
        info.empty_message = _("A training job needs its %(missing)s.") % {
            "missing": ", ".join(missing)
        }
        return None
    peak = scenario.reference_gpu_model.dense_peak_flops(scenario.compute_precision)
    if not peak:
        info.empty_message = _("%(gpu)s has no dense peak to use.") % {
            "gpu": scenario.reference_gpu_model.name
        }
        return None
    architecture = scenario.model_architecture
    params = architecture.active_params or architecture.total_params
    gpu_hours = maths.training_gpu_hours(
        params, scenario.training_tokens, peak, float(scenario.reference_efficiency)
    )
    curve = maths.training_demand_curve(gpu_hours, scenario.training_gpus, scenario.horizon_hours)
    job_hours = gpu_hours / scenario.training_gpus
    info.notes.append(
        _(
            "6 × %(params)s parameters × %(tokens)s tokens ÷ (%(tflops)s TFLOP/s × MFU "
            "%(mfu)s) = %(gpu_hours)s GPU-hours: %(job_hours)s h on %(gpus)s GPUs."
        )
        % {
            "params": f"{params:,}",
            "tokens": f"{scenario.training_tokens:,}",
            "tflops": f"{peak / 1e12:,.0f}",
            "mfu": scenario.reference_efficiency,
            "gpu_hours": f"{gpu_hours:,.0f}",
            "job_hours": f"{job_hours:,.0f}",
            "gpus": scenario.training_gpus,
        }
    )
    if job_hours > scenario.horizon_hours:
        info.notes.append(_("The job runs past the horizon: it is cut at the horizon's end."))
    return list(curve)
