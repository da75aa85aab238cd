"""The cost report as CSV or XLSX, units in every header."""

import csv
import io

from django.http import HttpResponse
from openpyxl import Workbook
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter

FORMATS = ("csv", "xlsx")

# (header with its unit, CostRow.as_dict() key, XLSX number format)
COLUMNS = (
    ("Key", "key", "@"),
    ("Name", "label", "@"),
    ("Capacity (GPU-hours)", "capacity_gpu_hours", "#,##0.0"),
    ("Measured capacity (GPU-hours)", "measured_capacity_gpu_hours", "#,##0.0"),
    ("Unmeasured (GPU-hours)", "unmeasured_gpu_hours", "#,##0.0"),
    ("Busy (GPU-hours)", "busy_gpu_hours", "#,##0.0"),
    ("Utilisation (%)", "utilization_pct", "0.0"),
    ("Cost (USD)", "cost_usd", "#,##0.00"),
    ("Unmeasured cost (USD)", "unmeasured_cost_usd", "#,##0.00"),
    ("Idle cost (USD)", "idle_cost_usd", "#,##0.00"),
    ("Cost per busy GPU-hour (USD)", "cost_per_busy_gpu_hour_usd", "#,##0.0000"),
    ("Requests (count)", "requests", "#,##0"),
    ("Cost per 1k requests (USD)", "cost_per_1k_requests_usd", "#,##0.0000"),
    ("Tokens (count)", "tokens", "#,##0"),
    ("Cost per 1M tokens (USD)", "cost_per_1m_tokens_usd", "#,##0.0000"),
    ("Lost to interruptions (GPU-hours)", "lost_gpu_hours", "#,##0.0"),
    ("Effective training (GPU-hours)", "effective_training_gpu_hours", "#,##0.0"),
    (
        "Cost per effective training GPU-hour (USD)",
        "cost_per_effective_training_gpu_hour_usd",
        "#,##0.0000",
    ),
    ("Interruption cost (USD)", "interruption_cost_usd", "#,##0.00"),
)


def _filename(filters, extension):
    return (
        f"gpufleet-cost-by-{filters['group_by']}-{filters['start']:%Y%m%d}-"
        f"{filters['end']:%Y%m%d}.{extension}"
    )


def cost_report_csv(rows) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([header for header, _, _ in COLUMNS])
    for row in rows:
        values = row.as_dict()
        writer.writerow(["" if values[key] is None else values[key] for _, key, _ in COLUMNS])
    return buffer.getvalue()


def cost_report_xlsx(rows, filters) -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Cost report"
    sheet.append(
        [
            f"gpufleet cost report by {filters['group_by']}, UTC days {filters['start']} to "
            f"{filters['end']} (included)"
        ]
    )
    sheet["A1"].font = Font(bold=True, size=12)
    sheet.append([header for header, _, _ in COLUMNS])
    for cell in sheet[2]:
        cell.font = Font(bold=True)
    for row in rows:
        values = row.as_dict()
        sheet.append([values[key] for _, key, _ in COLUMNS])
    for index, (header, _, number_format) in enumerate(COLUMNS, start=1):
        letter = get_column_letter(index)
        sheet.column_dimensions[letter].width = max(12, min(40, len(header) + 2))
        for cell in sheet[letter][2:]:
            cell.number_format = number_format
    sheet.freeze_panes = "C3"
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def cost_report_response(rows, filters, export_format: str) -> HttpResponse:
    if export_format == "csv":
        response = HttpResponse(cost_report_csv(rows), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(
            cost_report_xlsx(rows, filters),
            content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )
    response["Content-Disposition"] = f'attachment; filename="{_filename(filters, export_format)}"'
    return response
