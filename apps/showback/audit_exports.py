"""The audit bundle as XLSX (openpyxl) and PDF (reportlab), from one ``AuditBundle``.

One column spec per table (apps/core/exports.py's ``Column``) drives both files, so a
column has the same header (with its unit) and the same figure in each. Names, slugs and
notes are data: the core writers keep an XLSX cell a string, never a formula, and a PDF
cell escaped text, never markup (Chinese drawn with the vendored CJK fallback font). The
PDF is built section by section.

Money is written as shown (apps/core/money.py): amounts to the cent, unit prices to 4
decimals. A table whose rounded rows do not add up to its total (the pools to the team
total, the workloads to their sum, the summary's two parts to the team total) gets a
rounding line saying by how much.
"""

import io
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from django.http import HttpResponse
from django.utils.translation import gettext

from apps.backups.recovery_units import HOURS, MINUTES, number_in, page_units, unit_symbol
from apps.core import money
from apps.core.exports import (
    XLSX_CONTENT_TYPE,
    CellType,
    Column,
    pdf_grid,
    pdf_landscape_document,
    pdf_paragraph,
    pdf_table,
    register,
    rows_of,
    xlsx_bytes,
    xlsx_row,
    xlsx_table,
)
from apps.core.texts import rounding_label
from apps.reports.cost.rates import missing_text
from apps.showback.audit import AuditBundle

FORMATS = ("xlsx", "pdf")
USD_FORMAT = "#,##0.00"
COUNT_FORMAT = "#,##0"


def _when(value: datetime) -> str:
    return f"{value.astimezone(UTC):%Y-%m-%d %H:%M}"


def _yes_no(value: bool) -> str:
    return gettext("yes") if value else gettext("no")


def _source_label(source: str | None) -> str:
    return {"measured": gettext("measured"), "estimate": gettext("estimate")}.get(source, "")


def pool_columns() -> list[Column]:
    return [
        Column(gettext("Pool"), lambda pool: pool.name, pdf_width_mm=120),
        Column(gettext("Slug"), lambda pool: pool.slug or "", pdf_width_mm=60),
        Column(
            gettext("Cost (USD)"),
            lambda pool: money.to_cents(pool.cost_usd),
            CellType.MONEY,
            2,
            pdf_width_mm=35,
        ),
    ]


def workload_columns() -> list[Column]:
    return [
        Column(gettext("Workload"), lambda w: w.name, pdf_width_mm=36),
        Column(gettext("Pool"), lambda w: w.pool_name, pdf_width_mm=28),
        Column(gettext("Kind"), lambda w: w.kind, pdf_width_mm=22),
        Column(
            gettext("Cost (USD)"),
            lambda w: money.to_cents(w.cost_usd),
            CellType.MONEY,
            2,
            pdf_width_mm=24,
        ),
        Column(
            gettext("Requests (count)"), lambda w: w.requests, CellType.INTEGER, pdf_width_mm=24
        ),
        Column(gettext("Tokens (count)"), lambda w: w.tokens, CellType.INTEGER, pdf_width_mm=28),
        Column(
            gettext("Cost per 1k requests (USD)"),
            lambda w: money.to_unit_price(w.cost_per_1k_requests_usd),
            CellType.MONEY,
            4,
            pdf_width_mm=22,
        ),
        Column(
            gettext("Cost per 1M tokens (USD)"),
            lambda w: money.to_unit_price(w.cost_per_1m_tokens_usd),
            CellType.MONEY,
            4,
            pdf_width_mm=22,
        ),
        Column(
            gettext("Effective training (GPU-hours)"),
            lambda w: w.effective_training_gpu_hours,
            CellType.DECIMAL,
            2,
            pdf_width_mm=24,
        ),
        Column(
            gettext("Effective training from"),
            lambda w: _source_label(w.effective_training_source),
            pdf_width_mm=20,
        ),
        # Already a percentage (0–100), not a ratio.
        Column(
            gettext("Goodput (%)"),
            lambda w: w.goodput_pct,
            CellType.DECIMAL,
            1,
            xlsx_format="0.0",
            pdf_width_mm=18,
        ),
    ]


def drill_columns(rto_unit=None, rpo_unit=None) -> list[Column]:
    """The drills' columns; the XLSX keeps every duration in minutes, the PDF writes each
    RTO in one unit and each RPO in one unit, chosen as the backups pages choose them
    (apps/backups/recovery_units.py), the unit in the header."""

    def duration(header, seconds_of, unit):
        if unit is None:
            return Column(
                f"{header} ({gettext('minutes')})",
                lambda d: seconds_of(d) / 60,
                CellType.DECIMAL,
                1,
            )
        return Column(
            f"{header} ({unit_symbol(unit)})",
            seconds_of,
            CellType.DECIMAL,
            pdf_text=lambda seconds: number_in(seconds, unit),
            pdf_width_mm=20,
        )

    return [
        Column(gettext("Workload"), lambda d: d.workload_name, pdf_width_mm=38),
        Column(gettext("Started (UTC)"), lambda d: _when(d.started_at), pdf_width_mm=26),
        Column(gettext("Finished (UTC)"), lambda d: _when(d.finished_at), pdf_width_mm=26),
        duration(gettext("Actual RTO"), lambda d: d.actual_rto_seconds, rto_unit),
        duration(gettext("RTO target"), lambda d: d.rto_target_seconds, rto_unit),
        Column(gettext("RTO met"), lambda d: _yes_no(d.rto_met), pdf_width_mm=14),
        duration(gettext("Actual RPO"), lambda d: d.actual_rpo_seconds, rpo_unit),
        duration(gettext("RPO target"), lambda d: d.rpo_target_seconds, rpo_unit),
        Column(gettext("RPO met"), lambda d: _yes_no(d.rpo_met), pdf_width_mm=14),
        Column(gettext("Result"), lambda d: d.verdict_label, pdf_width_mm=20),
        Column(gettext("Notes"), lambda d: d.notes, pdf_width_mm=55),
    ]


# The column each table's rows are summed by: (pools, workloads).
POOL_COST_COLUMN = 2
WORKLOAD_COST_COLUMN = 3


def rounding_lines(bundle: AuditBundle) -> dict[str, Decimal | None]:
    """Each summed table's rounding line (None: its rows as shown add up)."""
    return {
        "pools": money.rounding_line((pool.cost_usd for pool in bundle.pools), bundle.total_usd),
        "workloads": money.rounding_line(
            (workload.cost_usd for workload in bundle.workloads), bundle.workloads_usd
        ),
        "summary": money.rounding_line(
            (bundle.workloads_usd, bundle.not_in_a_workload_usd), bundle.total_usd
        ),
    }


def rounding_row(columns: list[Column], cost_column: int, difference: Decimal) -> list:
    """A table's rounding line: its label in the first column, the difference under the
    cost."""
    row = [None] * len(columns)
    row[0] = rounding_label()
    row[cost_column] = difference
    return row


def summary_lines(bundle: AuditBundle) -> list[tuple[str, object, str | None]]:
    """(label with unit, value, XLSX number format) of the bundle's first sheet and the
    PDF's opening table."""
    summary_rounding = rounding_lines(bundle)["summary"]
    rounding = (
        [(f"{rounding_label()} (USD)", summary_rounding, USD_FORMAT)]
        if summary_rounding is not None
        else []
    )
    return [
        (gettext("Team"), bundle.team.name, None),
        (gettext("Team slug"), bundle.team.slug, None),
        (gettext("Month (UTC)"), bundle.month, None),
        (gettext("From (UTC)"), _when(bundle.start), None),
        (gettext("Until (UTC, excluded)"), _when(bundle.end), None),
        (
            gettext("Team total, as the showback (USD)"),
            money.to_cents(bundle.total_usd),
            USD_FORMAT,
        ),
        (
            gettext("Of which in the workloads below (USD)"),
            money.to_cents(bundle.workloads_usd),
            USD_FORMAT,
        ),
        (
            gettext("Of which no workload accounts for (USD)"),
            money.to_cents(bundle.not_in_a_workload_usd),
            USD_FORMAT,
        ),
        *rounding,
        *_reporting_lines(bundle),
        (gettext("Restore drills (count)"), len(bundle.drills), COUNT_FORMAT),
        (gettext("Restore drills passed (count)"), bundle.drills_passed, COUNT_FORMAT),
    ]


def _reporting_lines(bundle: AuditBundle) -> list[tuple[str, object, str | None]]:
    """The team's total in the reporting currency (the tables below stay in USD), and the
    exchange rates missing, whose amounts both totals leave out."""
    lines = [
        (
            gettext("Team total in the reporting currency (%(currency)s)")
            % {"currency": bundle.currency},
            money.to_cents(bundle.total),
            USD_FORMAT,
        )
    ]
    if bundle.missing_rates:
        missing = ", ".join(
            f"{item['currency']} {item['month']}" for item in missing_text(bundle.missing_rates)
        )
        lines.append((gettext("Missing exchange rates"), missing, None))
    return lines


def no_cost_sentence() -> str:
    return gettext("No cost recorded for this team in this month.")


def no_drills_sentence() -> str:
    return gettext("No restore drills in this month.")


def _filename(bundle: AuditBundle, extension: str) -> str:
    return f"gpufleet-audit-{bundle.team.slug}-{bundle.month}.{extension}"


# --- XLSX -------------------------------------------------------------------------------


def _table_rows(columns, items, rounding=None) -> list[list]:
    """The items' values and, with ``rounding`` ((cost column, difference)), the table's
    rounding line."""
    rows = rows_of(columns, items)
    if rounding is not None and rounding[1] is not None:
        rows.append(rounding_row(columns, *rounding))
    return rows


def _summary_columns(number_format: str | None) -> list[Column]:
    """A summary line: its label, and its value as money, a count or a text."""
    value_type = {USD_FORMAT: CellType.MONEY, COUNT_FORMAT: CellType.INTEGER}.get(
        number_format, CellType.TEXT
    )
    return [
        Column(gettext("Label"), lambda line: line[0]),
        Column(
            gettext("Value"),
            lambda line: line[1],
            value_type,
            2 if value_type == CellType.MONEY else None,
        ),
    ]


def build_xlsx(bundle: AuditBundle) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter

    workbook = Workbook()

    def table_sheet(sheet, columns, items, empty_sentence, rounding=None):
        """``rounding``: (cost column, difference) of the table's rounding line, if any."""
        xlsx_table(
            sheet,
            columns,
            _table_rows(columns, items, rounding),
            font=Font(bold=True),
            alignment=Alignment(wrap_text=True, vertical="top"),
        )
        if not items:
            xlsx_row(sheet, None, [empty_sentence])
        for index in range(1, len(columns) + 1):
            sheet.column_dimensions[get_column_letter(index)].width = 18
        sheet.freeze_panes = "A2"

    summary = workbook.active
    summary.title = gettext("Summary")
    for label, value, number_format in summary_lines(bundle):
        cells = xlsx_row(summary, _summary_columns(number_format), [label, value])
        cells[0].font = Font(bold=True)
    summary.column_dimensions["A"].width = 42
    summary.column_dimensions["B"].width = 30
    has_cost = bool(bundle.pools or bundle.workloads)
    if not has_cost:
        xlsx_row(summary, None, [no_cost_sentence()])
    roundings = rounding_lines(bundle)
    table_sheet(
        workbook.create_sheet(gettext("Pools")),
        pool_columns(),
        bundle.pools,
        no_cost_sentence(),
        (POOL_COST_COLUMN, roundings["pools"]),
    )
    table_sheet(
        workbook.create_sheet(gettext("Workloads")),
        workload_columns(),
        bundle.workloads,
        no_cost_sentence(),
        (WORKLOAD_COST_COLUMN, roundings["workloads"]),
    )
    table_sheet(
        workbook.create_sheet(gettext("Restore drills")),
        drill_columns(),
        bundle.drills,
        no_drills_sentence(),
    )
    return xlsx_bytes(workbook)


# --- PDF --------------------------------------------------------------------------------


@dataclass
class PdfStyles:
    """The document's paragraph styles and the grid every table shares."""

    title: object
    heading: object
    body: object
    text_cell: object
    number_cell: object
    header_cell: object
    grid: object

    @classmethod
    def build(cls) -> "PdfStyles":
        from reportlab.lib import colors
        from reportlab.lib.enums import TA_RIGHT
        from reportlab.lib.styles import getSampleStyleSheet

        sheet = getSampleStyleSheet()
        body = sheet["BodyText"].clone("audit_body", fontSize=9, leading=12)
        text_cell = body.clone("audit_text_cell", fontSize=7, leading=9)
        return cls(
            title=sheet["Title"],
            heading=sheet["Heading2"],
            body=body,
            text_cell=text_cell,
            number_cell=text_cell.clone("audit_number_cell", alignment=TA_RIGHT),
            header_cell=text_cell.clone("audit_header_cell", textColor=colors.white),
            grid=pdf_grid(),
        )

    def table(self, columns: list[Column], rows):
        """Each cell a Paragraph, so a long name wraps inside its column; figures read
        right-aligned."""
        return pdf_table(
            columns,
            rows,
            header_style=self.header_cell,
            text_style=self.text_cell,
            number_style=self.number_cell,
            table_style=self.grid,
            hAlign="LEFT",
        )


def _spacer(height_mm):
    from reportlab.lib.units import mm
    from reportlab.platypus import Spacer

    return Spacer(1, height_mm * mm)


def _title(bundle: AuditBundle) -> str:
    return gettext("Audit bundle: %(team)s, %(month)s") % {
        "team": bundle.team.name,
        "month": bundle.month,
    }


def summary_section(bundle: AuditBundle, styles: PdfStyles) -> list:
    """The title, what the figures are, and the summary's labels and values."""
    from reportlab.lib import colors
    from reportlab.lib.units import mm
    from reportlab.platypus import TableStyle

    lines = summary_lines(bundle)
    summary = pdf_table(
        # Each line its own type; every value reads left, beside its label.
        _summary_columns(None),
        [
            [label, _summary_columns(number_format)[1].text(value)]
            for label, value, number_format in lines
        ],
        header_style=styles.text_cell,
        text_style=styles.text_cell,
        number_style=styles.text_cell,
        table_style=TableStyle([("GRID", (0, 0), (-1, -1), 0.25, colors.grey)]),
        widths=[75 * mm, 70 * mm],
        header=False,
        hAlign="LEFT",
    )
    return [
        pdf_paragraph(_title(bundle), styles.title),
        pdf_paragraph(
            gettext(
                "Costs are the showback's and the cost report's for the month; goodput is "
                "measured from the training event logs; each drill is held to the targets "
                "it was recorded against. Generated %(when)s UTC by gpufleet."
            )
            % {"when": f"{datetime.now(UTC):%Y-%m-%d %H:%M}"},
            styles.body,
        ),
        _spacer(3),
        summary,
        _spacer(4),
    ]


def pools_section(bundle: AuditBundle, styles: PdfStyles) -> list:
    rounding = (POOL_COST_COLUMN, rounding_lines(bundle)["pools"])
    return [
        pdf_paragraph(gettext("Cost per pool"), styles.heading),
        styles.table(pool_columns(), _table_rows(pool_columns(), bundle.pools, rounding))
        if bundle.pools
        else pdf_paragraph(no_cost_sentence(), styles.body),
    ]


def workloads_section(bundle: AuditBundle, styles: PdfStyles) -> list:
    rounding = (WORKLOAD_COST_COLUMN, rounding_lines(bundle)["workloads"])
    columns = workload_columns()
    return [
        _spacer(4),
        pdf_paragraph(gettext("Workloads"), styles.heading),
        styles.table(columns, _table_rows(columns, bundle.workloads, rounding))
        if bundle.workloads
        else pdf_paragraph(no_cost_sentence(), styles.body),
        pdf_paragraph(
            gettext(
                "Effective training GPU-hours are measured from the event logs where they "
                "exist, else estimated as busy minus lost GPU-hours; cost per 1k requests "
                "and per 1M tokens is blank for a workload without requests."
            ),
            styles.text_cell,
        ),
    ]


def drills_section(bundle: AuditBundle, styles: PdfStyles) -> list:
    """Each drill's durations in one unit for RTO and one for RPO, as the backups pages
    choose them."""
    story = [_spacer(4), pdf_paragraph(gettext("Restore drills"), styles.heading)]
    if not bundle.drills:
        return [*story, pdf_paragraph(no_drills_sentence(), styles.body)]
    units = page_units(drills=bundle.drills)
    columns = drill_columns(units["rto_unit"], units["rpo_unit"])
    return [*story, styles.table(columns, rows_of(columns, bundle.drills))]


PDF_SECTIONS = (summary_section, pools_section, workloads_section, drills_section)


def build_pdf(bundle: AuditBundle) -> bytes:
    buffer = io.BytesIO()
    document = pdf_landscape_document(buffer, title=_title(bundle))
    styles = PdfStyles.build()
    document.build([flowable for section in PDF_SECTIONS for flowable in section(bundle, styles)])
    return buffer.getvalue()


def audit_response(bundle: AuditBundle, extension: str) -> HttpResponse:
    if extension == "xlsx":
        response = HttpResponse(build_xlsx(bundle), content_type=XLSX_CONTENT_TYPE)
    else:
        response = HttpResponse(build_pdf(bundle), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{_filename(bundle, extension)}"'
    return response


register(
    "showback.audit_bundle",
    formats=FORMATS,
    tables=lambda: {
        "pools": pool_columns(),
        "workloads": workload_columns(),
        "restore drills": drill_columns(),
        "restore drills (PDF)": drill_columns(HOURS, MINUTES),
    },
    module=__name__,
)
