from django.utils.safestring import mark_safe

from apps.core.tables import ListTable, cells
from apps.telemetry.models import ImportRun

cell = cells("telemetry/_import_cells.html")


class ImportTable(ListTable):
    """Newest first unless a header says otherwise."""

    element_id = "imports"
    empty_template = "telemetry/_import_list_empty.html"

    run = cell("run", "Import", "pk")
    when = cell(
        "when",
        mark_safe('When<div class="small text-secondary">UTC</div>'),  # noqa: S308
        "created_at",
        "pk",
        attrs={"td": {"class": "text-nowrap"}},
    )
    who = cell("who", "Who")
    file = cell("file", "File", "filename", "pk", attrs={"td": {"class": "text-break"}})
    data = cell("data", "Data", "kind", "format", "pk")
    status = cell("status", "Status", "status", "pk")
    accepted = cell("accepted", "Accepted", "rows_accepted", "pk", end=True)
    duplicates = cell("duplicates", "Duplicates", "rows_duplicate", "pk", end=True)
    rejected = cell(
        "rejected",
        "Rejected",
        "rows_rejected",
        "pk",
        attrs={
            "th": {"class": "text-end"},
            "td": {
                "class": lambda record: (
                    "text-end text-danger" if record.rows_rejected else "text-end"
                )
            },
        },
    )
    message = cell("message", "Message", attrs={"td": {"class": "small text-secondary"}})

    class Meta(ListTable.Meta):
        model = ImportRun
        fields = ()
        attrs = {**ListTable.Meta.attrs, "id": "import-table"}
        order_by = "-when"
