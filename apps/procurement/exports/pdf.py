"""The comparison as a PDF (reportlab; charts drawn by reportlab.graphics, so the server
needs no browser and no internet), one function per section of the document. Every table
is written by apps/core/exports.py's ``pdf_table`` from the columns of content.py."""

import io
from dataclasses import dataclass

from django.utils import translation
from django.utils.translation import gettext as _

from apps.core.exports import (
    PDF_HEADER_BLUE,
    Column,
    pdf_grid,
    pdf_landscape_document,
    pdf_paragraph,
    pdf_string,
    pdf_table,
    rows_of,
)
from apps.procurement.exports.content import (
    ASSUMPTIONS,
    columns,
    generated_line,
    input_columns,
    input_rows,
    option_input_columns,
    price_columns,
    price_rows,
    recommendation,
    shown_input,
    what_if_sentence,
)

# The columns of the PDF's tables, by their English headers (``_columns_named``).
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


def _columns_named(currency, wanted) -> list[Column]:
    """The columns whose English headers start with ``wanted``: the headers are looked up
    in English whatever the file's language."""
    with translation.override("en"):
        english = [str(column.header) for column in columns(currency)]
    specs = columns(currency)
    return [
        specs[next(index for index, header in enumerate(english) if header.startswith(name))]
        for name in wanted
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
    chart.bars[0].fillColor = colors.HexColor(PDF_HEADER_BLUE)
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
    plot.lines[0].strokeColor = colors.HexColor(PDF_HEADER_BLUE)
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


@dataclass
class Styles:
    """The document's paragraph styles and the one table style every table shares."""

    title: object
    heading2: object
    heading3: object
    body: object
    small: object
    cell: object
    number_cell: object
    grid: object

    @classmethod
    def build(cls) -> "Styles":
        from reportlab.lib import colors
        from reportlab.lib.enums import TA_RIGHT
        from reportlab.lib.styles import getSampleStyleSheet

        sheet = getSampleStyleSheet()
        small = sheet["BodyText"].clone("small", fontSize=8, leading=10)
        cell = small.clone("cell", fontSize=7, leading=9)
        return cls(
            title=sheet["Title"],
            heading2=sheet["Heading2"],
            heading3=sheet["Heading3"],
            body=sheet["BodyText"],
            small=small,
            cell=cell,
            number_cell=cell.clone("number_cell", alignment=TA_RIGHT),
            grid=pdf_grid(
                ("TEXTCOLOR", (0, 0), (-1, 0), colors.white),
                ("FONTSIZE", (0, 0), (-1, -1), 7),
                ("ALIGN", (1, 1), (-1, -1), "RIGHT"),
            ),
        )

    def table(self, specs, rows, widths):
        """A table of ``specs``: text reads left, figures right, a missing figure "—"."""
        return pdf_table(
            specs,
            rows,
            header_style=self.small,
            text_style=self.cell,
            number_style=self.number_cell,
            table_style=self.grid,
            empty="—",
            widths=widths,
        )


def _spacer(height_mm):
    from reportlab.lib.units import mm
    from reportlab.platypus import Spacer

    return Spacer(1, height_mm * mm)


def title_section(result, styles: Styles) -> list:
    """The title, the horizon, currency and demand, what-if inputs, the recommendation."""
    scenario = result.scenario
    return [
        pdf_paragraph(
            _("%(name)s: procurement comparison") % {"name": scenario.name}, styles.title
        ),
        pdf_paragraph(
            _("Horizon %(months)s months · prices in %(currency)s · demand: %(source)s.")
            % {
                "months": scenario.horizon_months,
                "currency": scenario.currency,
                "source": result.info.source_label,
            }
            + f" {generated_line()}",
            styles.small,
        ),
        pdf_paragraph(what_if_sentence(result), styles.small),
        _spacer(4),
        pdf_paragraph(_("Recommendation"), styles.heading2),
        pdf_paragraph(recommendation(result), styles.body),
        _spacer(4),
    ]


def comparison_section(result, styles: Styles) -> list:
    """The main figures of each option, its cost line by line, what it misses, how its
    throughput was found and why an option could not be compared."""
    if not result.rows:
        return [pdf_paragraph(_("No options to compare yet."), styles.body)]
    currency = result.scenario.currency
    main = _columns_named(currency, PDF_COLUMNS)
    breakdown = _columns_named(currency, BREAKDOWN_COLUMNS)
    story = [
        pdf_paragraph(_("Comparison"), styles.heading2),
        styles.table(main, rows_of(main, result.rows), [200] + [75] * (len(main) - 1)),
        _spacer(4),
        pdf_paragraph(
            _("Total cost over the horizon by line (%(currency)s)") % {"currency": currency},
            styles.heading3,
        ),
        styles.table(breakdown, rows_of(breakdown, result.rows), [200] + [80] * 6),
    ]
    if any(row.requirements_stated for row in result.rows):
        story.append(pdf_paragraph(_("Requirements missed"), styles.heading3))
        for row in result.rows:
            story.append(
                pdf_paragraph(
                    _("%(name)s: %(misses)s")
                    % {"name": row.option.name, "misses": row.misses_text},
                    styles.small,
                )
            )
    story.append(pdf_paragraph(_("Throughput measured or estimated"), styles.heading3))
    for row in result.rows:
        if row.throughput is not None:
            story.append(
                pdf_paragraph(
                    _("%(name)s: %(throughput)s")
                    % {"name": row.option.name, "throughput": row.throughput.explanation},
                    styles.small,
                )
            )
    for row in result.rows:
        if row.problem:
            story.append(
                pdf_paragraph(
                    _("%(name)s: not compared — %(problem)s")
                    % {"name": row.option.name, "problem": row.problem},
                    styles.small,
                )
            )
    return story


def charts_section(result, styles: Styles) -> list:
    """On a page of its own: total cost per option, a hybrid's cost by baseline size, and
    the demand curve."""
    from reportlab.platypus import PageBreak

    scenario, currency = result.scenario, result.scenario.currency
    story = []
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
            _spacer(6),
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
        story += [
            _spacer(6),
            _line_chart(
                list(enumerate(result.demand.hourly_reference_gpus)),
                _("Demand per hour (reference GPUs)"),
                _("hour of the curve"),
                _("GPUs"),
            ),
        ]
    return story


def inputs_section(result, styles: Styles) -> list:
    """On a new page: the scenario's inputs, each in its own decimals, and the assumptions."""
    from reportlab.platypus import PageBreak

    specs = input_columns()
    shown = [[label, shown_input(value, places)] for label, value, places in input_rows(result)]
    return [
        PageBreak(),
        pdf_paragraph(_("Inputs"), styles.heading2),
        styles.table(specs, shown, [260, 460]),
        _spacer(4),
        pdf_paragraph(_("Assumptions and formulas"), styles.heading2),
        *[pdf_paragraph(f"• {assumption}", styles.small) for assumption in ASSUMPTIONS],
    ]


def option_inputs_section(result, styles: Styles) -> list:
    """What was typed on each option, transposed: one column per option fits a landscape
    page."""
    if not result.rows:
        return []
    specs = option_input_columns(result.scenario.currency)
    options = [row.option for row in result.rows]
    transposed_specs = [Column(_("Input"), lambda line: line[0])] + [
        Column(
            option.name,
            lambda line, index=index: line[index + 1],
            pdf_text=shown_input,
        )
        for index, option in enumerate(options)
    ]
    lines = [[spec.header] + [spec.value(option) for option in options] for spec in specs[1:]]
    return [
        _spacer(4),
        pdf_paragraph(_("Option inputs"), styles.heading2),
        styles.table(transposed_specs, lines, [170] + [550 / len(options)] * len(options)),
    ]


def prices_section(result, styles: Styles) -> list:
    """Every price each option was costed with and where it came from."""
    priced = price_rows(result)
    if not priced:
        return []
    return [
        _spacer(4),
        pdf_paragraph(_("Prices used"), styles.heading2),
        styles.table(price_columns(result.scenario.currency), priced, [140, 170, 70, 100, 240]),
    ]


SECTIONS = (
    title_section,
    comparison_section,
    charts_section,
    inputs_section,
    option_inputs_section,
    prices_section,
)


def build_pdf(result) -> bytes:
    buffer = io.BytesIO()
    document = pdf_landscape_document(
        buffer, title=_("%(name)s: procurement comparison") % {"name": result.scenario.name}
    )
    styles = Styles.build()
    document.build([flowable for section in SECTIONS for flowable in section(result, styles)])
    return buffer.getvalue()
