from apps.backups.models import BackupPolicy
from apps.core.tables import CellColumn, ListTable

END = {"th": {"class": "text-end"}, "td": {"class": "text-end"}}


class PolicyTable(ListTable):
    """Unsorted, the list keeps the queryset's ranking (``ranked_by_risk``): attention
    first, then risk. "What is missing" is ``record.coverage_assessment``, computed in
    Python by the view for the page's rows."""

    element_id = "policies"
    empty_template = "backups/_policy_list_empty.html"

    workload = CellColumn(
        "backups/_policy_cells.html#workload",
        verbose_name="Workload",
        order_by=("workload__name",),
    )
    status = CellColumn(
        "backups/_policy_cells.html#status",
        verbose_name="Status",
        orderable=False,
    )
    coverage = CellColumn(
        "backups/_policy_cells.html#coverage",
        verbose_name="Coverage",
        order_by=("coverage_percent", "workload__name"),
        attrs=END,
    )
    missing = CellColumn(
        "backups/_policy_cells.html#missing",
        verbose_name="What is missing",
        orderable=False,
        attrs={"td": {"class": "small", "style": "max-width: 28rem"}},
    )
    last_drill = CellColumn(
        "backups/_policy_cells.html#last_drill",
        verbose_name="Last drill",
        order_by=("last_drill_at", "workload__name"),
    )
    next_drill = CellColumn(
        "backups/_policy_cells.html#next_drill",
        verbose_name="Next drill due",
        order_by=("drill_due_at", "workload__name"),
    )
    targets = CellColumn(
        "backups/_policy_cells.html#targets",
        verbose_name="RPO / RTO target",
        order_by=("rpo_minutes", "rto_minutes", "workload__name"),
        attrs=END,
    )
    risk = CellColumn(
        "backups/_policy_cells.html#risk",
        verbose_name="Risk",
        order_by=("risk_score", "workload__name"),
        attrs={
            "th": {
                "class": "text-end",
                "title": "Missing coverage + 100 if failing + 100 if overdue",
            },
            "td": {"class": "text-end"},
        },
    )

    class Meta(ListTable.Meta):
        model = BackupPolicy
        fields = ()
        row_attrs = {"data-workload": lambda record: record.workload.slug}
