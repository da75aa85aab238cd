"""An option's line priced per GPU-hour (typed, or taken from its source pool and converted
from the pool's currency: to USD at this month's rate, then to the scenario's), and every
price it was costed with."""

from dataclasses import dataclass

from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.currencies.rates import usd_rates_at
from apps.pools import costing
from apps.procurement.comparison import maths
from apps.procurement.comparison.demand import HOURS, ThroughputUsed, per_gpu_throughput
from apps.procurement.models import (
    OptionKind,
    Scenario,
    ScenarioOption,
)


class OptionProblem(ValueError):
    pass


def _rate_of(scenario) -> float:
    """The scenario's rate in use (typed, or the exchange rates'); never 1 by default."""
    rate = scenario.exchange_rate
    if rate is None:
        raise OptionProblem(
            _(
                "No exchange rate for %(currency)s: type one on the scenario or add it on the "
                "exchange rates page."
            )
            % {"currency": scenario.currency}
        )
    return float(rate)


def pool_value(pool, name):
    """The source pool's value for an option field (money in the pool's currency), or None."""
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


def pool_money_usd(pool, value) -> float:
    """A source pool's amount, stored in the pool's currency, as US dollars at this
    month's rate; an ``OptionProblem`` naming the rate when it is missing (never 1). The
    month's rates are read once per pool (kept on it for the comparison's other fields)."""
    rates = pool.__dict__.get("_usd_rates")
    if rates is None:
        rates = pool.__dict__["_usd_rates"] = usd_rates_at({pool.currency}, timezone.now())
    converted = rates.to_usd(value, pool.currency)
    if converted.usd is None:
        raise OptionProblem(
            _("Pool %(pool)s's prices cannot be converted: %(missing)s.")
            % {"pool": pool.name, "missing": converted.missing_text}
        )
    return float(converted.usd)


def option_value(option, name, rate: float):
    """The typed value, else the source pool's (money converted from the pool's currency
    to USD, then to the scenario's at ``rate``; kept as is when the pool's currency is the
    scenario's), else None."""
    typed = getattr(option, name)
    if typed is not None:
        return float(typed)
    pool = option.source_pool
    from_pool = pool_value(pool, name)
    if from_pool is None:
        return None
    if name not in MONEY_FIELDS:
        return float(from_pool)
    if pool.currency == option.scenario.currency:
        return float(from_pool)
    return pool_money_usd(pool, from_pool) * rate


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
) -> maths.OptionSpec:
    """The option priced per GPU-hour; its throughput ratio is the pilots' where
    ``throughput`` was measured, else the option's basis × efficiency."""
    rate = _rate_of(scenario)
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
        ratio = maths.measured_throughput_ratio(
            throughput.option_pilot.output_tokens_per_second_per_gpu,
            throughput.reference_pilot.output_tokens_per_second_per_gpu,
        )
    else:
        ratio = _estimated_ratio(scenario, option, reference_throughputs)
    return maths.OptionSpec(
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
    return maths.throughput_ratio(
        own, float(option.efficiency), reference, float(scenario.reference_efficiency)
    )


@dataclass(frozen=True)
class PriceUsed:
    """One price (or priced input) an option was costed with, and where it came from."""

    label: str
    value: float | None
    unit: str
    source: str


def prices_used(scenario: Scenario, row) -> list[PriceUsed]:
    """Every price the comparison used for an option: each typed or pool-sourced input
    (pool prices converted from USD) and the per-GPU-hour rates derived from them."""
    option, rate = row.option, _rate_of(scenario)
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
            stored = float(pool_value(pool, name))
            if pool.currency == currency:
                source = _("from pool %(pool)s: %(amount)s %(currency)s") % {
                    "pool": pool.name,
                    "amount": f"{stored:g}",
                    "currency": currency,
                }
            else:
                pool_price = {"pool": pool.name, "usd": f"{pool_money_usd(pool, stored):g}"}
                if pool.currency != "USD":
                    pool_price["pool"] = _(
                        "%(pool)s (%(amount)s %(currency)s at this month's rate)"
                    ) % {
                        "pool": pool.name,
                        "amount": f"{stored:g}",
                        "currency": pool.currency,
                    }
                if currency != "USD":
                    source = _(
                        "from pool %(pool)s: %(usd)s USD × %(rate)s %(currency)s per USD"
                    ) % {
                        **pool_price,
                        "rate": f"{scenario.exchange_rate:g}",
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
                _("%(currency)s per GPU-hour") % {"currency": pool.currency},
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
