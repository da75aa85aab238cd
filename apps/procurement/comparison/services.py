"""Reads a scenario's demand from telemetry, turns its option lines into priced specs and
runs comparison.py on them; imports SkyPilot prices; writes exports."""

import dataclasses
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Max, Sum
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.catalog.models import GpuModel
from apps.core import runs
from apps.core.history import combined_history
from apps.core.outbox import enqueue
from apps.core.sentences import gettext_noop
from apps.pilots.models import PilotResult
from apps.pools import costing, memory
from apps.pools.assessment import inference_settings_of, shape_of
from apps.procurement import comparison, regions, skypilot
from apps.procurement.models import (
    ComparisonExport,
    DemandSource,
    LineType,
    OptionKind,
    OptionRegionRtt,
    Scenario,
    ScenarioOption,
    ThroughputBasis,
    UserRegion,
)
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests

HOURS = comparison.HOURS_PER_MONTH


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


@dataclass
class OptionRow:
    option: ScenarioOption
    result: comparison.OptionResult | None = None
    problem: str = ""
    throughput: ThroughputUsed | None = None
    misses: tuple[regions.Miss, ...] = ()
    rtt_ms_by_region: dict = field(default_factory=dict)  # region name → ms, as stated
    requirements_stated: bool = False  # whether the scenario states any requirement

    @property
    def meets_requirements(self) -> bool:
        return not self.misses

    @property
    def misses_text(self) -> str:
        """The misses in one line, for the exports' cells; blank without requirements."""
        if self.misses:
            return "; ".join(miss.message for miss in self.misses)
        return _("meets all requirements") if self.requirements_stated else ""


@dataclass
class ScenarioComparison:
    scenario: Scenario
    demand: comparison.Demand | None
    info: DemandInfo
    rows: list[OptionRow]
    comparison: comparison.Comparison | None
    # What-if inputs applied to the unsaved scenario: name → the saved value it replaced.
    what_if_saved: dict = field(default_factory=dict)
    requirements: regions.Requirements = field(default_factory=regions.Requirements)
    user_regions: list = field(default_factory=list)

    @property
    def results(self) -> list[comparison.OptionResult]:
        return [row.result for row in self.rows if row.result is not None]

    @property
    def cheapest(self):
        return self.comparison.cheapest if self.comparison else None


# --- Demand ---------------------------------------------------------------------------


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
        comparison.entered_demand_curve(
            float(scenario.entered_gpu_hours_per_month), scenario.hourly_profile_weights()
        )
    )


def build_demand(
    scenario: Scenario, pilots: dict | None = None
) -> tuple[comparison.Demand | None, DemandInfo]:
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
        comparison.Demand(tuple(curve), horizon, output_tokens=tokens, requests=requests),
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
    gpu_hours = comparison.training_gpu_hours(
        params, scenario.training_tokens, peak, float(scenario.reference_efficiency)
    )
    curve = comparison.training_demand_curve(
        gpu_hours, scenario.training_gpus, scenario.horizon_hours
    )
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


# --- Options --------------------------------------------------------------------------


class OptionProblem(ValueError):
    pass


def pool_value(pool, name):
    """The source pool's value for an option field (money in USD), or None."""
    if pool is None:
        return None
    mapping = {
        "on_demand_price_per_gpu_hour": pool.on_demand_price_per_gpu_hour_usd,
        "reserved_price_per_gpu_hour": pool.reserved_price_per_gpu_hour_usd,
        "purchase_price_per_gpu": pool.purchase_price_per_gpu_usd,
        "power_price_per_kwh": pool.power_price_per_kwh_usd,
        "colocation_per_gpu_month": (
            pool.colocation_per_month_usd / pool.gpu_count
            if pool.colocation_per_month_usd is not None
            else None
        ),
        "operations_per_month": pool.operations_per_month_usd,
    }
    if name in mapping:
        return mapping[name]
    return {
        "reserved_term_months": pool.reserved_term_months,
        "amortisation_months": pool.amortisation_months,
        "pue": pool.pue,
    }.get(name)


# The option inputs that price it, in the order the exports print them.
PRICE_INPUT_UNITS = {
    "on_demand_price_per_gpu_hour": gettext_lazy("{currency} per GPU-hour"),
    "reserved_price_per_gpu_hour": gettext_lazy("{currency} per GPU-hour"),
    "reserved_upfront_per_gpu": gettext_lazy("{currency} per GPU"),
    "reserved_term_months": gettext_lazy("months"),
    "purchase_price_per_gpu": gettext_lazy("{currency} per GPU"),
    "amortisation_months": gettext_lazy("months"),
    "power_price_per_kwh": gettext_lazy("{currency} per kWh"),
    "pue": gettext_lazy("ratio"),
    "colocation_per_gpu_month": gettext_lazy("{currency} per GPU-month"),
    "operations_per_month": gettext_lazy("{currency} per month"),
    "storage_per_month": gettext_lazy("{currency} per month"),
    "network_per_month": gettext_lazy("{currency} per month"),
}
PRICE_INPUT_FIELDS = tuple(PRICE_INPUT_UNITS)

MONEY_FIELDS = {
    "on_demand_price_per_gpu_hour",
    "reserved_price_per_gpu_hour",
    "reserved_upfront_per_gpu",
    "purchase_price_per_gpu",
    "power_price_per_kwh",
    "colocation_per_gpu_month",
    "operations_per_month",
    "storage_per_month",
    "network_per_month",
}


def option_value(option, name, rate: float):
    """The typed value, else the source pool's (money converted from USD), else None."""
    typed = getattr(option, name)
    if typed is not None:
        return float(typed)
    from_pool = pool_value(option.source_pool, name)
    if from_pool is None:
        return None
    return float(from_pool) * rate if name in MONEY_FIELDS else float(from_pool)


def _require(option, name, rate):
    value = option_value(option, name, rate)
    if value is None:
        label = str(ScenarioOption._meta.get_field(name).verbose_name)
        raise OptionProblem(
            _("%(field)s is missing: type it, or choose a pool that has it.")
            % {"field": f"{label[:1].upper()}{label[1:]}"}
        )
    return value


def option_spec(
    scenario, option, reference_throughputs: dict, throughput: ThroughputUsed | None = None
) -> comparison.OptionSpec:
    """The option priced per GPU-hour; its throughput ratio is the pilots' where
    ``throughput`` was measured, else the option's basis × efficiency."""
    rate = float(scenario.usd_exchange_rate)
    kind = option.kind
    on_demand = option_value(option, "on_demand_price_per_gpu_hour", rate)
    if kind in (OptionKind.ON_DEMAND, OptionKind.HYBRID):
        on_demand = _require(option, "on_demand_price_per_gpu_hour", rate)
        if kind == OptionKind.HYBRID and on_demand <= 0:
            raise OptionProblem(_("On-demand price per GPU-hour must be above 0 for a hybrid."))
    compute = power = colocation = 0.0
    notes = []
    baseline = option.baseline_kind
    if baseline == "reserved":
        compute = _require(option, "reserved_price_per_gpu_hour", rate)
        upfront = option_value(option, "reserved_upfront_per_gpu", rate)
        term = option_value(option, "reserved_term_months", rate)
        if upfront:
            if not term:
                raise OptionProblem(_("Reservation term (months) is needed to spread the upfront."))
            compute += upfront / (term * HOURS)
        if term and term > scenario.horizon_months:
            notes.append(
                _(
                    "The %(term)s-month term outlasts the %(horizon)s-month horizon: the months "
                    "after it are committed too but not counted here."
                )
                % {"term": f"{term:.0f}", "horizon": scenario.horizon_months}
            )
    elif baseline == "owned":
        purchase = _require(option, "purchase_price_per_gpu", rate)
        amortisation = _require(option, "amortisation_months", rate)
        pue = _require(option, "pue", rate)
        kwh = _require(option, "power_price_per_kwh", rate)
        # The pools' owned GPU-hour (apps/pools/costing.py), per GPU: the colocation is
        # already per GPU-month and operations staff are a monthly total of the option.
        compute, power, colocation = (
            line.usd_per_gpu_hour  # in the scenario's currency here
            for line in costing.owned_price_breakdown(
                purchase_price_per_gpu_usd=purchase,
                amortisation_months=amortisation,
                tdp_watts=option.gpu_model.tdp_watts,
                pue=pue,
                power_price_per_kwh_usd=kwh,
                operations_per_month_usd=0.0,
                colocation_per_month_usd=option_value(option, "colocation_per_gpu_month", rate)
                or 0.0,
                gpu_count=1,
            ).lines
        )
        if amortisation > scenario.horizon_months:
            notes.append(
                _(
                    "Amortised over %(months)s months: the hardware still has value after the "
                    "%(horizon)s-month horizon."
                )
                % {"months": f"{amortisation:.0f}", "horizon": scenario.horizon_months}
            )
    if throughput is not None and throughput.measured:
        ratio = comparison.measured_throughput_ratio(
            throughput.option_pilot.output_tokens_per_second_per_gpu,
            throughput.reference_pilot.output_tokens_per_second_per_gpu,
        )
    else:
        ratio = _estimated_ratio(scenario, option, reference_throughputs)
    return comparison.OptionSpec(
        name=option.name,
        kind=kind,
        throughput_ratio=ratio,
        on_demand_price_per_gpu_hour=on_demand,
        baseline_compute_per_gpu_hour=compute,
        baseline_power_per_gpu_hour=power,
        baseline_colocation_per_gpu_hour=colocation,
        operations_per_month=option_value(option, "operations_per_month", rate) or 0.0,
        storage_per_month=option_value(option, "storage_per_month", rate) or 0.0,
        network_per_month=option_value(option, "network_per_month", rate) or 0.0,
        baseline_gpus=option.baseline_gpus if kind == OptionKind.HYBRID else None,
        gpu_name=option.gpu_model.name,
        needs_icp_filing=option.needs_icp_filing,
        notes=tuple(notes),
    )


def _estimated_ratio(scenario, option, reference_throughputs: dict) -> float:
    basis = option.throughput_basis
    if basis not in reference_throughputs:
        reference_throughputs[basis] = per_gpu_throughput(
            scenario, reference_throughputs["gpu"], basis
        )
    reference, why = reference_throughputs[basis]
    if reference is None:
        raise OptionProblem(_("Cannot compare throughput: %(why)s.") % {"why": why})
    own, why = per_gpu_throughput(scenario, option.gpu_model, basis)
    if own is None:
        raise OptionProblem(_("Cannot compare throughput: %(why)s.") % {"why": why})
    return comparison.throughput_ratio(
        own, float(option.efficiency), reference, float(scenario.reference_efficiency)
    )


# The inputs the scenario page's "What if…" card changes without saving, and how each
# travels as JSON (on an export record, in the API's query).
WHAT_IF_FIELDS = {
    "horizon_months": int,
    "window_days": int,
    "reference_efficiency": Decimal,
    "entered_gpu_hours_per_month": Decimal,
}


def apply_what_if(scenario: Scenario, values: dict) -> dict:
    """Sets the what-if ``values`` (already validated) on the unsaved scenario; returns
    name → saved value for each one that differs from the scenario as saved."""
    saved = {}
    for name, kind in WHAT_IF_FIELDS.items():
        if name not in values:
            continue
        value = values[name]
        value = None if value is None else kind(str(value) if kind is Decimal else value)
        if value != getattr(scenario, name):
            saved[name] = getattr(scenario, name)
            setattr(scenario, name, value)
    return saved


def json_value(value):
    """Whole numbers as numbers, decimals as exact strings (as the API writes them)."""
    return str(value) if isinstance(value, Decimal) else value


def what_if_json(scenario: Scenario, names) -> dict:
    """The scenario's (what-if) values of ``names`` as JSON."""
    return {name: json_value(getattr(scenario, name)) for name in names}


@dataclass(frozen=True)
class PriceUsed:
    """One price (or priced input) an option was costed with, and where it came from."""

    label: str
    value: float | None
    unit: str
    source: str


def prices_used(scenario: Scenario, row: "OptionRow") -> list[PriceUsed]:
    """Every price the comparison used for an option: each typed or pool-sourced input
    (pool prices converted from USD) and the per-GPU-hour rates derived from them."""
    option, rate = row.option, float(scenario.usd_exchange_rate)
    currency = scenario.currency
    pool = option.source_pool
    lines = []
    for name in PRICE_INPUT_FIELDS:
        value = option_value(option, name, rate)
        if value is None:
            continue
        if getattr(option, name) is not None:
            source = _("typed on the option")
        elif name in MONEY_FIELDS:
            pool_price = {"pool": pool.name, "usd": f"{float(pool_value(pool, name)):g}"}
            if currency != "USD":
                source = _("from pool %(pool)s: %(usd)s USD × %(rate)s %(currency)s per USD") % {
                    **pool_price,
                    "rate": f"{scenario.usd_exchange_rate:g}",
                    "currency": currency,
                }
            else:
                source = _("from pool %(pool)s: %(usd)s USD") % pool_price
        else:
            source = _("from pool %(pool)s") % {"pool": pool.name}
        label = str(ScenarioOption._meta.get_field(name).verbose_name)
        unit = str(PRICE_INPUT_UNITS[name]).format(currency=currency)
        lines.append(PriceUsed(label, value, unit, source))
    if pool is not None:
        lines.append(
            PriceUsed(
                _("Effective price per GPU-hour of pool %(pool)s") % {"pool": pool.name},
                float(pool.effective_price_per_gpu_hour_usd),
                _("USD per GPU-hour"),
                _("from pool %(pool)s (its %(deployment)s price)")
                % {"pool": pool.name, "deployment": pool.get_deployment_display().lower()},
            )
        )
    if row.result is not None:
        spec = row.result.spec
        derived = _("%(currency)s per GPU-hour") % {"currency": currency}
        if spec.on_demand_price_per_gpu_hour:
            lines.append(
                PriceUsed(
                    _("On-demand GPU-hour used"),
                    spec.on_demand_price_per_gpu_hour,
                    derived,
                    _("the on-demand price above"),
                )
            )
        if option.baseline_kind == "reserved":
            lines.append(
                PriceUsed(
                    _("Reserved GPU-hour used"),
                    spec.baseline_compute_per_gpu_hour,
                    derived,
                    _("reserved price + upfront ÷ (term months × 730 h)"),
                )
            )
        elif option.baseline_kind == "owned":
            lines += [
                PriceUsed(
                    _("Owned GPU-hour used: amortisation"),
                    spec.baseline_compute_per_gpu_hour,
                    derived,
                    _("purchase ÷ (amortisation months × 730 h)"),
                ),
                PriceUsed(
                    _("Owned GPU-hour used: power"),
                    spec.baseline_power_per_gpu_hour,
                    derived,
                    _("%(tdp)s kW TDP × PUE × price per kWh")
                    % {"tdp": f"{option.gpu_model.tdp_watts / 1000:g}"},
                ),
                PriceUsed(
                    _("Owned GPU-hour used: colocation"),
                    spec.baseline_colocation_per_gpu_hour,
                    derived,
                    _("colocation per GPU-month ÷ 730 h"),
                ),
            ]
    return lines


def scenario_history(scenario: Scenario, *, limit=30) -> list:
    """Changes to the scenario and to its options (added, edited, deleted), newest first:
    the scenario's own records alone would say "created" and never what its options became."""
    return combined_history(
        [
            (Scenario.history.filter(id=scenario.pk), lambda record: _("Scenario"), Scenario),
            (
                ScenarioOption.history.filter(scenario_id=scenario.pk),
                lambda record: _("Option %(name)s") % {"name": record.name},
                ScenarioOption,
            ),
        ],
        limit=limit,
    )


def scenario_queryset():
    return Scenario.objects.select_related(
        "demand_pool__gpu_model",
        "demand_workload__pool__gpu_model",
        "demand_workload__model_architecture",
        "reference_gpu_model",
        "model_architecture",
        "created_by",
        "team",
    )


def scenario_requirements(scenario: Scenario, user_regions) -> regions.Requirements:
    labels = dict(LineType.choices)
    return regions.Requirements(
        min_ddos_protection_gbps=(
            None
            if scenario.min_ddos_protection_gbps is None
            else float(scenario.min_ddos_protection_gbps)
        ),
        accepted_line_types={
            value: str(labels.get(value, value)) for value in scenario.accepted_line_types or []
        },
        no_icp_filing=scenario.no_icp_filing,
        min_ip_address_count=scenario.min_ip_address_count,
        max_rtt_ms_by_region={
            region.name: float(region.max_rtt_ms)
            for region in user_regions
            if region.max_rtt_ms is not None
        },
    )


def option_criteria(option: ScenarioOption) -> regions.RegionCriteria:
    """What the option states; its RTTs come prefetched (``rtts__region``)."""
    return regions.RegionCriteria(
        ddos_protection_gbps=(
            None if option.ddos_protection_gbps is None else float(option.ddos_protection_gbps)
        ),
        line_type=option.line_type or None,
        line_type_label=str(option.get_line_type_display()) if option.line_type else "",
        ip_address_count=option.ip_address_count,
        needs_icp_filing=option.icp_filing_known,
        rtt_ms_by_region={rtt.region.name: float(rtt.rtt_ms) for rtt in option.rtts.all()},
    )


def save_user_regions(scenario: Scenario, user_regions) -> None:
    """Make the scenario's user regions exactly ``user_regions`` ((name, max RTT ms or
    None) pairs). A region kept by name, whatever its case ("shanghai" → "Shanghai"),
    keeps its options' times; a region left out goes with them."""
    with transaction.atomic():
        existing = {region.name.casefold(): region for region in scenario.user_regions.all()}
        wanted = {name.casefold(): (name, max_rtt_ms) for name, max_rtt_ms in user_regions}
        scenario.user_regions.exclude(
            pk__in=[region.pk for key, region in existing.items() if key in wanted]
        ).delete()
        for key, (name, max_rtt_ms) in wanted.items():
            region = existing.get(key)
            if region is None:
                UserRegion.objects.create(scenario=scenario, name=name, max_rtt_ms=max_rtt_ms)
            elif (region.name, region.max_rtt_ms) != (name, max_rtt_ms):
                region.name, region.max_rtt_ms = name, max_rtt_ms
                region.save(update_fields=["name", "max_rtt_ms"])


def save_option_rtts(option: ScenarioOption, rtt_ms_by_region_id: dict) -> None:
    """Set the option's RTT from each region (region id → ms; None clears it)."""
    with transaction.atomic():
        for region_id, rtt_ms in rtt_ms_by_region_id.items():
            if rtt_ms is None:
                OptionRegionRtt.objects.filter(option=option, region_id=region_id).delete()
            else:
                OptionRegionRtt.objects.update_or_create(
                    option=option, region_id=region_id, defaults={"rtt_ms": rtt_ms}
                )


def build_comparison(scenario: Scenario) -> ScenarioComparison:
    """Everything the page and the exports show, from the scenario as it stands (a caller
    may set unsaved what-if values on it first)."""
    pilots = best_pilots(scenario)
    demand, info = build_demand(scenario, pilots)
    options = list(
        scenario.options.select_related("gpu_model", "source_pool").prefetch_related("rtts__region")
    )
    user_regions = list(UserRegion.objects.filter(scenario=scenario))
    requirements = scenario_requirements(scenario, user_regions)
    rows = []
    for option in options:
        criteria = option_criteria(option)
        rows.append(
            OptionRow(
                option,
                misses=regions.misses(criteria, requirements),
                rtt_ms_by_region=criteria.rtt_ms_by_region,
                requirements_stated=requirements.any,
            )
        )
    if demand is None:
        return ScenarioComparison(
            scenario,
            None,
            info,
            rows,
            None,
            requirements=requirements,
            user_regions=user_regions,
        )
    reference_throughputs = {"gpu": info.reference_gpu}
    specs = []
    for row in rows:
        row.throughput = throughput_used(scenario, row.option, info.reference_gpu, pilots)
        try:
            specs.append(
                (row, option_spec(scenario, row.option, reference_throughputs, row.throughput))
            )
        except ValueError as error:
            row.problem = str(error)
    result = comparison.compare(demand, [spec for _, spec in specs], currency=scenario.currency)
    for (row, _spec), option_result in zip(specs, result.results, strict=True):
        row.result = option_result
    if requirements.any:
        result = _with_requirements_reason(result, rows, scenario.currency)
    return ScenarioComparison(
        scenario,
        demand,
        info,
        rows,
        result,
        requirements=requirements,
        user_regions=user_regions,
    )


def _with_requirements_reason(result: comparison.Comparison, rows, currency: str):
    """The recommendation ranks by cost alone; when the cheapest option misses a stated
    requirement, a reason says so and names the cheapest that meets them all."""
    costed = [row for row in rows if row.result is not None]
    cheapest = min(costed, key=lambda row: row.result.total_cost, default=None)
    if cheapest is None or cheapest.meets_requirements:
        return result
    meeting = [row for row in costed if row.meets_requirements]
    best = min(meeting, key=lambda row: row.result.total_cost, default=None)
    values = {"name": cheapest.option.name, "misses": cheapest.misses_text}
    if best is None:
        reason = (
            _("%(name)s, the cheapest, misses: %(misses)s. No option meets every requirement.")
            % values
        )
    else:
        reason = _(
            "%(name)s, the cheapest, misses: %(misses)s. The cheapest that meets every "
            "requirement is %(best)s at %(cost)s."
        ) % {
            **values,
            "best": best.option.name,
            "cost": f"{best.result.total_cost:,.0f} {currency}",
        }
    return dataclasses.replace(result, reasons=(*result.reasons, reason))


def build_comparison_what_if(scenario: Scenario, values: dict) -> ScenarioComparison:
    """The comparison with the what-if ``values`` applied to the (unsaved) scenario, as
    the scenario page, its exports and the API compute it."""
    saved = apply_what_if(scenario, values)
    result = build_comparison(scenario)
    result.what_if_saved = saved
    return result


# --- SkyPilot price import --------------------------------------------------------------


@dataclass
class PriceImportSummary:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)


def import_prices(
    scenario: Scenario, catalog_rows, *, provider: str, region: str, gpu_models
) -> PriceImportSummary:
    """One on-demand option per chosen GPU model at its cheapest catalog price (in the
    region, when one is given), created or updated by name; prices converted from USD.
    ``catalog_rows`` is what ``skypilot.parse_price_catalog`` returned: (rows, errors)."""
    rows, errors = catalog_rows
    summary = PriceImportSummary(errors=errors)
    catalog = [
        skypilot.CatalogGpu(gpu.slug, gpu.name, float(gpu.memory_gb))
        for gpu in GpuModel.objects.all()
    ]
    wanted = {gpu.slug: gpu for gpu in gpu_models}
    cheapest: dict[str, skypilot.PriceRow] = {}
    for row in rows:
        if region and row.region != region:
            continue
        match, reason = skypilot.match_gpu(row, catalog)
        if match is None:
            if reason not in summary.skipped:
                summary.skipped.append(reason)
            continue
        if match.slug not in wanted:
            continue
        best = cheapest.get(match.slug)
        if best is None or row.price_per_gpu_hour_usd < best.price_per_gpu_hour_usd:
            cheapest[match.slug] = row
    rate = Decimal(scenario.usd_exchange_rate)
    position = (scenario.options.aggregate(last=Max("position"))["last"] or 0) + 1
    names = {slug: f"{provider} on-demand · {wanted[slug].name}" for slug in cheapest}
    existing = {option.name: option for option in scenario.options.filter(name__in=names.values())}
    with transaction.atomic():
        for slug, row in sorted(cheapest.items()):
            gpu = wanted[slug]
            name = names[slug]
            price = (Decimal(str(row.price_per_gpu_hour_usd)) * rate).quantize(Decimal("0.0001"))
            option = existing.get(name)
            values = {
                "kind": OptionKind.ON_DEMAND,
                "provider": provider,
                "region": row.region,
                "compliance_zone": skypilot.compliance_zone_of(row.region),
                "gpu_model": gpu,
                "on_demand_price_per_gpu_hour": price,
                "price_note": row.note[:300],
            }
            if option is None:
                ScenarioOption.objects.create(
                    scenario=scenario, name=name, position=position, **values
                )
                position += 1
                summary.created.append(name)
            else:
                for attribute, value in values.items():
                    setattr(option, attribute, value)
                option.save()
                summary.updated.append(name)
    for slug, gpu in wanted.items():
        if slug not in cheapest:
            if region:
                reason = _("no price for %(gpu)s in %(region)s in the file") % {
                    "gpu": gpu.name,
                    "region": region,
                }
            else:
                reason = _("no price for %(gpu)s in the file") % {"gpu": gpu.name}
            summary.skipped.append(reason)
    return summary


# --- Exports --------------------------------------------------------------------------


def run_export(export_id: int, *, writers: dict, language: str | None = None) -> str:
    """Compute the comparison and write the file with ``writers[export.format]``
    (apps/procurement/exports.py's WRITERS: handed in, as that module imports this one);
    progress is kept on the export for the page's progress bar. A failure is recorded on
    the export, then re-raised. An export finished, running elsewhere or out of attempts is
    left alone (apps/core/runs.py). The file is written in ``language``, or the export's
    own (the language of the page that asked for it)."""

    claimed = runs.claim(
        ComparisonExport,
        export_id,
        startable=(ComparisonExport.Status.PENDING, ComparisonExport.Status.INTERRUPTED),
        progress_pct=10,
        message="",
    )
    export = ComparisonExport.objects.get(pk=export_id)
    if not claimed:
        return export.status
    with export.running(), translation.override(language or export.language):
        export.scenario = scenario_queryset().get(pk=export.scenario_id)
        result = build_comparison_what_if(export.scenario, export.what_if)
        export.advance(40)
        content = writers[export.format](result)
        export.advance(80)
        export.file.save(export.filename, ContentFile(content), save=False)
        # Written in the export's language, which its page is read in.
        export.succeed(_("%(size)s bytes.") % {"size": f"{len(content):,}"}, also_save=["file"])
    return export.status


def reap_stalled_exports() -> int:
    """Mark exports not heard from for a few minutes interrupted and queue them again (an
    export recomputes and replaces its file). Returns the exports marked."""
    return runs.reap(
        ComparisonExport.objects.all(),
        describe=lambda export: (gettext_noop("The worker"), gettext_noop("writing the export")),
        retry=lambda export: enqueue("procurement.generate_export", export.pk),
        advice=lambda export: gettext_noop("ask for the export again."),
    )
