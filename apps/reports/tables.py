"""The cost report's table: one row per pool, purpose or workload (``queries.CostRow``),
each figure a link to how it is computed, the total row below.

The rows are computed in Python from SQL sums (apps/reports/queries.py) and cached with
the page, so the table sorts them in Python (``RowsData``: rows without a figure last
either way). The page and its cached partial are rendered without a request (a worker
warms them), so the sort links carry the report's own query (``ListTable.query``): a sort
keeps every filter, and the URL stays shareable.
"""

from django.utils.html import format_html

from apps.core.tables import ListTable, RowsData, cells

report_cell = cells("reports/_report_cells.html")


def header_with_unit(label: str, unit: str = ""):
    """The label, and its unit on a line of its own beside the sort arrow."""
    if not unit:
        return label
    unit_html = '<span class="small text-secondary text-nowrap">{}</span>'
    return format_html("{}<br>" + unit_html, label, unit)


def _figure(name: str, label: str, unit: str, figure: str):
    # Ties keep the rows' order by name.
    return report_cell(name, header_with_unit(label, unit), figure, "label", end=True)


class ReportTable(ListTable):
    element_id = "report-rows"
    footer_template = "reports/_report_total.html"

    label = report_cell("label", "Pool", "label")
    capacity = _figure("capacity", "Capacity", "GPU-h", "capacity_gpu_hours")
    busy = _figure("busy", "Busy", "GPU-h", "busy_gpu_hours")
    utilization = _figure("utilization", "Utilisation", "% of measured", "utilization_pct")
    cost = _figure("cost", "Cost", "USD", "cost_usd")
    idle = _figure("idle", "Idle", "USD", "idle_cost_usd")
    unmeasured = _figure("unmeasured", "Unmeasured", "USD", "unmeasured_cost_usd")
    per_busy_gpu_hour = _figure(
        "per_busy_gpu_hour", "Per busy GPU-h", "USD", "cost_per_busy_gpu_hour_usd"
    )
    requests = _figure("requests", "Requests", "", "requests")
    per_1k_requests = _figure(
        "per_1k_requests", "Per 1k requests", "USD", "cost_per_1k_requests_usd"
    )
    per_1m_tokens = _figure("per_1m_tokens", "Per 1M tokens", "USD", "cost_per_1m_tokens_usd")
    lost = _figure("lost", "Lost", "GPU-h", "lost_gpu_hours")
    per_effective_training_gpu_hour = _figure(
        "per_effective_training_gpu_hour",
        "Per effective training GPU-h",
        "USD",
        "cost_per_effective_training_gpu_hour_usd",
    )

    class Meta(ListTable.Meta):
        attrs = {
            "class": "table card-table table-vcenter table-sm",
            "id": "report-table",
            "thead": {"class": "headers-wrap"},
        }
        row_attrs = {"data-key": lambda record: record.key}

    def __init__(self, rows, *, group_by: str, query, **kwargs):
        """``rows`` in the report's order; ``query`` (a QueryDict) is the report's, whose
        ``sort`` orders them."""
        super().__init__(RowsData(list(rows)), **kwargs)
        self.columns["label"].column.verbose_name = group_by.capitalize()
        self.query = query
        self.order_by = query.get(self.prefixed_order_by_field)
