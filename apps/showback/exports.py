"""The showback as CSV or XLSX, written by apps/core/exports.py: a team's name is data,
never a formula. Costs are written to the cent, in US dollars and in the reporting
currency (named in its header and its own column), with the exchange rates missing; the
fleet-wide file ends with the fleet total and, when the rounded rows do not add up to it,
a rounding line (apps/core/money.py)."""

from decimal import Decimal

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
from apps.currencies.codes import reporting_currency
from apps.reports.cost.rates import missing_text

FORMATS = ("csv", "xlsx")


def _cost_in_reporting_currency() -> str:
    return gettext("Cost in the reporting currency (%(currency)s)") % {
        "currency": reporting_currency()
    }


def columns() -> list[Column]:
    """(name, slug, USD, reporting currency, its code, missing rates) per line."""
    return [
        Column(gettext("Team"), lambda line: line[0]),
        Column(gettext("Slug"), lambda line: line[1]),
        Column(gettext("Cost (USD)"), lambda line: line[2], CellType.MONEY, 2),
        Column(_cost_in_reporting_currency(), lambda line: line[3], CellType.MONEY, 2),
        Column(gettext("Currency"), lambda line: line[4]),
        Column(gettext("Missing exchange rates"), lambda line: line[5]),
    ]


def _lines(rows, total_usd=None, total=None, missing_rates=()):
    """A line per row, the unattributed row's slug left blank; then, with a total, the
    rounding line if one is needed (in either currency) and the total, their slugs
    blank. Every line names the reporting currency and the rates missing, whose amounts
    the figures leave out."""
    currency = reporting_currency()
    missing = ", ".join(
        f"{item['currency']} {item['month']}" for item in missing_text(missing_rates)
    )
    lines = [
        (
            row["name"],
            row["slug"] or "",
            money.to_cents(row["cost_usd"]),
            money.to_cents(row["cost"]),
            currency,
            missing,
        )
        for row in rows
    ]
    if total_usd is None:
        return lines
    rounding_usd = money.rounding_line((row["cost_usd"] for row in rows), total_usd)
    rounding = money.rounding_line((row["cost"] for row in rows), total)
    if rounding_usd is not None or rounding is not None:
        lines.append(
            (
                rounding_label(),
                "",
                rounding_usd or Decimal("0.00"),
                rounding or Decimal("0.00"),
                currency,
                missing,
            )
        )
    lines.append(
        (
            gettext("Fleet total"),
            "",
            money.to_cents(total_usd),
            money.to_cents(total),
            currency,
            missing,
        )
    )
    return lines


def showback_csv(rows, total_usd=None, total=None, missing_rates=()) -> str:
    specs = columns()
    lines = _lines(rows, total_usd, total, missing_rates)
    return csv_table(specs, [[c.value(line) for c in specs] for line in lines])


def showback_xlsx(rows, total_usd=None, total=None, missing_rates=()) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = gettext("Showback")
    specs = columns()
    xlsx_table(
        sheet,
        specs,
        [[c.value(line) for c in specs] for line in _lines(rows, total_usd, total, missing_rates)],
        font=Font(bold=True),
    )
    return xlsx_bytes(workbook)


def showback_response(
    rows, *, month: str, extension: str, total_usd=None, total=None, missing_rates=()
) -> HttpResponse:
    filename = f"gpufleet-showback-{month}.{extension}"
    figures = (rows, total_usd, total, missing_rates)
    if extension == "csv":
        response = HttpResponse(showback_csv(*figures), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(showback_xlsx(*figures), content_type=XLSX_CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


register("showback", formats=FORMATS, tables=lambda: {"showback": columns()}, module=__name__)
