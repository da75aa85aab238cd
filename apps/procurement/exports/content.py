"""What every format of a comparison export says: its columns (apps/core/exports.py's
``Column``), the inputs, the prices used, the assumptions and the sentences around them.

Every format takes its numbers from these, so a file says what the page says; figures are
shown with the page's ``number`` and ``percent`` filters (apps/core/templatetags/units.py).
"""

from datetime import UTC, datetime
from decimal import Decimal

from django.db import models
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.core.bounds import plain
from apps.core.exports import CellType, Column, headers, register, rows_of
from apps.core.templatetags import units
from apps.procurement.comparison.options import MONEY_FIELDS, prices_used
from apps.procurement.models import Scenario, ScenarioOption

ASSUMPTIONS = (
    gettext_lazy(
        "Demand is counted in reference GPUs: one hour of the reference GPU at the reference "
        "efficiency. An option's GPU does (its dense peak or decode ceiling × its efficiency) ÷ "
        "(the reference's × the reference efficiency) of that work per hour."
    ),
    gettext_lazy(
        "Where the demand's workload has pilot results on both the option's GPU model and the "
        "reference GPU model, the ratio is measured instead: the best pilot's output tokens/s "
        "per GPU on each, option ÷ reference, with no efficiency applied."
    ),
    gettext_lazy("GPUs needed per hour = ⌈reference GPUs ÷ throughput ratio⌉, whole GPUs."),
    gettext_lazy(
        "A measured window stands for the whole horizon: costs over it are scaled by "
        "horizon hours ÷ hours measured."
    ),
    gettext_lazy(
        "On-demand pays the GPU-hours used. Reserved and owned options are sized for the peak "
        "hour and paid every hour. Hybrids pay a baseline every hour and burst on demand."
    ),
    gettext_lazy(
        "Cost(R) = R·r·H + o·Σ max(0, d_h − R); the optimal baseline is the (1 − r/o) quantile "
        "of hourly demand (newsvendor rule). Break-even utilization = r ÷ o."
    ),
    gettext_lazy(
        "Owned GPU-hour = purchase ÷ (amortisation months × 730 h) + TDP kW × PUE × price per kWh "
        "+ colocation per GPU-month ÷ 730 h; operations staff are a monthly total."
    ),
    gettext_lazy("Reserved GPU-hour = reserved price + upfront ÷ (term months × 730 h)."),
    gettext_lazy("Checkpoint storage is a typed monthly figure until backup policies provide it."),
    gettext_lazy(
        "Training job GPU-hours = 6·N·D ÷ (dense peak FLOP/s × MFU) ÷ 3600 (Kaplan et al. 2020; "
        "Chowdhery et al. 2022)."
    ),
    gettext_lazy("A month is 730 hours (8,760 ÷ 12)."),
)


def columns(currency: str) -> list[Column]:
    """The comparison's columns, in every format: header with its unit, the figure from the
    option's row, its cell type (whole GPUs, money to the unit or the cent, ratios)."""

    def result_of(getter):
        return lambda row: getter(row.result) if row.result else None

    money = {"currency": currency}

    def cost(header, getter, places=0):
        return Column(header % money, result_of(getter), CellType.MONEY, places)

    return [
        Column(_("Option"), lambda row: row.option.name),
        Column(_("Kind"), lambda row: row.option.get_kind_display()),
        Column(_("GPU model"), lambda row: row.option.gpu_model.name),
        Column(_("Region"), lambda row: row.option.region),
        Column(_("Compliance zone"), lambda row: row.option.get_compliance_zone_display()),
        Column(
            _("ICP filing needed"),
            lambda row: _("yes") if row.option.needs_icp_filing else _("no"),
        ),
        Column(
            _("Throughput (reference GPUs per GPU)"),
            result_of(lambda r: r.spec.throughput_ratio),
            CellType.DECIMAL,
            2,
            xlsx_format="0.00",
        ),
        Column(
            _("Throughput measured or estimated"),
            lambda row: row.throughput.explanation if row.throughput else "",
        ),
        Column(_("Peak GPUs (GPUs)"), result_of(lambda r: r.peak_gpus), CellType.INTEGER),
        Column(_("Baseline GPUs (GPUs)"), result_of(lambda r: r.baseline_gpus), CellType.INTEGER),
        Column(
            _("GPU-hours paid (GPU-h)"), result_of(lambda r: r.paid_gpu_hours), CellType.INTEGER
        ),
        cost(_("Compute (%(currency)s)"), lambda r: r.cost.compute),
        cost(_("Power (%(currency)s)"), lambda r: r.cost.power),
        cost(_("Storage (%(currency)s)"), lambda r: r.cost.storage),
        cost(_("Network (%(currency)s)"), lambda r: r.cost.network),
        cost(_("Operations (%(currency)s)"), lambda r: r.cost.operations),
        cost(_("Total cost (%(currency)s)"), lambda r: r.total_cost),
        cost(
            _("Cost per effective GPU-hour (%(currency)s/reference GPU-h)"),
            lambda r: r.cost_per_effective_gpu_hour,
            2,
        ),
        cost(_("Cost per 1M output tokens (%(currency)s)"), lambda r: r.cost_per_million_tokens, 2),
        cost(_("Cost per 1k requests (%(currency)s)"), lambda r: r.cost_per_thousand_requests, 2),
        Column(
            _("Paid utilization (%)"), result_of(lambda r: r.paid_utilization), CellType.PERCENT
        ),
        Column(
            _("Break-even utilization (%)"),
            result_of(lambda r: r.break_even_utilization),
            CellType.PERCENT,
        ),
        Column(_("Requirements missed"), lambda row: row.misses_text),
        Column(
            _("Notes"),
            lambda row: row.problem or " ".join(row.result.notes if row.result else ()),
        ),
    ]


def comparison_table(result):
    """(headers, one list of raw values per option)."""
    specs = columns(result.scenario.currency)
    return headers(specs), rows_of(specs, result.rows)


def input_rows(result) -> list[tuple[str, object, int | None]]:
    """The scenario's inputs and what the demand came to, as (label with unit, raw value,
    places shown): numbers stay numbers for the XLSX and CSV; the PDF rounds them to
    ``places`` as the page does. What-if inputs are marked, each followed by the saved
    value it replaced."""
    scenario, info, demand = result.scenario, result.info, result.demand
    saved = result.what_if_saved
    rows = [(_("Scenario"), scenario.name, None)]
    if saved:
        names = ", ".join(_what_if_label(name) for name in saved)
        rows.append(
            (
                _("What-if inputs applied"),
                _("yes, not saved on the scenario: %(names)s") % {"names": names},
                None,
            )
        )
    else:
        rows.append((_("What-if inputs applied"), _("no: the scenario as saved"), None))

    def scenario_input(name, label, places):
        rows.append(
            (
                _("%(label)s (what-if)") % {"label": label} if name in saved else label,
                getattr(scenario, name),
                places,
            )
        )
        if name in saved:
            rows.append(
                (_("%(label)s, saved on the scenario") % {"label": label}, saved[name], places)
            )

    scenario_input("horizon_months", _("Horizon (months)"), 0)
    rows += [
        (_("Currency"), scenario.currency, None),
        (_("Exchange rate (currency per USD)"), scenario.exchange_rate, None),
        (_("Exchange rate from"), scenario.exchange_rate_source, None),
        (_("Demand source"), info.source_label, None),
    ]
    if scenario.demand_pool:
        rows.append((_("Pool measured"), scenario.demand_pool.name, None))
    if scenario.demand_workload:
        rows.append((_("Workload measured"), scenario.demand_workload.name, None))
    if info.window_start:
        rows.append(
            (
                _("Measured window (UTC)"),
                f"{info.window_start:%Y-%m-%d %H:00} – {info.window_end:%Y-%m-%d %H:00}",
                None,
            )
        )
    scenario_input("window_days", _("Measured window (days)"), 0)
    scenario_input(
        "entered_gpu_hours_per_month", _("Entered GPU-hours per month (reference GPU-h)"), 0
    )
    rows.append(
        (_("24-hour profile (weights)"), scenario.entered_hourly_profile or _("flat"), None)
    )
    rows.append((_("Reference GPU"), info.reference_gpu.name if info.reference_gpu else None, None))
    scenario_input("reference_efficiency", _("Reference efficiency (ratio, 0–1)"), None)
    rows.append((_("Compute precision"), scenario.get_compute_precision_display(), None))
    if scenario.model_architecture:
        rows.append((_("Model architecture"), scenario.model_architecture.name, None))
    if scenario.training_tokens:
        rows.append((_("Training tokens (tokens)"), scenario.training_tokens, 0))
        rows.append((_("Training GPUs (GPUs)"), scenario.training_gpus, 0))
    if demand is not None:
        rows += [
            (_("Hours in the demand curve (h)"), len(demand.hourly_reference_gpus), 0),
            (_("Peak demand (reference GPUs)"), demand.peak, 1),
            (_("Mean demand (reference GPUs)"), demand.mean, 1),
            (_("Work over the horizon (reference GPU-h)"), demand.reference_gpu_hours, 0),
            (_("Output tokens in the curve (tokens)"), demand.output_tokens or None, 0),
            (_("Requests in the curve (requests)"), demand.requests or None, 0),
        ]
    requirements = result.requirements
    if requirements.min_ddos_protection_gbps is not None:
        rows.append(
            (_("Minimum DDoS protection (Gbps)"), requirements.min_ddos_protection_gbps, None)
        )
    if requirements.accepted_line_types:
        rows.append(
            (_("Line types accepted"), ", ".join(requirements.accepted_line_types.values()), None)
        )
    if requirements.no_icp_filing:
        rows.append((_("No ICP filing (备案)"), _("yes"), None))
    if requirements.min_ip_address_count is not None:
        rows.append((_("Minimum IP addresses"), requirements.min_ip_address_count, 0))
    for region in result.user_regions:
        rows.append(
            (
                _("Maximum RTT from %(region)s (ms)") % {"region": region.name},
                None if region.max_rtt_ms is None else float(region.max_rtt_ms),
                None,
            )
        )
    if info.fallback_used:
        rows.append((_("Fallback"), _("entered GPU-hours per month (no measurements yet)"), None))
    for note in info.notes:
        rows.append((_("Note"), note, None))
    return rows


def _field_label(model, name) -> str:
    return capfirst(str(model._meta.get_field(name).verbose_name))


def _what_if_label(name) -> str:
    return _field_label(Scenario, name)


def shown_input(value, places=None) -> str:
    """A raw input as the PDF shows it: rounded like the page, "—" when empty, a decimal
    as typed."""
    if value is None:
        return "—"
    if places is not None:
        return units.number(value, places)
    if isinstance(value, Decimal):
        return plain(value)
    return str(value)


def input_columns(places=None) -> list[Column]:
    """The inputs table's two columns; the value's decimals are the row's own (``places``:
    None for a text or a number shown as typed)."""
    value_type = CellType.TEXT if places is None else CellType.DECIMAL
    return [
        Column(_("Input (unit)"), lambda line: line[0]),
        Column(
            _("Value"),
            lambda line: line[1],
            value_type,
            places,
            pdf_text=lambda value: shown_input(value, places),
        ),
    ]


def price_columns(currency: str, *, value_header_unit: bool = False) -> list[Column]:
    """The prices used: one line per price an option was costed with. The CSV and the PDF
    head the value "Value" (each line has its unit); the XLSX names the default currency."""
    value_header = (
        _("Value (%(currency)s unless the unit says)") % {"currency": currency}
        if value_header_unit
        else _("Value")
    )
    return [
        Column(_("Option"), lambda price: price[0]),
        Column(_("Price used"), lambda price: price[1]),
        # Each price has its own unit and precision: shown as computed.
        Column(
            value_header,
            lambda price: price[2],
            CellType.DECIMAL,
            xlsx_format="General",
            pdf_text=shown_input,
        ),
        Column(_("Unit"), lambda price: price[3]),
        Column(_("Source"), lambda price: price[4]),
    ]


def price_rows(result) -> list[list]:
    """Every price each option was costed with (typed, or from its pool, converted), and
    the per-GPU-hour rates derived from them: options.prices_used."""
    return [
        [row.option.name, price.label, price.value, price.unit, price.source]
        for row in result.rows
        for price in prices_used(result.scenario, row)
    ]


OPTION_INPUT_FIELDS = (
    "kind",
    "provider",
    "region",
    "compliance_zone",
    "gpu_model",
    "source_pool",
    "price_note",
    "on_demand_price_per_gpu_hour",
    "reserved_price_per_gpu_hour",
    "reserved_upfront_per_gpu",
    "reserved_term_months",
    "purchase_price_per_gpu",
    "amortisation_months",
    "power_price_per_kwh",
    "pue",
    "colocation_per_gpu_month",
    "operations_per_month",
    "storage_per_month",
    "network_per_month",
    "hybrid_baseline",
    "baseline_gpus",
    "throughput_basis",
    "efficiency",
    "ddos_protection_gbps",
    "line_type",
    "ip_address_count",
)


RATIO_FIELDS = {"pue", "efficiency"}


def option_input_columns(currency: str) -> list[Column]:
    """The inputs typed on each option (blank where a price comes from its pool: the prices
    used say which), numbers as typed."""

    def getter(name):
        def value(option):
            display = getattr(option, f"get_{name}_display", None)
            value = display() if callable(display) else getattr(option, name)
            return str(value) if isinstance(value, models.Model) else value

        return value

    specs = [Column(_("Option"), lambda option: option.name)]
    for name in OPTION_INPUT_FIELDS:
        label = _field_label(ScenarioOption, name)
        if name in MONEY_FIELDS:
            label = _("%(label)s (%(currency)s)") % {"label": label, "currency": currency}
        elif name in RATIO_FIELDS:
            label = _("%(label)s (ratio)") % {"label": label}
        field = ScenarioOption._meta.get_field(name)
        numeric = field.get_internal_type() in NUMBER_FIELD_TYPES and not field.choices
        specs.append(
            Column(
                label,
                getter(name),
                CellType.DECIMAL if numeric else CellType.TEXT,
                xlsx_format="General",
                pdf_text=shown_input,
            )
        )
    return specs


NUMBER_FIELD_TYPES = {
    "DecimalField",
    "IntegerField",
    "PositiveIntegerField",
    "PositiveSmallIntegerField",
    "FloatField",
}


def option_input_rows(result) -> tuple[list[str], list[list]]:
    specs = option_input_columns(result.scenario.currency)
    return headers(specs), rows_of(specs, [row.option for row in result.rows])


def generated_line() -> str:
    return _("Generated %(when)s UTC by gpufleet.") % {
        "when": f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
    }


def what_if_sentence(result) -> str:
    """Whether the file shows the scenario as saved or with the page's what-if inputs."""
    saved = result.what_if_saved
    if not saved:
        return _("What-if inputs: none; the scenario as saved.")
    changes = "; ".join(
        _("%(label)s %(value)s (saved: %(saved)s)")
        % {
            "label": _what_if_label(name),
            "value": shown_input(getattr(result.scenario, name)),
            "saved": shown_input(value),
        }
        for name, value in saved.items()
    )
    return _("What-if inputs applied, not saved on the scenario: %(changes)s.") % {
        "changes": changes
    }


def recommendation(result) -> str:
    if result.comparison is None:
        return result.info.empty_message or _("No comparison yet.")
    return " ".join([result.comparison.recommendation, *result.comparison.reasons])


EXPORT = register(
    "procurement.comparison",
    formats=("csv", "xlsx", "pdf"),
    tables=lambda currency="USD": {
        "comparison": columns(currency),
        "inputs": input_columns(),
        "option inputs": option_input_columns(currency),
        "prices used": price_columns(currency),
    },
    module=__name__,
)
