"""The comparison the scenario page, the API and the exports show: the demand
(demand.py), each option priced (options.py) and checked against the stated requirements
(regions.py), run through maths.py; and the writes of a scenario's regions and RTTs."""

import dataclasses
from dataclasses import dataclass, field

from django.db import transaction
from django.utils.translation import gettext as _

from apps.core.history import combined_history
from apps.procurement.comparison import maths, regions
from apps.procurement.comparison.demand import (
    DemandInfo,
    ThroughputUsed,
    best_pilots,
    build_demand,
    throughput_used,
)
from apps.procurement.comparison.options import option_spec
from apps.procurement.comparison.what_if import apply_what_if
from apps.procurement.models import (
    LineType,
    OptionRegionRtt,
    Scenario,
    ScenarioOption,
    UserRegion,
)


@dataclass
class OptionRow:
    option: ScenarioOption
    result: maths.OptionResult | None = None
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
    demand: maths.Demand | None
    info: DemandInfo
    rows: list[OptionRow]
    comparison: maths.Comparison | None
    # What-if inputs applied to the unsaved scenario: name → the saved value it replaced.
    what_if_saved: dict = field(default_factory=dict)
    requirements: regions.Requirements = field(default_factory=regions.Requirements)
    user_regions: list = field(default_factory=list)

    @property
    def results(self) -> list[maths.OptionResult]:
        return [row.result for row in self.rows if row.result is not None]

    @property
    def cheapest(self):
        return self.comparison.cheapest if self.comparison else None


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
    result = maths.compare(demand, [spec for _, spec in specs], currency=scenario.currency)
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


def _with_requirements_reason(result: maths.Comparison, rows, currency: str):
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
