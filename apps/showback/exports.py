"""The showback as CSV or XLSX: a team's name is data, never a formula
(apps/core/exports.py). Costs are written to the cent; the fleet-wide file ends with the
fleet total and, when the rounded rows do not add up to it, a rounding line
(apps/core/money.py)."""

import csv
import io

from django.http import HttpResponse
from django.utils.translation import gettext
from openpyxl import Workbook
from openpyxl.styles import Font

from apps.core import money
from apps.core.exports import append_xlsx_row, csv_cell
from apps.core.texts import rounding_label

FORMATS = ("csv", "xlsx")


def _header():
    return [gettext("Team"), gettext("Slug"), gettext("Cost (USD)")]


def _lines(rows, total_usd=None):
    """(name, slug, USD) per row, the unattributed row's slug left blank; then, with a
    total, the rounding line if one is needed and the total, their slugs blank."""
    lines = [(row["name"], row["slug"] or "", money.to_cents(row["cost_usd"])) for row in rows]
    if total_usd is None:
        return lines
    rounding = money.rounding_line((row["cost_usd"] for row in rows), total_usd)
    if rounding is not None:
        lines.append((rounding_label(), "", rounding))
    lines.append((gettext("Fleet total"), "", money.to_cents(total_usd)))
    return lines


def showback_response(rows, *, month: str, extension: str, total_usd=None) -> HttpResponse:
    filename = f"gpufleet-showback-{month}.{extension}"
    if extension == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(_header())
        for line in _lines(rows, total_usd):
            writer.writerow([csv_cell(value) for value in line])
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    else:
        workbook = Workbook()
        sheet = workbook.active
        sheet.title = gettext("Showback")
        for cell in append_xlsx_row(sheet, _header()):
            cell.font = Font(bold=True)
        for line in _lines(rows, total_usd):
            cells = append_xlsx_row(sheet, line)
            cells[2].number_format = "#,##0.00"
        buffer = io.BytesIO()
        workbook.save(buffer)
        response = HttpResponse(
            buffer.getvalue(),
            content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
