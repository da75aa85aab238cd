"""The showback as CSV or XLSX, written by apps/core/exports.py: a team's name is data,
never a formula. Costs are written to the cent; the fleet-wide file ends with the fleet
total and, when the rounded rows do not add up to it, a rounding line
(apps/core/money.py)."""

from django.http import HttpResponse
from django.utils.translation import gettext

from apps.core import money
from apps.core.exports import (
    XLSX_CONTENT_TYPE,
    CellType,
    Column,
    csv_table,
    register,
    xlsx_bytes,
    xlsx_table,
)
from apps.core.texts import rounding_label

FORMATS = ("csv", "xlsx")


def columns() -> list[Column]:
    """(name, slug, USD) per line."""
    return [
        Column(gettext("Team"), lambda line: line[0]),
        Column(gettext("Slug"), lambda line: line[1]),
        Column(gettext("Cost (USD)"), lambda line: line[2], CellType.MONEY, 2),
    ]


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


def showback_csv(rows, total_usd=None) -> str:
    specs = columns()
    return csv_table(specs, [[c.value(line) for c in specs] for line in _lines(rows, total_usd)])


def showback_xlsx(rows, total_usd=None) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = gettext("Showback")
    specs = columns()
    xlsx_table(
        sheet,
        specs,
        [[c.value(line) for c in specs] for line in _lines(rows, total_usd)],
        font=Font(bold=True),
    )
    return xlsx_bytes(workbook)


def showback_response(rows, *, month: str, extension: str, total_usd=None) -> HttpResponse:
    filename = f"gpufleet-showback-{month}.{extension}"
    if extension == "csv":
        response = HttpResponse(
            showback_csv(rows, total_usd), content_type="text/csv; charset=utf-8"
        )
    else:
        response = HttpResponse(showback_xlsx(rows, total_usd), content_type=XLSX_CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


register("showback", formats=FORMATS, tables=lambda: {"showback": columns()}, module=__name__)
