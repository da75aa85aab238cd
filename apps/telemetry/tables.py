from django.utils.functional import lazy
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.core.tables import ListTable, cells
from apps.telemetry.models import ImportRun

cell = cells("telemetry/_import_cells.html")


# The header holds markup around a translated word: built when shown, in its language.
_when_header = lazy(
    lambda: format_html('{}<div class="small text-secondary">UTC</div>', gettext("When")),
    SafeString,
)


class ImportTable(ListTable):
    """Newest first unless a header says otherwise."""

    element_id = "imports"
    empty_template = "telemetry/_import_list_empty.html"

    run = cell("run", _("Import"), "pk")
    when = cell(
        "when",
        _when_header(),
        "created_at",
        "pk",
        attrs={"td": {"class": "text-nowrap"}},
    )
    who = cell("who", _("Who"))
    file = cell("file", _("File"), "filename", "pk", attrs={"td": {"class": "text-break"}})
    data = cell("data", _("Data"), "kind", "format", "pk")
    status = cell("status", _("Status"), "status", "pk")
    accepted = cell("accepted", _("Accepted"), "rows_accepted", "pk", end=True)
    duplicates = cell("duplicates", _("Duplicates"), "rows_duplicate", "pk", end=True)
    rejected = cell(
        "rejected",
        _("Rejected"),
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
    message = cell("message", _("Message"), attrs={"td": {"class": "small text-secondary"}})

    class Meta(ListTable.Meta):
        model = ImportRun
        fields = ()
        attrs = {**ListTable.Meta.attrs, "id": "import-table"}
        order_by = "-when"
