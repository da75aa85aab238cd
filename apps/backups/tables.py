from django.utils.translation import gettext_lazy as _

from apps.backups.models import BackupPolicy
from apps.core.tables import ListTable, cells

cell = cells("backups/_policy_cells.html")


class PolicyTable(ListTable):
    """Unsorted, the list keeps the queryset's ranking (``ranked_by_risk``): attention
    first, then risk. "What is missing" is ``record.coverage_assessment``, computed in
    Python by the view for the page's rows."""

    element_id = "policies"
    empty_template = "backups/_policy_list_empty.html"

    workload = cell("workload", _("Workload"), "workload__name")
    status = cell("status", _("Status"))
    coverage = cell("coverage", _("Coverage"), "coverage_percent", "workload__name", end=True)
    missing = cell(
        "missing",
        _("What is missing"),
        attrs={"td": {"class": "small", "style": "max-width: 28rem"}},
    )
    last_drill = cell("last_drill", _("Last drill"), "last_drill_at", "workload__name")
    next_drill = cell("next_drill", _("Next drill due"), "drill_due_at", "workload__name")
    targets = cell(
        "targets", _("RPO / RTO target"), "rpo_minutes", "rto_minutes", "workload__name", end=True
    )
    risk = cell(
        "risk",
        _("Risk"),
        "risk_score",
        "workload__name",
        attrs={
            "th": {
                "class": "text-end",
                "title": _("Missing coverage + 100 if failing + 100 if overdue"),
            },
            "td": {"class": "text-end"},
        },
    )

    class Meta(ListTable.Meta):
        model = BackupPolicy
        fields = ()
        row_attrs = {"data-workload": lambda record: record.workload.slug}
