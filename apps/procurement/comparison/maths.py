"""Total-cost comparison of GPU procurement options (framework-free).

Plain functions over numbers and dataclasses, no Django imports: views, the API, the
export task and the tests call them with what the database or a request holds.

Sources (../shared/docs/FORMULAS.md collects them):
- Capacity, reserved versus elastic: hourly demand d_h (GPUs needed in hour h), reserved
  price r per GPU-hour (paid every hour), on-demand price o. Cost(R) = R·r·H +
  o·Σ_h max(0, d_h − R). The optimum R is the (1 − r/o) quantile of hourly demand — the
  newsvendor rule (Arrow, Harris & Marschak 1951; any operations-research text, e.g.
  Porteus, "Stochastic Inventory Theory", 1990): reserve a GPU only if it is busy more
  than r/o of the hours. Owned hardware is the same with r = amortised capex + power +
  colocation per GPU-hour. The break-even utilisation of a reserved or owned GPU against
  on-demand is r/o.
- Cost of owned GPUs per hour: purchase ÷ amortisation hours + power kW × PUE × price per
  kWh + (operations + colocation per month ÷ 730).
- Training compute ≈ 6·N·D FLOPs (Kaplan et al. 2020; Hoffmann et al. 2022); time ≈
  6·N·D ÷ (GPUs × dense peak FLOP/s × MFU) (Chowdhery et al. 2022, PaLM).

Units: prices are in the scenario's currency; hours are wall-clock hours; 730 h is the
mean month (8,760 h ÷ 12). "Reference GPU-hours" measure delivered work: one hour of the
scenario's reference GPU at its reference efficiency. An option's GPU does
``throughput_ratio`` reference GPU-hours of work per hour, so "fewer, faster GPUs" can win.
"""

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

from apps.core.sentences import gettext
from apps.pools.costing import HOURS_PER_MONTH  # 730 h, the mean month (framework-free)

# Translated as the text is built, in the reader's language (apps/core/sentences.py).
_ = gettext


SECONDS_PER_HOUR = 3600
# Demand is measured in floats; a GPU count that is whole up to this is not rounded up.
_WHOLE_GPU_TOLERANCE = 1e-9

ON_DEMAND = "on_demand"
RESERVED = "reserved"
OWNED = "owned"
HYBRID = "hybrid"
KINDS = (ON_DEMAND, RESERVED, OWNED, HYBRID)


def _check_number(name: str, value, *, minimum: float = 0.0, strictly_above: bool = False):
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number (got {value!r}).")
    if value < minimum or (strictly_above and value == minimum):
        relation = "above" if strictly_above else "at least"
        raise ValueError(f"{name} must be {relation} {minimum:g} (got {value!r}).")


def _check_demand(hourly_demand) -> list[float]:
    values = list(hourly_demand)
    if not values:
        raise ValueError("hourly_demand_gpus must hold at least one hour.")
    for index, value in enumerate(values):
        _check_number(f"hourly_demand_gpus[{index}]", value)
    return [float(value) for value in values]


# --- Capacity mix: the newsvendor rule -----------------------------------------------


@dataclass(frozen=True)
class CapacityMix:
    optimal_reserved_gpus: int
    total_cost: float
    cost_by_reserved_gpus: tuple[float, ...]  # index R = 0 … ⌈max demand⌉
    break_even_utilization: float  # r ÷ o
    hours: int


def capacity_cost(hourly_demand, reserved_gpus: float, reserved_price: float, on_demand_price):
    """Cost(R) = R·r·H + o·Σ_h max(0, d_h − R), written out (FORMULAS.md, "Capacity")."""
    demand = _check_demand(hourly_demand)
    burst = sum(max(0.0, value - reserved_gpus) for value in demand)
    return reserved_gpus * reserved_price * len(demand) + on_demand_price * burst


def capacity_mix(hourly_demand, reserved_price: float, on_demand_price: float) -> CapacityMix:
    """The whole-GPU baseline R that minimises Cost(R) = R·r·H + o·Σ_h max(0, d_h − R),
    with the cost at every R from 0 to ⌈max d_h⌉ (the curve the hybrid chart draws).

    Cost(R) is convex and piecewise linear; its slope at R is r·H − o·#{h: d_h > R}, which
    turns non-negative once at most H·r/o hours need more than R GPUs: the optimum is the
    (1 − r/o) quantile of hourly demand (the newsvendor rule). The curve is evaluated
    exactly from sorted demand and prefix sums, O(H log H + max d); ties go to the smaller
    baseline. Break-even utilisation of a reserved GPU against on-demand = r ÷ o.
    """
    demand = _check_demand(hourly_demand)
    _check_number("reserved_price_per_gpu_hour", reserved_price)
    _check_number("on_demand_price_per_gpu_hour", on_demand_price, strictly_above=True)
    ordered = sorted(demand)
    suffix_sums = list(accumulate(reversed(ordered)))  # suffix_sums[k-1] = sum of top k
    hours = len(ordered)
    top_gpus = math.ceil(ordered[-1] - _WHOLE_GPU_TOLERANCE) if ordered[-1] > 0 else 0
    curve = []
    for reserved in range(top_gpus + 1):
        above = hours - bisect_right(ordered, reserved)  # hours needing more than R GPUs
        excess = (suffix_sums[above - 1] if above else 0.0) - reserved * above
        curve.append(reserved * reserved_price * hours + on_demand_price * max(excess, 0.0))
    best = min(range(len(curve)), key=lambda reserved: (curve[reserved], reserved))
    return CapacityMix(
        optimal_reserved_gpus=best,
        total_cost=curve[best],
        cost_by_reserved_gpus=tuple(curve),
        break_even_utilization=reserved_price / on_demand_price,
        hours=hours,
    )


# --- Demand ----------------------------------------------------------------------------


def entered_demand_curve(gpu_hours_per_month: float, hourly_profile=None) -> tuple[float, ...]:
    """One typical day of 24 hourly GPU counts: the month's GPU-hours spread over its
    730 ÷ 24 days, each hour weighted by the profile (flat when none is given)."""
    _check_number("gpu_hours_per_month", gpu_hours_per_month)
    weights = list(hourly_profile) if hourly_profile else [1.0] * 24
    if len(weights) != 24:
        raise ValueError(f"hourly_profile needs 24 weights, one per hour (got {len(weights)}).")
    for index, weight in enumerate(weights):
        _check_number(f"hourly_profile[{index}]", weight)
    total_weight = sum(weights)
    if total_weight <= 0:
        raise ValueError("hourly_profile needs at least one weight above 0.")
    per_day = gpu_hours_per_month * 24 / HOURS_PER_MONTH
    return tuple(per_day * weight / total_weight for weight in weights)


def training_gpu_hours(
    params: float, tokens: float, peak_flops_per_gpu: float, efficiency: float
) -> float:
    """GPU-hours of a training job ≈ 6·N·D ÷ (dense peak FLOP/s × MFU) ÷ 3600
    (Kaplan et al. 2020; MFU as in Chowdhery et al. 2022, PaLM)."""
    _check_number("params", params, strictly_above=True)
    _check_number("tokens", tokens, strictly_above=True)
    _check_number("peak_flops_per_gpu", peak_flops_per_gpu, strictly_above=True)
    if not 0 < efficiency <= 1:
        raise ValueError(f"efficiency (MFU) must be above 0 and at most 1 (got {efficiency!r}).")
    return 6 * params * tokens / (peak_flops_per_gpu * efficiency) / SECONDS_PER_HOUR


def training_demand_curve(gpu_hours: float, gpus: int, horizon_hours: int) -> tuple[float, ...]:
    """``gpus`` GPUs busy from the first hour until ``gpu_hours`` are done, then idle,
    over the horizon (a job longer than the horizon is cut at its end)."""
    _check_number("gpu_hours", gpu_hours)
    if gpus < 1:
        raise ValueError("training GPUs must be at least 1.")
    if horizon_hours < 1:
        raise ValueError("the horizon must be at least one hour.")
    full_hours, remainder = divmod(gpu_hours / gpus, 1)
    curve = [float(gpus)] * min(int(full_hours), horizon_hours)
    if len(curve) < horizon_hours and remainder > 0:
        curve.append(gpus * remainder)
    curve.extend([0.0] * (horizon_hours - len(curve)))
    return tuple(curve)


@dataclass(frozen=True)
class Demand:
    """Work per hour in reference GPUs over a representative stretch of hours, and what
    those hours served (tokens, requests), scaled to ``horizon_hours`` when costed."""

    hourly_reference_gpus: tuple[float, ...]
    horizon_hours: int
    output_tokens: float | None = None  # over the curve's hours
    requests: float | None = None

    @property
    def scale(self) -> float:
        """Horizon hours represented by one hour of the curve."""
        return self.horizon_hours / len(self.hourly_reference_gpus)

    @property
    def peak(self) -> float:
        return max(self.hourly_reference_gpus)

    @property
    def mean(self) -> float:
        return sum(self.hourly_reference_gpus) / len(self.hourly_reference_gpus)

    @property
    def reference_gpu_hours(self) -> float:
        """Work over the horizon, in reference GPU-hours."""
        return sum(self.hourly_reference_gpus) * self.scale


def throughput_ratio(
    option_per_gpu: float, option_efficiency: float, reference_per_gpu: float, reference_eff
) -> float:
    """Work one option GPU does per hour, in reference GPUs: (option peak or decode
    ceiling × its efficiency) ÷ (reference's × the reference efficiency)."""
    for name, value in (
        ("option throughput", option_per_gpu),
        ("option efficiency", option_efficiency),
        ("reference throughput", reference_per_gpu),
        ("reference efficiency", reference_eff),
    ):
        _check_number(name, value, strictly_above=True)
    return option_per_gpu * option_efficiency / (reference_per_gpu * reference_eff)


def measured_throughput_ratio(option_per_gpu: float, reference_per_gpu: float) -> float:
    """Work one option GPU does per hour, in reference GPUs, from two measurements of the
    same workload (output tokens/s per GPU): option ÷ reference. No efficiency applies: a
    measured throughput already includes it."""
    _check_number("option measured throughput", option_per_gpu, strictly_above=True)
    _check_number("reference measured throughput", reference_per_gpu, strictly_above=True)
    return option_per_gpu / reference_per_gpu


# --- Options ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OptionSpec:
    """One option line, its prices already per GPU-hour in the scenario's currency.

    The baseline is what is paid every hour whether used or not (reserved or owned GPUs);
    on-demand pays only the GPU-hours used. On-demand options have no baseline, reserved
    and owned options have only a baseline sized for the peak, hybrids have both.
    """

    name: str
    kind: str
    throughput_ratio: float = 1.0
    on_demand_price_per_gpu_hour: float | None = None
    baseline_compute_per_gpu_hour: float = 0.0  # reserved hourly + upfront, or amortisation
    baseline_power_per_gpu_hour: float = 0.0  # owned: TDP kW × PUE × price per kWh
    baseline_colocation_per_gpu_hour: float = 0.0  # owned: colocation per GPU-month ÷ 730
    operations_per_month: float = 0.0
    storage_per_month: float = 0.0
    network_per_month: float = 0.0
    baseline_gpus: int | None = None  # hybrid: fixed; None → the newsvendor optimum
    gpu_name: str = ""
    needs_icp_filing: bool = False
    notes: tuple[str, ...] = ()

    @property
    def baseline_price_per_gpu_hour(self) -> float:
        """r: what a baseline GPU costs per hour, used or not."""
        return (
            self.baseline_compute_per_gpu_hour
            + self.baseline_power_per_gpu_hour
            + self.baseline_colocation_per_gpu_hour
        )


@dataclass(frozen=True)
class CostBreakdown:
    compute: float
    power: float
    storage: float
    network: float
    operations: float

    @property
    def total(self) -> float:
        return self.compute + self.power + self.storage + self.network + self.operations

    def as_dict(self) -> dict[str, float]:
        return {
            "compute": self.compute,
            "power": self.power,
            "storage": self.storage,
            "network": self.network,
            "operations": self.operations,
            "total": self.total,
        }


@dataclass(frozen=True)
class OptionResult:
    spec: OptionSpec
    gpus_needed_by_hour: tuple[int, ...]
    peak_gpus: int
    baseline_gpus: int
    paid_gpu_hours: float  # over the horizon, baseline + burst
    burst_gpu_hours: float
    cost: CostBreakdown
    reference_gpu_hours: float  # work delivered over the horizon
    paid_utilization: float | None  # work in option GPU-hours ÷ GPU-hours paid
    cost_per_effective_gpu_hour: float | None  # per reference GPU-hour of work
    cost_per_million_tokens: float | None
    cost_per_thousand_requests: float | None
    break_even_utilization: float | None  # r ÷ o
    baseline_utilization: float | None = None  # work on the baseline ÷ its GPU-hours
    optimal_baseline_gpus: int | None = None  # hybrid
    cost_by_baseline_gpus: tuple[float, ...] | None = None  # hybrid, over the horizon
    notes: tuple[str, ...] = ()

    @property
    def total_cost(self) -> float:
        return self.cost.total


def gpus_needed_by_hour(demand: Demand, ratio: float) -> tuple[int, ...]:
    """Whole option GPUs per hour: ⌈reference GPUs ÷ throughput ratio⌉."""
    _check_number("throughput_ratio", ratio, strictly_above=True)
    return tuple(
        max(0, math.ceil(value / ratio - _WHOLE_GPU_TOLERANCE))
        for value in demand.hourly_reference_gpus
    )


def cost_option(demand: Demand, spec: OptionSpec) -> OptionResult:
    """Total cost of one option over the horizon, with its breakdown and unit costs."""
    if spec.kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)} (got {spec.kind!r}).")
    needed = gpus_needed_by_hour(demand, spec.throughput_ratio)
    peak = max(needed)
    scale = demand.scale
    horizon = demand.horizon_hours
    months = horizon / HOURS_PER_MONTH
    on_demand = spec.on_demand_price_per_gpu_hour
    rate = spec.baseline_price_per_gpu_hour
    if spec.kind in (ON_DEMAND, HYBRID) and on_demand is None:
        raise ValueError(f"{spec.name}: an on-demand price per GPU-hour is needed.")

    optimal = curve = None
    notes = list(spec.notes)
    if spec.kind == ON_DEMAND:
        baseline = 0
    elif spec.kind in (RESERVED, OWNED):
        baseline = peak  # no burst: the baseline must cover the peak hour
    else:
        mix = capacity_mix(needed, rate, on_demand)
        optimal = mix.optimal_reserved_gpus
        baseline = optimal if spec.baseline_gpus is None else spec.baseline_gpus
        fixed = (spec.operations_per_month + spec.storage_per_month + spec.network_per_month) * (
            months
        )
        curve = tuple(cost * scale + fixed for cost in mix.cost_by_reserved_gpus)
        if spec.baseline_gpus is not None and spec.baseline_gpus != optimal:
            saving = (
                capacity_cost(needed, spec.baseline_gpus, rate, on_demand) - mix.total_cost
            ) * scale
            notes.append(
                _("A baseline of %(gpus)s GPUs is set; %(optimal)s would cost %(saving)s less.")
                % {"gpus": spec.baseline_gpus, "optimal": optimal, "saving": f"{saving:,.0f}"}
            )
    burst = sum(max(0, gpus - baseline) for gpus in needed) * scale
    baseline_hours = baseline * horizon
    cost = CostBreakdown(
        compute=baseline_hours * spec.baseline_compute_per_gpu_hour + burst * (on_demand or 0),
        power=baseline_hours * spec.baseline_power_per_gpu_hour,
        storage=spec.storage_per_month * months,
        network=spec.network_per_month * months,
        operations=spec.operations_per_month * months
        + baseline_hours * spec.baseline_colocation_per_gpu_hour,
    )
    paid = baseline_hours + burst
    work_option_gpu_hours = demand.reference_gpu_hours / spec.throughput_ratio
    work = demand.reference_gpu_hours
    tokens = demand.output_tokens * scale if demand.output_tokens else None
    requests = demand.requests * scale if demand.requests else None
    break_even = None
    if spec.kind != ON_DEMAND and on_demand:
        break_even = rate / on_demand
    baseline_utilization = None
    if baseline:
        on_baseline = sum(
            min(value / spec.throughput_ratio, baseline) for value in demand.hourly_reference_gpus
        )
        baseline_utilization = on_baseline / (baseline * len(needed))
    return OptionResult(
        spec=spec,
        gpus_needed_by_hour=needed,
        peak_gpus=peak,
        baseline_gpus=baseline,
        paid_gpu_hours=paid,
        burst_gpu_hours=burst,
        cost=cost,
        reference_gpu_hours=work,
        paid_utilization=work_option_gpu_hours / paid if paid else None,
        cost_per_effective_gpu_hour=cost.total / work if work else None,
        cost_per_million_tokens=cost.total / tokens * 1e6 if tokens else None,
        cost_per_thousand_requests=cost.total / requests * 1e3 if requests else None,
        break_even_utilization=break_even,
        baseline_utilization=baseline_utilization,
        optimal_baseline_gpus=optimal,
        cost_by_baseline_gpus=curve,
        notes=tuple(notes),
    )


# --- Comparison and recommendation -----------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    demand: Demand
    results: tuple[OptionResult, ...]  # in the order the options were given
    recommendation: str
    reasons: tuple[str, ...] = field(default_factory=tuple)

    @property
    def cheapest(self) -> OptionResult | None:
        return min(self.results, key=lambda result: result.total_cost, default=None)


def load_shape(demand: Demand) -> str:
    """ "steady", "variable" or "peaky", from mean ÷ peak demand."""
    if demand.peak <= 0:
        return "no"
    ratio = demand.mean / demand.peak
    if ratio >= 0.6:
        return "steady"
    if ratio >= 0.35:
        return "variable"
    return "peaky"


def _money(value: float, currency: str) -> str:
    return f"{value:,.0f} {currency}"


def compare(demand: Demand, specs, *, currency: str = "USD") -> Comparison:
    """Cost every option on the same demand and say which to choose, and why."""
    results = tuple(cost_option(demand, spec) for spec in specs)
    if not results:
        return Comparison(demand, results, _("Add options to compare."))
    ranked = sorted(results, key=lambda result: result.total_cost)
    best = ranked[0]
    shape = load_shape(demand)
    mean_share = demand.mean / demand.peak if demand.peak else 0
    months = demand.horizon_hours / HOURS_PER_MONTH
    values = {
        "share": f"{mean_share:.0%}",
        "best": best.spec.name,
        "cost": _money(best.total_cost, currency),
        "months": f"{months:,.0f}",
    }
    headlines = {
        "no": _(
            "No load (%(share)s of peak on average): %(best)s costs %(cost)s over %(months)s months"
        ),
        "steady": _(
            "Steady load (%(share)s of peak on average): %(best)s costs %(cost)s over "
            "%(months)s months"
        ),
        "variable": _(
            "Variable load (%(share)s of peak on average): %(best)s costs %(cost)s over "
            "%(months)s months"
        ),
        "peaky": _(
            "Peaky load (%(share)s of peak on average): %(best)s costs %(cost)s over "
            "%(months)s months"
        ),
    }
    headline = headlines[shape] % values
    if len(ranked) > 1 and ranked[1].total_cost > 0:
        runner_up = ranked[1]
        saving = 1 - best.total_cost / runner_up.total_cost
        headline = _("%(headline)s, %(saving)s less than %(runner_up)s.") % {
            "headline": headline,
            "saving": f"{saving:.0%}",
            "runner_up": runner_up.spec.name,
        }
    else:
        headline = _("%(headline)s.") % {"headline": headline}
    reasons = []
    for result in ranked:
        if result.break_even_utilization is None or result.baseline_utilization is None:
            continue
        used = result.baseline_utilization
        values = {
            "name": result.spec.name,
            "break_even": f"{result.break_even_utilization:.0%}",
            "gpus": result.baseline_gpus,
            "used": f"{used:.0%}",
        }
        if used >= result.break_even_utilization:
            reason = _(
                "%(name)s: a baseline GPU breaks even against on-demand at %(break_even)s "
                "utilization; its %(gpus)s baseline GPUs would be %(used)s used, so it pays off."
            )
        else:
            reason = _(
                "%(name)s: a baseline GPU breaks even against on-demand at %(break_even)s "
                "utilization; its %(gpus)s baseline GPUs would be %(used)s used, so it does "
                "not pay off."
            )
        reasons.append(reason % values)
        break
    for result in ranked:
        if result.spec.kind == HYBRID:
            share = result.burst_gpu_hours / result.paid_gpu_hours if result.paid_gpu_hours else 0
            reasons.append(
                _(
                    "%(name)s: keep %(gpus)s GPUs as the baseline and burst above %(gpus)s GPUs "
                    "on demand (%(share)s of the GPU-hours paid)."
                )
                % {"name": result.spec.name, "gpus": result.baseline_gpus, "share": f"{share:.0%}"}
            )
            break
    faster = [result for result in ranked if abs(result.spec.throughput_ratio - 1) > 0.05]
    if faster:
        result = faster[0]
        reasons.append(
            _(
                "One %(gpu)s GPU does %(ratio)s× the reference GPU's work: %(peak_gpus)s GPUs "
                "at the peak hour for %(reference)s reference GPUs."
            )
            % {
                "gpu": result.spec.gpu_name or result.spec.name,
                "ratio": f"{result.spec.throughput_ratio:.2f}",
                "peak_gpus": result.peak_gpus,
                "reference": f"{demand.peak:,.1f}",
            }
        )
    for result in ranked:
        if result.spec.needs_icp_filing:
            reasons.append(
                _("%(name)s is in mainland China: a public service there needs an ICP filing.")
                % {"name": result.spec.name}
            )
    return Comparison(demand, results, headline, tuple(reasons))
