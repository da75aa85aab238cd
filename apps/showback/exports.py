"""The showback as CSV or XLSX: a team's name is data, never a formula
(apps/core/exports.py)."""

import csv
import io

from django.http import HttpResponse
from django.utils.translation import gettext
from openpyxl import Workbook
from openpyxl.styles import Font

from apps.core.exports import append_xlsx_row, csv_cell

FORMATS = ("csv", "xlsx")


def _header():
    return [gettext("Team"), gettext("Slug"), gettext("Cost (USD)")]


def _lines(rows):
    """(name, slug, USD) per row, the unattributed row's slug left blank."""
    return [(row["name"], row["slug"] or "", round(row["cost_usd"], 6)) for row in rows]


def showback_response(rows, *, month: str, extension: str) -> HttpResponse:
    filename = f"gpufleet-showback-{month}.{extension}"
    if extension == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(_header())
        for line in _lines(rows):
            writer.writerow([csv_cell(value) for value in line])
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    else:
        workbook = Workbook()
        sheet = workbook.active
        sheet.title = gettext("Showback")
        for cell in append_xlsx_row(sheet, _header()):
            cell.font = Font(bold=True)
        for line in _lines(rows):
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
