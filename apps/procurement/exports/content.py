"""The comparison as CSV, XLSX (openpyxl) and PDF (reportlab, charts drawn by
reportlab.graphics, so the server needs no browser and no internet).

Every format takes its numbers from ``comparison_table``, so a file says what the page
says; ``amount`` and ``percent`` are the page's ``number`` and ``percent`` filters
(apps/core/templatetags/units.py).
"""

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

from django.db import models
from django.utils import translation
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.core.bounds import plain
from apps.core.exports import (
    csv_cell,
    pdf_landscape_document,
    pdf_paragraph,
    pdf_string,
    write_xlsx_cell,
)
from apps.core.templatetags import units
from apps.procurement.models import ComparisonExport, Scenario, ScenarioOption
from apps.procurement.services import MONEY_FIELDS, prices_used

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


# The page's own filters, so a file formats numbers exactly as the page does:
# 1234567.891 → "1,234,568", 0.42 → "42 %", None → "—".
amount = units.number
percent = units.percent


def columns(currency: str):
    """(header with unit, getter(row) → raw value, number format for XLSX, places)."""

    def result_of(getter):
        return lambda row: getter(row.result) if row.result else None

    money = {"currency": currency}

    return (
        (_("Option"), lambda row: row.option.name, None, None),
        (_("Kind"), lambda row: row.option.get_kind_display(), None, None),
        (_("GPU model"), lambda row: row.option.gpu_model.name, None, None),
        (_("Region"), lambda row: row.option.region, None, None),
        (_("Compliance zone"), lambda row: row.option.get_compliance_zone_display(), None, None),
        (
            _("ICP filing needed"),
            lambda row: _("yes") if row.option.needs_icp_filing else _("no"),
            None,
            None,
        ),
        (
            _("Throughput (reference GPUs per GPU)"),
            result_of(lambda r: r.spec.throughput_ratio),
            "0.00",
            2,
        ),
        (
            _("Throughput measured or estimated"),
            lambda row: row.throughput.explanation if row.throughput else "",
            None,
            None,
        ),
        (_("Peak GPUs (GPUs)"), result_of(lambda r: r.peak_gpus), "#,##0", 0),
        (_("Baseline GPUs (GPUs)"), result_of(lambda r: r.baseline_gpus), "#,##0", 0),
        (_("GPU-hours paid (GPU-h)"), result_of(lambda r: r.paid_gpu_hours), "#,##0", 0),
        (_("Compute (%(currency)s)") % money, result_of(lambda r: r.cost.compute), "#,##0", 0),
        (_("Power (%(currency)s)") % money, result_of(lambda r: r.cost.power), "#,##0", 0),
        (_("Storage (%(currency)s)") % money, result_of(lambda r: r.cost.storage), "#,##0", 0),
        (_("Network (%(currency)s)") % money, result_of(lambda r: r.cost.network), "#,##0", 0),
        (
            _("Operations (%(currency)s)") % money,
            result_of(lambda r: r.cost.operations),
            "#,##0",
            0,
        ),
        (_("Total cost (%(currency)s)") % money, result_of(lambda r: r.total_cost), "#,##0", 0),
        (
            _("Cost per effective GPU-hour (%(currency)s/reference GPU-h)") % money,
            result_of(lambda r: r.cost_per_effective_gpu_hour),
            "#,##0.00",
            2,
        ),
        (
            _("Cost per 1M output tokens (%(currency)s)") % money,
            result_of(lambda r: r.cost_per_million_tokens),
            "#,##0.00",
            2,
        ),
        (
            _("Cost per 1k requests (%(currency)s)") % money,
            result_of(lambda r: r.cost_per_thousand_requests),
            "#,##0.00",
            2,
        ),
        (_("Paid utilization (%)"), result_of(lambda r: r.paid_utilization), "0%", "%"),
        (_("Break-even utilization (%)"), result_of(lambda r: r.break_even_utilization), "0%", "%"),
        (_("Requirements missed"), lambda row: row.misses_text, None, None),
        (
            _("Notes"),
            lambda row: row.problem or " ".join(row.result.notes if row.result else ()),
            None,
            None,
        ),
    )


def _text(value, places) -> str:
    if places is None:
        return "" if value is None else str(value)
    if places == "%":
        return percent(value)
    return amount(value, places)


def comparison_table(result, *, formatted: bool):
    specs = columns(result.scenario.currency)
    headers = [header for header, *_ in specs]
    rows = []
    for row in result.rows:
        values = []
        for _header, getter, _format, places in specs:
            value = getter(row)
            values.append(_text(value, places) if formatted else value)
        rows.append(values)
    return headers, rows


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
        (_("Exchange rate (currency per USD)"), scenario.usd_exchange_rate, None),
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


def _shown(value, places) -> str:
    """A raw input as the PDF shows it: rounded like the page, "—" when empty."""
    if value is None:
        return "—"
    if places is not None:
        return amount(value, places)
    if isinstance(value, Decimal):
        return plain(value)
    return str(value)


PRICE_HEADERS = (
    gettext_lazy("Option"),
    gettext_lazy("Price used"),
    gettext_lazy("Value"),
    gettext_lazy("Unit"),
    gettext_lazy("Source"),
)


def price_rows(result) -> list[list]:
    """Every price each option was costed with (typed, or from its pool, converted), and
    the per-GPU-hour rates derived from them: services.prices_used."""
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


def option_input_rows(result) -> tuple[list[str], list[list]]:
    """The inputs typed on each option (blank where a price comes from its pool: the
    prices used say which)."""
    currency = result.scenario.currency
    headers = [_("Option")]
    for name in OPTION_INPUT_FIELDS:
        label = _field_label(ScenarioOption, name)
        if name in MONEY_FIELDS:
            label = _("%(label)s (%(currency)s)") % {"label": label, "currency": currency}
        elif name in RATIO_FIELDS:
            label = _("%(label)s (ratio)") % {"label": label}
        headers.append(label)
    rows = []
    for row in result.rows:
        option = row.option
        values = [option.name]
        for name in OPTION_INPUT_FIELDS:
            display = getattr(option, f"get_{name}_display", None)
            value = display() if callable(display) else getattr(option, name)
            values.append(str(value) if isinstance(value, models.Model) else value)
        rows.append(values)
    return headers, rows


def _generated_line() -> str:
    return _("Generated %(when)s UTC by gpufleet.") % {
        "when": f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
    }


# --- CSV --------------------------------------------------------------------------------


def _csv_value(value):
    """Plain numbers (a decimal point, no thousands separators), as the forms take them;
    text through ``csv_cell``, so a name is never a formula."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, Decimal):
        return plain(value)
    return csv_cell(value)


def build_csv(result) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    headers, rows = comparison_table(result, formatted=False)
    # A CSV has no number format: its percentages are the ratios they are stored as.
    writer.writerow([_csv_value(header.replace("(%)", _("(ratio)"))) for header in headers])
    for values in rows:
        writer.writerow([_csv_value(value) for value in values])
    writer.writerow([])
    writer.writerow([_("Recommendation"), _csv_value(_recommendation(result))])
    writer.writerow([_("What-if"), _csv_value(_what_if_sentence(result))])
    for label, value, _places in input_rows(result):
        writer.writerow([_csv_value(label), _csv_value(value)])
    writer.writerow([])
    writer.writerow([str(header) for header in PRICE_HEADERS])
    for values in price_rows(result):
        writer.writerow([_csv_value(value) for value in values])
    return buffer.getvalue().encode("utf-8-sig")  # the BOM lets Excel read UTF-8


def _what_if_sentence(result) -> str:
    """Whether the file shows the scenario as saved or with the page's what-if inputs."""
    saved = result.what_if_saved
    if not saved:
        return _("What-if inputs: none; the scenario as saved.")
    changes = "; ".join(
        _("%(label)s %(value)s (saved: %(saved)s)")
        % {
            "label": _what_if_label(name),
            "value": _shown(getattr(result.scenario, name), None),
            "saved": _shown(value, None),
        }
        for name, value in saved.items()
    )
    return _("What-if inputs applied, not saved on the scenario: %(changes)s.") % {
        "changes": changes
    }


def _recommendation(result) -> str:
    if result.comparison is None:
        return result.info.empty_message or _("No comparison yet.")
    return " ".join([result.comparison.recommendation, *result.comparison.reasons])


# --- XLSX -------------------------------------------------------------------------------


def build_xlsx(result) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font, PatternFill
    from openpyxl.utils import get_column_letter

    header_font = Font(bold=True, color="FFFFFF")
    header_fill = PatternFill("solid", fgColor="206BC4")
    workbook = Workbook()

    def header_row(sheet, headers, row=1):
        for column, header in enumerate(headers, start=1):
            cell = write_xlsx_cell(sheet, row, column, header)
            cell.font, cell.fill = header_font, header_fill
            cell.alignment = Alignment(wrap_text=True, vertical="top")
        sheet.freeze_panes = sheet.cell(row=row + 1, column=2)

    def widths(sheet, width_by_column):
        for column, width in width_by_column.items():
            sheet.column_dimensions[get_column_letter(column)].width = width

    sheet = workbook.active
    sheet.title = _("Comparison")
    currency = result.scenario.currency
    specs = columns(currency)
    headers, rows = comparison_table(result, formatted=False)
    header_row(sheet, headers)
    for row_index, values in enumerate(rows, start=2):
        for column, (value, (_header, _getter, number_format, _places)) in enumerate(
            zip(values, specs, strict=True), start=1
        ):
            cell = write_xlsx_cell(sheet, row_index, column, value)
            if number_format and isinstance(value, int | float):
                cell.number_format = number_format
    widths(sheet, {1: 34, **{column: 16 for column in range(2, len(headers))}, len(headers): 60})
    sheet.row_dimensions[1].height = 45
    summary_row = len(rows) + 3
    write_xlsx_cell(sheet, summary_row, 1, _("Recommendation")).font = Font(bold=True)
    write_xlsx_cell(sheet, summary_row, 2, _recommendation(result))
    write_xlsx_cell(sheet, summary_row + 1, 1, _what_if_sentence(result))
    write_xlsx_cell(sheet, summary_row + 2, 1, _generated_line())

    inputs = workbook.create_sheet(_("Inputs & assumptions"))
    header_row(inputs, [_("Input (unit)"), _("Value")])
    line = 2
    for label, value, places in input_rows(result):
        write_xlsx_cell(inputs, line, 1, label)
        cell = write_xlsx_cell(inputs, line, 2, value)
        if places is not None and isinstance(value, int | float | Decimal):
            cell.number_format = "#,##0" if places == 0 else "#,##0." + "0" * places
        line += 1
    line += 1
    option_headers, option_rows = option_input_rows(result)
    header_row(inputs, option_headers, row=line)
    inputs.freeze_panes = "A2"
    for values in option_rows:
        line += 1
        for column, value in enumerate(values, start=1):
            write_xlsx_cell(inputs, line, column, value)
    line += 2
    write_xlsx_cell(inputs, line, 1, _("Assumptions and formulas")).font = Font(bold=True)
    for assumption in ASSUMPTIONS:
        line += 1
        write_xlsx_cell(inputs, line, 1, str(assumption))
    widths(inputs, {1: 48, 2: 40, **{column: 18 for column in range(3, len(option_headers) + 1)}})

    prices = workbook.create_sheet(_("Prices used"))
    value_header = _("Value (%(currency)s unless the unit says)") % {"currency": currency}
    header_row(prices, [*map(str, PRICE_HEADERS[:2]), value_header, *map(str, PRICE_HEADERS[3:])])
    for row_index, values in enumerate(price_rows(result), start=2):
        for column, value in enumerate(values, start=1):
            write_xlsx_cell(prices, row_index, column, value)
    widths(prices, {1: 34, 2: 44, 3: 16, 4: 22, 5: 70})

    demand_sheet = workbook.create_sheet(_("Demand curve"))
    option_results = [(row.option.name, row.result) for row in result.rows if row.result]
    demand_headers = [_("Hour (UTC)"), _("Demand (reference GPUs)")] + [
        _("%(name)s: GPUs needed (GPUs)") % {"name": name} for name, _result in option_results
    ]
    header_row(demand_sheet, demand_headers)
    if result.demand is not None:
        times = result.info.hourly_times
        for index, value in enumerate(result.demand.hourly_reference_gpus):
            row_index = index + 2
            hour = times[index].replace(tzinfo=None) if index < len(times) else index
            cell = write_xlsx_cell(demand_sheet, row_index, 1, hour)
            if times:
                cell.number_format = "yyyy-mm-dd hh:mm"
            write_xlsx_cell(demand_sheet, row_index, 2, round(value, 4)).number_format = "0.00"
            for offset, (_name, option_result) in enumerate(option_results, start=3):
                write_xlsx_cell(
                    demand_sheet, row_index, offset, option_result.gpus_needed_by_hour[index]
                )
    widths(demand_sheet, {column: 20 for column in range(1, len(demand_headers) + 1)})

    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


# --- PDF --------------------------------------------------------------------------------

# The columns of the PDF's tables, by their English headers (``_column_indexes``).
PDF_COLUMNS = (
    "Option",
    "Peak GPUs (GPUs)",
    "Baseline GPUs (GPUs)",
    "Total cost",
    "Cost per effective GPU-hour",
    "Cost per 1M output tokens",
    "Paid utilization (%)",
    "Break-even utilization (%)",
)
BREAKDOWN_COLUMNS = ("Option", "Compute", "Power", "Storage", "Network", "Operations", "Total cost")


def _column_indexes(currency, wanted) -> list[int]:
    """Where the columns whose English headers start with ``wanted`` are: the headers are
    looked up in English whatever the file's language."""
    with translation.override("en"):
        english = [header for header, *_rest in columns(currency)]
    return [
        next(index for index, header in enumerate(english) if header.startswith(name))
        for name in wanted
    ]


def _pick(headers, rows, indexes):
    return [headers[index] for index in indexes], [
        [values[index] for index in indexes] for values in rows
    ]


def _short(name, length):
    return name if len(name) <= length else name[: length - 1] + "…"


def _bar_chart(labels, values, title, unit):
    from reportlab.graphics.charts.barcharts import HorizontalBarChart
    from reportlab.graphics.shapes import Drawing
    from reportlab.lib import colors

    drawing = Drawing(720, 40 + 28 * len(labels))
    chart = HorizontalBarChart()
    chart.x, chart.y = 220, 20
    chart.width, chart.height = 460, 22 * len(labels)
    chart.data = [values]
    # The option names are drawn beside the bars by pdf_string: an axis label has one font,
    # and a name may need several (Latin and Chinese).
    chart.categoryAxis.categoryNames = [""] * len(labels)
    chart.valueAxis.valueMin = 0
    chart.valueAxis.labels.fontSize = 7
    chart.valueAxis.labelTextFormat = lambda value: f"{value:,.0f}"
    chart.bars[0].fillColor = colors.HexColor("#206BC4")
    chart.barLabelFormat = lambda value: f"{value:,.0f} {unit}"
    chart.barLabels.fontSize = 7
    chart.barLabels.boxAnchor = "w"
    chart.barLabels.dx = 3
    drawing.add(chart)
    # The first category is drawn at the bottom of a horizontal bar chart.
    band = chart.height / len(labels)
    for index, label in enumerate(labels):
        drawing.add(
            pdf_string(
                chart.x - 5,
                chart.y + band * (index + 0.5) - 2.5,
                _short(label, 40),
                font_size=7,
                text_anchor="end",
            )
        )
    drawing.add(pdf_string(0, drawing.height - 12, title, font_name="Helvetica-Bold", font_size=10))
    return drawing


def _line_chart(points, title, x_label, y_label, marker=None):
    from reportlab.graphics.charts.lineplots import LinePlot
    from reportlab.graphics.shapes import Drawing, Line
    from reportlab.lib import colors

    drawing = Drawing(720, 200)
    plot = LinePlot()
    plot.x, plot.y, plot.width, plot.height = 60, 35, 620, 130
    plot.data = [points]
    plot.lines[0].strokeColor = colors.HexColor("#206BC4")
    plot.xValueAxis.labels.fontSize = 7
    plot.yValueAxis.labels.fontSize = 7
    plot.yValueAxis.valueMin = 0
    plot.yValueAxis.labelTextFormat = lambda value: f"{value:,.0f}"
    drawing.add(plot)
    drawing.add(pdf_string(0, 185, title, font_name="Helvetica-Bold", font_size=10))
    drawing.add(pdf_string(300, 5, x_label, font_size=8))
    drawing.add(pdf_string(0, 170, y_label, font_size=8))
    if marker is not None:
        xs = [x for x, _ in points]
        span = (max(xs) - min(xs)) or 1
        x = plot.x + (marker - min(xs)) / span * plot.width
        drawing.add(
            Line(x, plot.y, x, plot.y + plot.height, strokeColor=colors.red, strokeDashArray=[3, 2])
        )
    return drawing


def build_pdf(result) -> bytes:
    from reportlab.lib import colors
    from reportlab.lib.enums import TA_RIGHT
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import mm
    from reportlab.platypus import PageBreak, Paragraph, Spacer, Table
    from reportlab.platypus import TableStyle as Style

    styles = getSampleStyleSheet()
    small = styles["BodyText"].clone("small", fontSize=8, leading=10)
    cell = small.clone("cell", fontSize=7, leading=9)
    number_cell = cell.clone("number_cell", alignment=TA_RIGHT)
    scenario = result.scenario
    currency = scenario.currency
    buffer = io.BytesIO()
    document = pdf_landscape_document(
        buffer, title=_("%(name)s: procurement comparison") % {"name": scenario.name}
    )
    table_style = Style(
        [
            ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#206BC4")),
            ("TEXTCOLOR", (0, 0), (-1, 0), colors.white),
            ("FONTSIZE", (0, 0), (-1, -1), 7),
            ("GRID", (0, 0), (-1, -1), 0.25, colors.grey),
            ("ALIGN", (1, 1), (-1, -1), "RIGHT"),
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ]
    )

    def table(headers, rows, widths=None):
        """Every cell a Paragraph of escaped text, so a name wraps in its column, may be in
        any script and is never markup; the first column reads left, the others right."""
        data = [[pdf_paragraph(header, small) for header in headers]] + [
            [
                value
                if isinstance(value, Paragraph)
                else pdf_paragraph(_shown(value, None), number_cell if column else cell)
                for column, value in enumerate(values)
            ]
            for values in rows
        ]
        built = Table(data, colWidths=widths, repeatRows=1)
        built.setStyle(table_style)
        return built

    story = [
        pdf_paragraph(
            _("%(name)s: procurement comparison") % {"name": scenario.name}, styles["Title"]
        ),
        pdf_paragraph(
            _("Horizon %(months)s months · prices in %(currency)s · demand: %(source)s.")
            % {
                "months": scenario.horizon_months,
                "currency": currency,
                "source": result.info.source_label,
            }
            + f" {_generated_line()}",
            small,
        ),
        pdf_paragraph(_what_if_sentence(result), small),
        Spacer(1, 4 * mm),
        pdf_paragraph(_("Recommendation"), styles["Heading2"]),
        pdf_paragraph(_recommendation(result), styles["BodyText"]),
        Spacer(1, 4 * mm),
    ]
    headers, rows = comparison_table(result, formatted=True)
    if rows:
        picked_headers, picked_rows = _pick(headers, rows, _column_indexes(currency, PDF_COLUMNS))
        story += [
            pdf_paragraph(_("Comparison"), styles["Heading2"]),
            table(picked_headers, picked_rows, [200] + [75] * (len(picked_headers) - 1)),
            Spacer(1, 4 * mm),
            pdf_paragraph(
                _("Total cost over the horizon by line (%(currency)s)") % {"currency": currency},
                styles["Heading3"],
            ),
            table(
                *_pick(headers, rows, _column_indexes(currency, BREAKDOWN_COLUMNS)),
                [200] + [80] * 6,
            ),
        ]
        if any(row.requirements_stated for row in result.rows):
            story.append(pdf_paragraph(_("Requirements missed"), styles["Heading3"]))
            for row in result.rows:
                story.append(
                    pdf_paragraph(
                        _("%(name)s: %(misses)s")
                        % {"name": row.option.name, "misses": row.misses_text},
                        small,
                    )
                )
        story.append(pdf_paragraph(_("Throughput measured or estimated"), styles["Heading3"]))
        for row in result.rows:
            if row.throughput is not None:
                story.append(
                    pdf_paragraph(
                        _("%(name)s: %(throughput)s")
                        % {"name": row.option.name, "throughput": row.throughput.explanation},
                        small,
                    )
                )
        problems = [(row.option.name, row.problem) for row in result.rows if row.problem]
        for name, problem in problems:
            story.append(
                pdf_paragraph(
                    _("%(name)s: not compared — %(problem)s") % {"name": name, "problem": problem},
                    small,
                )
            )
    else:
        story.append(pdf_paragraph(_("No options to compare yet."), styles["BodyText"]))

    option_results = [row.result for row in result.rows if row.result]
    if option_results:
        story += [
            PageBreak(),
            _bar_chart(
                [r.spec.name for r in option_results],
                [r.total_cost for r in option_results],
                _("Total cost over %(months)s months (%(currency)s)")
                % {"months": scenario.horizon_months, "currency": currency},
                currency,
            ),
            Spacer(1, 6 * mm),
        ]
        hybrid = next((r for r in option_results if r.cost_by_baseline_gpus), None)
        if hybrid is not None:
            story.append(
                _line_chart(
                    list(enumerate(hybrid.cost_by_baseline_gpus)),
                    _("%(name)s: total cost by baseline size (%(currency)s); optimum %(gpus)s GPUs")
                    % {
                        "name": _short(hybrid.spec.name, 60),
                        "currency": currency,
                        "gpus": hybrid.optimal_baseline_gpus,
                    },
                    _("baseline GPUs"),
                    currency,
                    marker=hybrid.optimal_baseline_gpus,
                )
            )
    if result.demand is not None:
        curve = result.demand.hourly_reference_gpus
        story += [
            Spacer(1, 6 * mm),
            _line_chart(
                list(enumerate(curve)),
                _("Demand per hour (reference GPUs)"),
                _("hour of the curve"),
                _("GPUs"),
            ),
        ]
    story += [
        PageBreak(),
        pdf_paragraph(_("Inputs"), styles["Heading2"]),
        table(
            [_("Input (unit)"), _("Value")],
            [(label, _shown(value, places)) for label, value, places in input_rows(result)],
            [260, 460],
        ),
        Spacer(1, 4 * mm),
        pdf_paragraph(_("Assumptions and formulas"), styles["Heading2"]),
        *[pdf_paragraph(f"• {assumption}", small) for assumption in ASSUMPTIONS],
    ]
    option_headers, option_rows = option_input_rows(result)
    if option_rows:
        story += [Spacer(1, 4 * mm), pdf_paragraph(_("Option inputs"), styles["Heading2"])]
        # Transposed: one column per option fits a landscape page.
        transposed = [
            [header] + [values[index] for values in option_rows]
            for index, header in enumerate(option_headers)
        ][1:]
        story.append(
            table(
                [_("Input")] + [values[0] for values in option_rows],
                transposed,
                [170] + [550 / len(option_rows)] * len(option_rows),
            )
        )
    priced = price_rows(result)
    if priced:
        story += [
            Spacer(1, 4 * mm),
            pdf_paragraph(_("Prices used"), styles["Heading2"]),
            table(
                [str(header) for header in PRICE_HEADERS],
                [
                    [
                        name,
                        pdf_paragraph(label, small),
                        _shown(value, None),
                        unit,
                        pdf_paragraph(source, small),
                    ]
                    for name, label, value, unit, source in priced
                ],
                [140, 170, 70, 100, 240],
            ),
        ]
    document.build(story)
    return buffer.getvalue()


# The file each export format is written as, by ``services.run_export``.
WRITERS = {
    ComparisonExport.Format.CSV: build_csv,
    ComparisonExport.Format.XLSX: build_xlsx,
    ComparisonExport.Format.PDF: build_pdf,
}
