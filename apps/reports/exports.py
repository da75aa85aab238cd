"""The cost report as CSV or XLSX, units in every header, with the page's total row;
the XLSX also says how each figure is computed (apps/reports/cost/explain.py). The lendable
off-peak capacity as CSV. Both are written by apps/core/exports.py from the columns here.

Money is written as the page shows it (apps/core/money.py): amounts to the cent, unit
prices to 4 decimals, so the rows of a file add up to its total; where the rounded rows
do not, a rounding line above the total says by how much."""

from django.http import HttpResponse
from django.utils.functional import lazy
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from apps.core import money
from apps.core.exports import (
    XLSX_CONTENT_TYPE,
    CellType,
    Column,
    CsvFile,
    csv_table,
    headers,
    register,
    xlsx_bytes,
    xlsx_header,
    xlsx_row,
)
from apps.core.texts import rounding_label
from apps.currencies.codes import reporting_currency
from apps.reports.cost import explain
from apps.reports.forms import GROUP_BY_NOUNS

FORMATS = ("csv", "xlsx")
CENTS_FORMAT = "#,##0.00"
UNIT_PRICE_FORMAT = "#,##0.0000"


def _text(header, key):
    return Column.keyed(header, key, xlsx_format="@")


def _hours(header, key):
    return Column.keyed(header, key, CellType.DECIMAL, 1)


def _amount(header, key):
    return Column.keyed(header, key, CellType.MONEY, 2)


def _unit_price(header, key):
    return Column.keyed(header, key, CellType.MONEY, 4)


def _count(header, key):
    return Column.keyed(header, key, CellType.INTEGER)


def _cost_in_reporting_currency() -> str:
    return gettext("Cost in the reporting currency (%(currency)s)") % {
        "currency": reporting_currency()
    }


# The cost report's columns (rows are CostRow.as_dict()); the headers are in the language
# of the request that asks for the file.
COLUMNS = (
    _text(_("Key"), "key"),
    _text(pgettext_lazy("a report row", "Name"), "label"),
    _hours(_("Capacity (GPU-hours)"), "capacity_gpu_hours"),
    _hours(_("Measured capacity (GPU-hours)"), "measured_capacity_gpu_hours"),
    _hours(_("Unmeasured (GPU-hours)"), "unmeasured_gpu_hours"),
    _hours(_("Busy (GPU-hours)"), "busy_gpu_hours"),
    # Already a percentage (0–100), not a ratio.
    Column.keyed(_("Utilisation (%)"), "utilization_pct", CellType.DECIMAL, 1, xlsx_format="0.0"),
    _amount(_("Cost (USD)"), "cost_usd"),
    _amount(_("Unmeasured cost (USD)"), "unmeasured_cost_usd"),
    _amount(_("Idle cost (USD)"), "idle_cost_usd"),
    _unit_price(_("Cost per busy GPU-hour (USD)"), "cost_per_busy_gpu_hour_usd"),
    _count(_("Requests (count)"), "requests"),
    _unit_price(_("Cost per 1k requests (USD)"), "cost_per_1k_requests_usd"),
    _count(_("Tokens (count)"), "tokens"),
    _unit_price(_("Cost per 1M tokens (USD)"), "cost_per_1m_tokens_usd"),
    _hours(_("Lost to interruptions (GPU-hours)"), "lost_gpu_hours"),
    _hours(_("Effective training (GPU-hours)"), "effective_training_gpu_hours"),
    _text(_("Effective training from"), "effective_training_source"),
    _unit_price(
        _("Cost per effective training GPU-hour (USD)"), "cost_per_effective_training_gpu_hour_usd"
    ),
    _amount(_("Interruption cost (USD)"), "interruption_cost_usd"),
    # The cost in the installation's reporting currency, named in the header and in the
    # next column.
    _amount(lazy(_cost_in_reporting_currency, str)(), "cost"),
    _text(_("Currency"), "currency"),
    _text(_("Missing exchange rates"), "missing_exchange_rates"),
    # The slug of the row's cluster; empty for a row across clusters. Last, so that the
    # columns files had before clusters keep their places.
    _text(_("Cluster"), "cluster"),
)


def _filename(filters, extension):
    return (
        f"gpufleet-cost-by-{filters['group_by']}-{filters['start']:%Y%m%d}-"
        f"{filters['end']:%Y%m%d}.{extension}"
    )


SUMMED_KEYS = tuple(column.key for column in COLUMNS if column.number_format() == CENTS_FORMAT)


def _with_total(rows, total):
    """The rows and, as on the page, their total (its key left blank: a workload may be
    called "total")."""
    return [*rows, total] if total is not None else list(rows)


def _shown(values: dict) -> dict:
    """A row's figures as the page shows them: amounts to the cent, unit prices to 4
    decimals (Decimal); the rest as computed."""
    shown = dict(values)
    for column in COLUMNS:
        if column.number_format() == CENTS_FORMAT:
            shown[column.key] = money.to_cents(values[column.key])
        elif column.number_format() == UNIT_PRICE_FORMAT:
            shown[column.key] = money.to_unit_price(values[column.key])
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
    line = dict.fromkeys(column.key for column in COLUMNS)
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


def cost_report_csv(rows, total=None) -> str:
    return csv_table(
        COLUMNS,
        [[column.value(values) for column in COLUMNS] for _row, values in _lines(rows, total)],
    )


def _explain_number_format(unit: str) -> str:
    if unit in _EXPLAIN_NUMBER_FORMATS:
        return _EXPLAIN_NUMBER_FORMATS[unit]
    return "#,##0.0000" if unit.startswith("USD/") else "#,##0.00"


_EXPLAIN_NUMBER_FORMATS = {"USD": "#,##0.00", "%": "0.00", "requests": "#,##0", "tokens": "#,##0"}


def explain_columns(unit: str = "") -> list[Column]:
    """The explanation sheet's columns (rows are explain steps as dicts); a step's value is
    written in the number format of its unit."""
    return [
        _text(_("Key"), "key"),
        _text(pgettext_lazy("a report row", "Name"), "label"),
        _text(_("Figure"), "figure"),
        Column.keyed(_("Step"), "step", CellType.INTEGER, xlsx_format="0"),
        _text(_("Label"), "step_label"),
        _text(_("Computed as"), "expression"),
        Column.keyed(
            _("Value"), "value", CellType.DECIMAL, xlsx_format=_explain_number_format(unit)
        ),
        _text(_("Unit"), "unit"),
        _text(_("Note"), "note"),
    ]


def _explain_sheet(workbook, rows, total):
    """Every figure of every row, step by step: the numbers as numbers, the last step of
    each figure the figure itself."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    sheet = workbook.create_sheet(gettext("How each figure is computed"))
    xlsx_header(sheet, headers(explain_columns()), font=Font(bold=True))
    for row in _with_total(rows, total):
        key = "" if row is total else row.key
        for figure, steps in explain.explain_row(row).items():
            label = gettext(explain.FIGURES[figure][0])
            for number, step in enumerate(steps, start=1):
                specs = explain_columns(step.unit)
                line = {
                    "key": key,
                    "label": row.label,
                    "figure": label,
                    "step": number,
                    "step_label": step.label,
                    "expression": step.expression,
                    "value": step.value,
                    "unit": step.unit,
                    "note": step.note,
                }
                cells = xlsx_row(sheet, specs, [column.value(line) for column in specs])
                if number == len(steps):
                    cells[6].font = Font(bold=True)
    # The "Computed as" and "Label" columns are wide; the others hold short values.
    widths = {5: 36, 6: 90}
    for index in range(1, len(explain_columns()) + 1):
        sheet.column_dimensions[get_column_letter(index)].width = widths.get(index, 16)
    sheet.freeze_panes = "A2"


def cost_report_xlsx(rows, filters, total=None) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = gettext("Cost report")
    title = gettext("gpufleet cost report by %(group)s, UTC days %(start)s to %(end)s (included)")
    xlsx_row(
        sheet,
        None,
        [
            title
            % {
                "group": GROUP_BY_NOUNS[filters["group_by"]],
                "start": filters["start"],
                "end": filters["end"],
            }
        ],
    )
    if filters.get("cluster"):
        sheet["A1"].value += gettext(", cluster %(cluster)s") % {"cluster": filters["cluster"]}
    sheet["A1"].font = Font(bold=True, size=12)
    xlsx_header(sheet, headers(COLUMNS), font=Font(bold=True))
    for row, values in _lines(rows, total):
        cells = xlsx_row(sheet, COLUMNS, [column.value(values) for column in COLUMNS])
        if row is total:
            for cell in cells:
                cell.font = Font(bold=True)
    for index, column in enumerate(COLUMNS, start=1):
        letter = get_column_letter(index)
        sheet.column_dimensions[letter].width = max(12, min(40, len(str(column.header)) + 2))
    sheet.freeze_panes = "C3"
    _explain_sheet(workbook, rows, total)
    return xlsx_bytes(workbook)


def cost_report_response(rows, filters, export_format: str, total=None) -> HttpResponse:
    if export_format == "csv":
        response = HttpResponse(
            cost_report_csv(rows, total), content_type="text/csv; charset=utf-8"
        )
    else:
        response = HttpResponse(
            cost_report_xlsx(rows, filters, total),
            content_type=XLSX_CONTENT_TYPE,
        )
    response["Content-Disposition"] = f'attachment; filename="{_filename(filters, export_format)}"'
    return response


# --- the lendable off-peak capacity -------------------------------------------------------


def _round_or_blank(usd):
    """Six decimals; blank where the pool's exchange rate is missing (never its own
    currency's amount as dollars)."""
    return "" if usd is None else round(usd, 6)


def lendable_columns() -> list[Column]:
    """The lendable list's columns (rows are apps/reports/lending/capacity.py's ``Lendable``);
    dollars and prices to six decimals, as the page's sums are."""

    def largest(getter):
        return lambda row: getter(row.largest_window) if row.largest_window else ""

    return [
        Column(_("Pool"), lambda row: row.pool.name),
        Column(_("Time zone"), lambda row: row.zone_name),
        Column(_("GPUs"), lambda row: row.pool.gpu_count, CellType.INTEGER),
        Column(_("Safety margin (GPUs)"), lambda row: row.margin_gpus, CellType.INTEGER),
        Column(
            _("Price per GPU-hour (USD)"),
            lambda row: _round_or_blank(row.price_per_gpu_hour_usd),
            CellType.MONEY,
            6,
        ),
        Column(
            _("Lendable (GPU-hours per week)"),
            lambda row: row.lendable_gpu_hours_per_week,
            CellType.INTEGER,
        ),
        Column(
            _("Value (USD per week)"),
            lambda row: _round_or_blank(row.value_usd_per_week),
            CellType.MONEY,
            6,
        ),
        Column(_("Largest window (local)"), largest(lambda window: window.label)),
        Column(_("Largest window (GPUs)"), largest(lambda window: window.gpus), CellType.INTEGER),
        Column(
            _("Largest window (GPU-hours)"),
            largest(lambda window: window.gpu_hours),
            CellType.INTEGER,
        ),
        Column(
            _("Hours with too little data (of 168)"),
            lambda row: row.slots_without_data,
            CellType.INTEGER,
        ),
    ]


def lendable_csv(fleet) -> str:
    """One line per inference pool, then the fleet's total."""
    specs = lendable_columns()
    file = CsvFile()
    file.table(specs, [[column.value(row) for column in specs] for row in fleet.rows])
    total = dict.fromkeys(range(len(specs)), "")
    total.update(
        {
            0: gettext("Total"),
            2: fleet.gpu_count,
            5: fleet.lendable_gpu_hours_per_week,
            6: round(fleet.value_usd_per_week, 6),
        }
    )
    file.row(total.values())
    return file.text()


def lendable_response(fleet) -> HttpResponse:
    response = HttpResponse(lendable_csv(fleet), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="gpufleet-lendable.csv"'
    return response


register(
    "reports.cost",
    formats=FORMATS,
    tables=lambda: {"cost report": COLUMNS, "how each figure is computed": explain_columns()},
    module=__name__,
)
register(
    "reports.lendable",
    formats=("csv",),
    tables=lambda: {"lendable": lendable_columns()},
    module=__name__,
)
