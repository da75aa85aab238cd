from django.utils.safestring import mark_safe

from apps.core.tables import CellColumn, ListTable
from apps.telemetry.models import ImportRun

END = {"th": {"class": "text-end"}, "td": {"class": "text-end"}}


class ImportTable(ListTable):
    """Newest first unless a header says otherwise."""

    element_id = "imports"
    empty_template = "telemetry/_import_list_empty.html"

    run = CellColumn(
        "telemetry/_import_cells.html#run",
        verbose_name="Import",
        order_by=("pk",),
    )
    when = CellColumn(
        "telemetry/_import_cells.html#when",
        verbose_name=mark_safe('When<div class="small text-secondary">UTC</div>'),  # noqa: S308
        order_by=("created_at", "pk"),
        attrs={"td": {"class": "text-nowrap"}},
    )
    who = CellColumn(
        "telemetry/_import_cells.html#who",
        verbose_name="Who",
        orderable=False,
    )
    file = CellColumn(
        "telemetry/_import_cells.html#file",
        verbose_name="File",
        order_by=("filename", "pk"),
        attrs={"td": {"class": "text-break"}},
    )
    data = CellColumn(
        "telemetry/_import_cells.html#data",
        verbose_name="Data",
        order_by=("kind", "format", "pk"),
    )
    status = CellColumn(
        "telemetry/_import_cells.html#status",
        verbose_name="Status",
        order_by=("status", "pk"),
    )
    accepted = CellColumn(
        "telemetry/_import_cells.html#accepted",
        verbose_name="Accepted",
        order_by=("rows_accepted", "pk"),
        attrs=END,
    )
    duplicates = CellColumn(
        "telemetry/_import_cells.html#duplicates",
        verbose_name="Duplicates",
        order_by=("rows_duplicate", "pk"),
        attrs=END,
    )
    rejected = CellColumn(
        "telemetry/_import_cells.html#rejected",
        verbose_name="Rejected",
        order_by=("rows_rejected", "pk"),
        attrs={
            "th": {"class": "text-end"},
            "td": {
                "class": lambda record: (
                    "text-end text-danger" if record.rows_rejected else "text-end"
                )
            },
        },
    )
    message = CellColumn(
        "telemetry/_import_cells.html#message",
        verbose_name="Message",
        orderable=False,
        attrs={"td": {"class": "small text-secondary"}},
    )

    class Meta(ListTable.Meta):
        model = ImportRun
        fields = ()
        attrs = {**ListTable.Meta.attrs, "id": "import-table"}
        order_by = "-when"
