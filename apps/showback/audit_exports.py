"""The audit bundle as XLSX (openpyxl) and PDF (reportlab), from one ``AuditBundle``.

One column spec per table drives both files, so a column has the same header (with its
unit) and the same figure in each. Names, slugs and notes are data: XLSX cells go through
``append_xlsx_row`` (a string, never a formula), PDF cells through ``pdf_paragraph``
(escaped, never markup; Chinese drawn with the vendored CJK fallback font,
apps/core/exports.py).

Money is written as shown (apps/core/money.py): amounts to the cent, unit prices to 4
decimals. A table whose rounded rows do not add up to its total (the pools to the team
total, the workloads to their sum, the summary's two parts to the team total) gets a
rounding line saying by how much.
"""

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from django.http import HttpResponse
from django.utils.translation import gettext

from apps.backups.recovery_units import number_in, page_units, unit_symbol
from apps.core import money
from apps.core.exports import append_xlsx_row, pdf_landscape_document, pdf_paragraph
from apps.core.texts import rounding_label
from apps.showback.audit import AuditBundle

FORMATS = ("xlsx", "pdf")
XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
USD_FORMAT = "#,##0.00"
USD_PER_UNIT_FORMAT = "#,##0.0000"
HOURS_FORMAT = "#,##0.00"
PCT_FORMAT = "0.0"
COUNT_FORMAT = "#,##0"
MINUTES_FORMAT = "#,##0.0"


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable  # row → number, text or None (blank)
    xlsx_format: str | None = None
    # value → the PDF's text; None: the value as text
    pdf_text: Callable | None = None
    pdf_width_mm: float = 20


def _usd(value) -> str:
    return "" if value is None else f"{value:,.2f}"


def _usd_per_unit(value) -> str:
    return "" if value is None else f"{value:,.4f}"


def _hours(value) -> str:
    return "" if value is None else f"{value:,.2f}"


def _pct(value) -> str:
    return "" if value is None else f"{value:,.1f}"


def _count(value) -> str:
    return f"{value:,}"


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
            USD_FORMAT,
            _usd,
            pdf_width_mm=35,
        ),
    ]


def workload_columns() -> list[Column]:
    return [
        Column(gettext("Workload"), lambda w: w.name, pdf_width_mm=36),
        Column(gettext("Pool"), lambda w: w.pool_name, pdf_width_mm=28),
        Column(gettext("Kind"), lambda w: w.kind, pdf_width_mm=22),
        Column(gettext("Cost (USD)"), lambda w: money.to_cents(w.cost_usd), USD_FORMAT, _usd, 24),
        Column(gettext("Requests (count)"), lambda w: w.requests, COUNT_FORMAT, _count, 24),
        Column(gettext("Tokens (count)"), lambda w: w.tokens, COUNT_FORMAT, _count, 28),
        Column(
            gettext("Cost per 1k requests (USD)"),
            lambda w: money.to_unit_price(w.cost_per_1k_requests_usd),
            USD_PER_UNIT_FORMAT,
            _usd_per_unit,
            22,
        ),
        Column(
            gettext("Cost per 1M tokens (USD)"),
            lambda w: money.to_unit_price(w.cost_per_1m_tokens_usd),
            USD_PER_UNIT_FORMAT,
            _usd_per_unit,
            22,
        ),
        Column(
            gettext("Effective training (GPU-hours)"),
            lambda w: w.effective_training_gpu_hours,
            HOURS_FORMAT,
            _hours,
            24,
        ),
        Column(
            gettext("Effective training from"),
            lambda w: _source_label(w.effective_training_source),
            pdf_width_mm=20,
        ),
        Column(gettext("Goodput (%)"), lambda w: w.goodput_pct, PCT_FORMAT, _pct, 18),
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
                MINUTES_FORMAT,
            )
        return Column(
            f"{header} ({unit_symbol(unit)})",
            seconds_of,
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
        (gettext("Restore drills (count)"), len(bundle.drills), COUNT_FORMAT),
        (gettext("Restore drills passed (count)"), bundle.drills_passed, COUNT_FORMAT),
    ]


def no_cost_sentence() -> str:
    return gettext("No cost recorded for this team in this month.")


def no_drills_sentence() -> str:
    return gettext("No restore drills in this month.")


def _filename(bundle: AuditBundle, extension: str) -> str:
    return f"gpufleet-audit-{bundle.team.slug}-{bundle.month}.{extension}"


# --- XLSX -------------------------------------------------------------------------------


def build_xlsx(bundle: AuditBundle) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter

    workbook = Workbook()

    def table_sheet(sheet, columns, items, empty_sentence, rounding=None):
        """``rounding``: (cost column, difference) of the table's rounding line, if any."""
        for cell in append_xlsx_row(sheet, [column.header for column in columns]):
            cell.font = Font(bold=True)
            cell.alignment = Alignment(wrap_text=True, vertical="top")
        values = [[column.value(item) for column in columns] for item in items]
        if rounding is not None and rounding[1] is not None:
            values.append(rounding_row(columns, *rounding))
        for row in values:
            cells = append_xlsx_row(sheet, row)
            for cell, column in zip(cells, columns, strict=True):
                if column.xlsx_format and isinstance(cell.value, int | float | Decimal):
                    cell.number_format = column.xlsx_format
        if not items:
            append_xlsx_row(sheet, [empty_sentence])
        for index in range(1, len(columns) + 1):
            sheet.column_dimensions[get_column_letter(index)].width = 18
        sheet.freeze_panes = "A2"

    summary = workbook.active
    summary.title = gettext("Summary")
    for label, value, number_format in summary_lines(bundle):
        cells = append_xlsx_row(summary, [label, value])
        cells[0].font = Font(bold=True)
        if number_format:
            cells[1].number_format = number_format
    summary.column_dimensions["A"].width = 42
    summary.column_dimensions["B"].width = 30
    has_cost = bool(bundle.pools or bundle.workloads)
    if not has_cost:
        append_xlsx_row(summary, [no_cost_sentence()])
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
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


# --- PDF --------------------------------------------------------------------------------


def _pdf_cells(columns: list[Column], item) -> list[str]:
    cells = []
    for column in columns:
        value = column.value(item)
        if column.pdf_text is not None and value is not None:
            cells.append(column.pdf_text(value))
        else:
            cells.append("" if value is None else str(value))
    return cells


def build_pdf(bundle: AuditBundle) -> bytes:
    from reportlab.lib import colors
    from reportlab.lib.enums import TA_RIGHT
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import mm
    from reportlab.platypus import Spacer, Table, TableStyle

    styles = getSampleStyleSheet()
    body = styles["BodyText"].clone("audit_body", fontSize=9, leading=12)
    text_cell = body.clone("audit_text_cell", fontSize=7, leading=9)
    number_cell = text_cell.clone("audit_number_cell", alignment=TA_RIGHT)
    header_cell = text_cell.clone("audit_header_cell", textColor=colors.white)
    title = gettext("Audit bundle: %(team)s, %(month)s") % {
        "team": bundle.team.name,
        "month": bundle.month,
    }
    buffer = io.BytesIO()
    document = pdf_landscape_document(buffer, title=title)
    grid = TableStyle(
        [
            ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#206BC4")),
            ("GRID", (0, 0), (-1, -1), 0.25, colors.grey),
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ]
    )

    def table(columns: list[Column], items, rounding=None) -> Table:
        """Each cell a Paragraph, so a long name wraps inside its column; figures (the
        columns with a number format) read right-aligned. ``rounding``: (cost column,
        difference) of the table's rounding line, if any."""
        header = [pdf_paragraph(column.header, header_cell) for column in columns]
        texts = [_pdf_cells(columns, item) for item in items]
        if rounding is not None and rounding[1] is not None:
            line = rounding_row(columns, *rounding)
            texts.append(["" if value is None else value for value in line])
            texts[-1][rounding[0]] = _usd(rounding[1])
        rows = [
            [
                pdf_paragraph(text, number_cell if column.pdf_text else text_cell)
                for text, column in zip(cells, columns, strict=True)
            ]
            for cells in texts
        ]
        built = Table(
            [header, *rows],
            colWidths=[column.pdf_width_mm * mm for column in columns],
            repeatRows=1,
            hAlign="LEFT",
        )
        built.setStyle(grid)
        return built

    roundings = rounding_lines(bundle)
    summary = Table(
        [
            [
                pdf_paragraph(label, text_cell),
                pdf_paragraph(_usd(value) if number_format == USD_FORMAT else value, text_cell),
            ]
            for label, value, number_format in summary_lines(bundle)
        ],
        colWidths=[75 * mm, 70 * mm],
        hAlign="LEFT",
    )
    summary.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.25, colors.grey)]))
    story = [
        pdf_paragraph(title, styles["Title"]),
        pdf_paragraph(
            gettext(
                "Costs are the showback's and the cost report's for the month; goodput is "
                "measured from the training event logs; each drill is held to the targets "
                "it was recorded against. Generated %(when)s UTC by gpufleet."
            )
            % {"when": f"{datetime.now(UTC):%Y-%m-%d %H:%M}"},
            body,
        ),
        Spacer(1, 3 * mm),
        summary,
        Spacer(1, 4 * mm),
        pdf_paragraph(gettext("Cost per pool"), styles["Heading2"]),
    ]
    story.append(
        table(pool_columns(), bundle.pools, (POOL_COST_COLUMN, roundings["pools"]))
        if bundle.pools
        else pdf_paragraph(no_cost_sentence(), body)
    )
    story += [Spacer(1, 4 * mm), pdf_paragraph(gettext("Workloads"), styles["Heading2"])]
    story.append(
        table(workload_columns(), bundle.workloads, (WORKLOAD_COST_COLUMN, roundings["workloads"]))
        if bundle.workloads
        else pdf_paragraph(no_cost_sentence(), body)
    )
    story += [
        pdf_paragraph(
            gettext(
                "Effective training GPU-hours are measured from the event logs where they "
                "exist, else estimated as busy minus lost GPU-hours; cost per 1k requests "
                "and per 1M tokens is blank for a workload without requests."
            ),
            text_cell,
        ),
        Spacer(1, 4 * mm),
        pdf_paragraph(gettext("Restore drills"), styles["Heading2"]),
    ]
    if bundle.drills:
        units = page_units(drills=bundle.drills)
        story.append(table(drill_columns(units["rto_unit"], units["rpo_unit"]), bundle.drills))
    else:
        story.append(pdf_paragraph(no_drills_sentence(), body))
    document.build(story)
    return buffer.getvalue()


def audit_response(bundle: AuditBundle, extension: str) -> HttpResponse:
    if extension == "xlsx":
        response = HttpResponse(build_xlsx(bundle), content_type=XLSX_CONTENT_TYPE)
    else:
        response = HttpResponse(build_pdf(bundle), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{_filename(bundle, extension)}"'
    return response
