"""The cost report as CSV or XLSX, units in every header, with the page's total row;
the XLSX also says how each figure is computed (apps/reports/cost/explain.py).

Money is written as the page shows it (apps/core/money.py): amounts to the cent, unit
prices to 4 decimals, so the rows of a file add up to its total; where the rounded rows
do not, a rounding line above the total says by how much."""

import csv
import io

from django.http import HttpResponse
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _
from openpyxl import Workbook
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter

from apps.core import money
from apps.core.exports import append_xlsx_row, csv_cell
from apps.core.texts import rounding_label
from apps.reports.cost import explain
from apps.reports.forms import GROUP_BY_NOUNS

FORMATS = ("csv", "xlsx")
# Hours and percentages in the CSV carry six decimals: far below a GPU-second, and free
# of the binary noise of a sum (1199.9999999999998).
CSV_DECIMALS = 6
CENTS_FORMAT = "#,##0.00"
UNIT_PRICE_FORMAT = "#,##0.0000"

# (header with its unit, CostRow.as_dict() key, XLSX number format); the headers are in
# the language of the request that asks for the file.
COLUMNS = (
    (_("Key"), "key", "@"),
    (pgettext_lazy("a report row", "Name"), "label", "@"),
    (_("Capacity (GPU-hours)"), "capacity_gpu_hours", "#,##0.0"),
    (_("Measured capacity (GPU-hours)"), "measured_capacity_gpu_hours", "#,##0.0"),
    (_("Unmeasured (GPU-hours)"), "unmeasured_gpu_hours", "#,##0.0"),
    (_("Busy (GPU-hours)"), "busy_gpu_hours", "#,##0.0"),
    (_("Utilisation (%)"), "utilization_pct", "0.0"),
    (_("Cost (USD)"), "cost_usd", CENTS_FORMAT),
    (_("Unmeasured cost (USD)"), "unmeasured_cost_usd", CENTS_FORMAT),
    (_("Idle cost (USD)"), "idle_cost_usd", CENTS_FORMAT),
    (_("Cost per busy GPU-hour (USD)"), "cost_per_busy_gpu_hour_usd", UNIT_PRICE_FORMAT),
    (_("Requests (count)"), "requests", "#,##0"),
    (_("Cost per 1k requests (USD)"), "cost_per_1k_requests_usd", UNIT_PRICE_FORMAT),
    (_("Tokens (count)"), "tokens", "#,##0"),
    (_("Cost per 1M tokens (USD)"), "cost_per_1m_tokens_usd", UNIT_PRICE_FORMAT),
    (_("Lost to interruptions (GPU-hours)"), "lost_gpu_hours", "#,##0.0"),
    (_("Effective training (GPU-hours)"), "effective_training_gpu_hours", "#,##0.0"),
    (_("Effective training from"), "effective_training_source", "@"),
    (
        _("Cost per effective training GPU-hour (USD)"),
        "cost_per_effective_training_gpu_hour_usd",
        UNIT_PRICE_FORMAT,
    ),
    (_("Interruption cost (USD)"), "interruption_cost_usd", CENTS_FORMAT),
)


def _filename(filters, extension):
    return (
        f"gpufleet-cost-by-{filters['group_by']}-{filters['start']:%Y%m%d}-"
        f"{filters['end']:%Y%m%d}.{extension}"
    )


SUMMED_KEYS = tuple(key for _header, key, number_format in COLUMNS if number_format == CENTS_FORMAT)


def _with_total(rows, total):
    """The rows and, as on the page, their total (its key left blank: a workload may be
    called "total")."""
    return [*rows, total] if total is not None else list(rows)


def _shown(values: dict) -> dict:
    """A row's figures as the page shows them: amounts to the cent, unit prices to 4
    decimals (Decimal); the rest as computed."""
    shown = dict(values)
    for _header, key, number_format in COLUMNS:
        if number_format == CENTS_FORMAT:
            shown[key] = money.to_cents(values[key])
        elif number_format == UNIT_PRICE_FORMAT:
            shown[key] = money.to_unit_price(values[key])
    return shown


def rounding_values(rows, total) -> dict | None:
    """The rounding line (apps/core/money.py) of each summed amount, None when the
    rounded rows add up to the rounded total in every column."""
    if total is None:
        return None
    row_values = [row.as_dict() for row in rows]
    total_values = total.as_dict()
    differences = {
        key: money.rounding_line((values[key] for values in row_values), total_values[key])
        for key in SUMMED_KEYS
    }
    if not any(differences.values()):
        return None
    line = dict.fromkeys(key for _header, key, _format in COLUMNS)
    line.update(key="", label=rounding_label())
    line.update({key: difference or money.to_cents(0) for key, difference in differences.items()})
    return line


def _lines(rows, total) -> list[tuple[object, dict]]:
    """(row, its figures as shown) for each line of a file: the rows, the rounding line
    (row None) if one is needed, and the total."""
    lines = [(row, _shown(row.as_dict())) for row in rows]
    rounding = rounding_values(rows, total)
    if rounding is not None:
        lines.append((None, rounding))
    if total is not None:
        lines.append((total, {**_shown(total.as_dict()), "key": ""}))
    return lines


def _csv_value(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return round(value, CSV_DECIMALS)
    return csv_cell(value)


def cost_report_csv(rows, total=None) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([str(header) for header, _key, _format in COLUMNS])
    for _row, values in _lines(rows, total):
        writer.writerow([_csv_value(values[key]) for _header, key, _format in COLUMNS])
    return buffer.getvalue()


# The explanation sheet: (header, XLSX number format).
EXPLAIN_COLUMNS = (
    (_("Key"), "@"),
    (pgettext_lazy("a report row", "Name"), "@"),
    (_("Figure"), "@"),
    (_("Step"), "0"),
    (_("Label"), "@"),
    (_("Computed as"), "@"),
    (_("Value"), None),
    (_("Unit"), "@"),
    (_("Note"), "@"),
)
_EXPLAIN_NUMBER_FORMATS = {"USD": "#,##0.00", "%": "0.00", "requests": "#,##0", "tokens": "#,##0"}


def _explain_number_format(unit: str) -> str:
    if unit in _EXPLAIN_NUMBER_FORMATS:
        return _EXPLAIN_NUMBER_FORMATS[unit]
    return "#,##0.0000" if unit.startswith("USD/") else "#,##0.00"


def _explain_sheet(workbook, rows, total):
    """Every figure of every row, step by step: the numbers as numbers, the last step of
    each figure the figure itself."""
    sheet = workbook.create_sheet(gettext("How each figure is computed"))
    append_xlsx_row(sheet, [str(header) for header, _format in EXPLAIN_COLUMNS])
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    for row in _with_total(rows, total):
        key = "" if row is total else row.key
        for figure, steps in explain.explain_row(row).items():
            label = gettext(explain.FIGURES[figure][0])
            for number, step in enumerate(steps, start=1):
                append_xlsx_row(
                    sheet,
                    [key, row.label, label, number, step.label, step.expression]
                    + [step.value, step.unit, step.note],
                )
                value_cell = sheet.cell(row=sheet.max_row, column=7)
                value_cell.number_format = _explain_number_format(step.unit)
                if number == len(steps):
                    value_cell.font = Font(bold=True)
    # The "Computed as" and "Label" columns are wide; the others hold short values.
    widths = {5: 36, 6: 90}
    for index, (_header, number_format) in enumerate(EXPLAIN_COLUMNS, start=1):
        letter = get_column_letter(index)
        sheet.column_dimensions[letter].width = widths.get(index, 16)
        if number_format:
            for cell in sheet[letter][1:]:
                cell.number_format = number_format
    sheet.freeze_panes = "A2"


def cost_report_xlsx(rows, filters, total=None) -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = gettext("Cost report")
    title = gettext("gpufleet cost report by %(group)s, UTC days %(start)s to %(end)s (included)")
    append_xlsx_row(
        sheet,
        [
            title
            % {
                "group": GROUP_BY_NOUNS[filters["group_by"]],
                "start": filters["start"],
                "end": filters["end"],
            }
        ],
    )
    sheet["A1"].font = Font(bold=True, size=12)
    append_xlsx_row(sheet, [str(header) for header, _key, _format in COLUMNS])
    for cell in sheet[2]:
        cell.font = Font(bold=True)
    for row, values in _lines(rows, total):
        append_xlsx_row(sheet, [values[key] for _header, key, _format in COLUMNS])
        if row is total:
            for cell in sheet[sheet.max_row]:
                cell.font = Font(bold=True)
    for index, (header, _key, number_format) in enumerate(COLUMNS, start=1):
        letter = get_column_letter(index)
        sheet.column_dimensions[letter].width = max(12, min(40, len(str(header)) + 2))
        for cell in sheet[letter][2:]:
            cell.number_format = number_format
    sheet.freeze_panes = "C3"
    _explain_sheet(workbook, rows, total)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def cost_report_response(rows, filters, export_format: str, total=None) -> HttpResponse:
    if export_format == "csv":
        response = HttpResponse(
            cost_report_csv(rows, total), content_type="text/csv; charset=utf-8"
        )
    else:
        response = HttpResponse(
            cost_report_xlsx(rows, filters, total),
            content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )
    response["Content-Disposition"] = f'attachment; filename="{_filename(filters, export_format)}"'
    return response
