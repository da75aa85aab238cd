"""The comparison as CSV and XLSX (openpyxl), written by apps/core/exports.py from the
columns of content.py."""

import dataclasses
from decimal import Decimal

from django.utils.translation import gettext as _

from apps.core.bounds import plain
from apps.core.exports import (
    CellType,
    Column,
    CsvFile,
    xlsx_bytes,
    xlsx_header,
    xlsx_row,
    xlsx_table,
)
from apps.procurement.exports.content import (
    ASSUMPTIONS,
    columns,
    comparison_table,
    generated_line,
    input_columns,
    input_rows,
    option_input_columns,
    price_columns,
    price_rows,
    recommendation,
    what_if_sentence,
)

# --- CSV --------------------------------------------------------------------------------


def csv_number(value):
    """Plain numbers (a decimal point, no thousands separators), as the forms take them."""
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, Decimal):
        return plain(value)
    return value


def build_csv(result) -> bytes:
    file = CsvFile(numbers=csv_number)
    _headers, rows = comparison_table(result)
    # A CSV has no number format: its percentages are the ratios they are stored as.
    specs = [
        dataclasses.replace(column, header=str(column.header).replace("(%)", _("(ratio)")))
        for column in columns(result.scenario.currency)
    ]
    file.table(specs, rows)
    file.row()
    file.row([_("Recommendation"), recommendation(result)])
    file.row([_("What-if"), what_if_sentence(result)])
    for label, value, _places in input_rows(result):
        file.row([label, value])
    file.row()
    file.table(price_columns(result.scenario.currency), price_rows(result))
    return file.bytes(bom=True)  # the BOM lets Excel read UTF-8


# --- XLSX -------------------------------------------------------------------------------


def build_xlsx(result) -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    comparison_sheet(workbook.active, result)
    inputs_sheet(workbook.create_sheet(_("Inputs & assumptions")), result)
    prices_sheet(workbook.create_sheet(_("Prices used")), result)
    demand_sheet(workbook.create_sheet(_("Demand curve")), result)
    return xlsx_bytes(workbook)


def _header_style() -> dict:
    from openpyxl.styles import Alignment, Font, PatternFill

    return {
        "font": Font(bold=True, color="FFFFFF"),
        "fill": PatternFill("solid", fgColor="206BC4"),
        "alignment": Alignment(wrap_text=True, vertical="top"),
    }


def _table(sheet, specs, rows, row=1) -> int:
    """A table with the blue header; the panes freeze below the header, right of the first
    column. Returns the last row written."""
    last = xlsx_table(sheet, specs, rows, row=row, **_header_style())
    sheet.freeze_panes = f"B{row + 1}"
    return last


def _widths(sheet, width_by_column):
    from openpyxl.utils import get_column_letter

    for column, width in width_by_column.items():
        sheet.column_dimensions[get_column_letter(column)].width = width


def comparison_sheet(sheet, result) -> None:
    """One row per option, the figures as numbers in the page's formats; then the
    recommendation and what the file shows."""
    from openpyxl.styles import Font

    sheet.title = _("Comparison")
    specs = columns(result.scenario.currency)
    _headers, rows = comparison_table(result)
    _table(sheet, specs, rows)
    count = len(specs)
    _widths(sheet, {1: 34, **{column: 16 for column in range(2, count)}, count: 60})
    sheet.row_dimensions[1].height = 45
    summary_row = len(rows) + 3
    cells = xlsx_row(sheet, None, [_("Recommendation"), recommendation(result)], row=summary_row)
    cells[0].font = Font(bold=True)
    xlsx_row(sheet, None, [what_if_sentence(result)], row=summary_row + 1)
    xlsx_row(sheet, None, [generated_line()], row=summary_row + 2)


def inputs_sheet(sheet, result) -> None:
    """The scenario's inputs (each number in its own decimals), the inputs of each option
    and the assumptions."""
    from openpyxl.styles import Font

    xlsx_header(sheet, [_("Input (unit)"), _("Value")], row=1, **_header_style())
    line = 1
    for label, value, places in input_rows(result):
        line += 1
        xlsx_row(sheet, input_columns(places), [label, value], row=line)
    line += 2
    option_specs = option_input_columns(result.scenario.currency)
    line = _table(sheet, option_specs, [], row=line)
    sheet.freeze_panes = "A2"
    for option_row in result.rows:
        line += 1
        xlsx_row(
            sheet, option_specs, [spec.value(option_row.option) for spec in option_specs], row=line
        )
    line += 2
    xlsx_row(sheet, None, [_("Assumptions and formulas")], row=line)[0].font = Font(bold=True)
    for assumption in ASSUMPTIONS:
        line += 1
        xlsx_row(sheet, None, [str(assumption)], row=line)
    _widths(sheet, {1: 48, 2: 40, **{column: 18 for column in range(3, len(option_specs) + 1)}})


def prices_sheet(sheet, result) -> None:
    _table(
        sheet, price_columns(result.scenario.currency, value_header_unit=True), price_rows(result)
    )
    _widths(sheet, {1: 34, 2: 44, 3: 16, 4: 22, 5: 70})


def demand_sheet(sheet, result) -> None:
    """The demand hour by hour and the GPUs each costed option needs in that hour."""
    times = result.info.hourly_times
    option_results = [(row.option.name, row.result) for row in result.rows if row.result]
    specs = [
        # The hour, or the hour's index in an entered profile.
        Column(
            _("Hour (UTC)"),
            lambda hour: hour[0],
            CellType.DATETIME if times else CellType.INTEGER,
            xlsx_format=None if times else "General",
        ),
        Column(
            _("Demand (reference GPUs)"),
            lambda hour: round(hour[1], 4),
            CellType.DECIMAL,
            2,
            xlsx_format="0.00",
        ),
    ] + [
        Column(
            _("%(name)s: GPUs needed (GPUs)") % {"name": name},
            lambda hour, option_result=option_result: option_result.gpus_needed_by_hour[hour[2]],
            CellType.INTEGER,
        )
        for name, option_result in option_results
    ]
    hours = []
    if result.demand is not None:
        for index, value in enumerate(result.demand.hourly_reference_gpus):
            hour = times[index].replace(tzinfo=None) if index < len(times) else index
            hours.append((hour, value, index))
    _table(sheet, specs, [[spec.value(hour) for spec in specs] for hour in hours])
    _widths(sheet, {column: 20 for column in range(1, len(specs) + 1)})
