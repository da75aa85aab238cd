"""The weekly efficiency report as CSV, written by apps/core/exports.py: a user's, an
account's or a team's name is data, never a formula. GPU-hours to 0.000001, the idle cost
to the cent in US dollars, the busy ratio as a ratio (0.42)."""

from django.http import HttpResponse
from django.utils.translation import gettext

from apps.core.exports import CellType, Column, csv_table, register, rows_of

FORMATS = ("csv",)
GROUPS = ("user", "account", "team", "job")


def _figure_columns() -> list[Column]:
    hours = CellType.DECIMAL
    return [
        Column.keyed(gettext("Jobs"), "jobs", CellType.INTEGER),
        Column.keyed(gettext("Allocated (GPU-h)"), "allocated_gpu_hours", hours, 6),
        Column.keyed(gettext("Measured (GPU-h)"), "measured_gpu_hours", hours, 6),
        Column.keyed(gettext("Busy (GPU-h)"), "busy_gpu_hours", hours, 6),
        Column.keyed(gettext("Idle (GPU-h)"), "idle_gpu_hours", hours, 6),
        Column.keyed(gettext("Unmeasured (GPU-h)"), "unmeasured_gpu_hours", hours, 6),
        Column.keyed(gettext("Busy ratio of measured"), "busy_ratio", CellType.PERCENT, 1),
        Column.keyed(gettext("Idle cost (USD)"), "idle_cost_usd", CellType.MONEY, 2),
        Column.keyed(gettext("Idle without a price (GPU-h)"), "unpriced_idle_gpu_hours", hours, 6),
    ]


def group_columns(group: str) -> list[Column]:
    """The columns of the rows grouped by ``group`` (one of ``GROUPS``)."""
    if group == "job":
        return [
            Column.keyed(gettext("Job"), "job_id"),
            Column.keyed(gettext("Cluster"), "cluster"),
            Column.keyed(gettext("User"), "user"),
            Column.keyed(gettext("Account"), "account"),
            Column.keyed(gettext("Team"), "team"),
            Column.keyed(gettext("Start"), "start", CellType.DATETIME),
            Column.keyed(gettext("End"), "end", CellType.DATETIME),
            Column.keyed(gettext("GPUs"), "gpus", CellType.INTEGER),
            *_figure_columns(),
        ]
    if group == "team":
        return [Column.keyed(gettext("Team"), "name"), *_figure_columns()]
    header = {"user": gettext("User"), "account": gettext("Account")}
    # A Slurm user or account is its cluster's: the cluster tells two alices apart.
    return [
        Column.keyed(header[group], "name"),
        Column.keyed(gettext("Cluster"), "cluster"),
        *_figure_columns(),
    ]


def efficiency_csv(rows, group: str) -> str:
    specs = group_columns(group)
    return csv_table(specs, rows_of(specs, rows))


def efficiency_response(rows, *, group: str, week: str) -> HttpResponse:
    response = HttpResponse(efficiency_csv(rows, group), content_type="text/csv; charset=utf-8")
    filename = f"gpufleet-slurm-efficiency-{group}-{week}.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


register(
    "slurm-efficiency",
    formats=FORMATS,
    tables=lambda: {group: group_columns(group) for group in GROUPS},
    module=__name__,
)
