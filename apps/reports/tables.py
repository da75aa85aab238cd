"""The cost report's table: one row per pool, purpose or workload (``cost.rows.CostRow``),
each figure a link to how it is computed, the total row below.

The rows are computed in Python from SQL sums (apps/reports/cost/) and cached with
the page, so the table sorts them in Python (``RowsData``: rows without a figure last
either way). The page and its cached partial are rendered without a request (a worker
warms them), so the sort links carry the report's own query (``ListTable.query``): a sort
keeps every filter, and the URL stays shareable.
"""

from django.utils import translation
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from apps.core.tables import ListTable, RowsData, cells

report_cell = cells("reports/_report_cells.html")
KEEP_WORDS = "word-break: keep-all"


def header_with_unit(label: str, unit: str = ""):
    """The label, and its unit on a line of its own beside the sort arrow."""
    if not unit:
        return label
    unit_html = '<span class="small text-secondary text-nowrap">{}</span>'
    return format_html("{}<br>" + unit_html, label, unit)


# Each figure column's unit, put under its label when a table is made: the labels are
# translated in the language of the page that draws the table, not of the first import.
UNITS: dict[str, str] = {}


def _figure(name: str, label, unit, figure: str):
    UNITS[name] = unit
    # Ties keep the rows' order by name.
    return report_cell(name, label, figure, "label", end=True)


class ReportTable(ListTable):
    element_id = "report-rows"
    footer_template = "reports/_report_total.html"

    label = report_cell("label", _("Pool"), "label")
    capacity = _figure("capacity", _("Capacity"), "GPU-h", "capacity_gpu_hours")
    busy = _figure("busy", _("Busy"), "GPU-h", "busy_gpu_hours")
    utilization = _figure(
        "utilization",
        _("Utilisation"),
        # xgettext:no-python-format
        _("% of measured"),
        "utilization_pct",
    )
    cost = _figure("cost", _("Cost"), "USD", "cost_usd")
    idle = _figure("idle", _("Idle"), "USD", "idle_cost_usd")
    unmeasured = _figure("unmeasured", _("Unmeasured"), "USD", "unmeasured_cost_usd")
    per_busy_gpu_hour = _figure(
        "per_busy_gpu_hour", _("Per busy GPU-h"), "USD", "cost_per_busy_gpu_hour_usd"
    )
    requests = _figure("requests", _("Requests"), "", "requests")
    per_1k_requests = _figure(
        "per_1k_requests", _("Per 1k requests"), "USD", "cost_per_1k_requests_usd"
    )
    per_1m_tokens = _figure("per_1m_tokens", _("Per 1M tokens"), "USD", "cost_per_1m_tokens_usd")
    lost = _figure("lost", _("Lost"), "GPU-h", "lost_gpu_hours")
    per_effective_training_gpu_hour = _figure(
        "per_effective_training_gpu_hour",
        _("Per effective training GPU-h"),
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

    def __init__(self, rows, *, group_by: str, query, group_label=None, **kwargs):
        """``rows`` in the report's order; ``query`` (a QueryDict) is the report's, whose
        ``sort`` orders them; ``group_label`` heads the first column (default: the
        grouping's name)."""
        super().__init__(RowsData(list(rows)), **kwargs)
        self.columns["label"].column.verbose_name = group_label or group_by.capitalize()
        for name, unit in UNITS.items():
            column = self.columns[name].column
            column.verbose_name = header_with_unit(column.verbose_name, unit)
        if not (translation.get_language() or "en").startswith("en"):
            # A Chinese header would break between any two characters of a narrow column
            # ("未/测/量"): it breaks at its spaces only.
            for bound in self.columns:
                attrs = bound.column.attrs
                bound.column.attrs = {**attrs, "th": {**attrs.get("th", {}), "style": KEEP_WORDS}}
        self.query = query
        self.order_by = query.get(self.prefixed_order_by_field)


lendable_cell = cells("reports/_lendable_cells.html")
# Each column's unit, under its label when a table is made (in the page's language).
LENDABLE_UNITS = {
    "lendable": _("GPU-h/week"),
    "value": _("USD/week"),
    "window": _("local time"),
    "without_data": _("hours of 168"),
}


class LendableTable(ListTable):
    """The fleet's inference pools by what they could lend (``lending.Lendable`` rows,
    computed in Python from one percentile query): the most valuable first, ties by
    name; a pool without a window sorts last by window either way."""

    element_id = "lendable-table"
    footer_template = "reports/_lendable_total.html"
    empty_template = "reports/_lendable_empty.html"

    name = lendable_cell("name", _("Pool"), "pool.name")
    gpus = lendable_cell("gpus", _("GPUs"), "pool.gpu_count", "pool.name", end=True)
    lendable = lendable_cell(
        "lendable", _("Lendable"), "lendable_gpu_hours_per_week", "pool.name", end=True
    )
    value = lendable_cell("value", _("Value"), "value_usd_per_week", "pool.name", end=True)
    window = lendable_cell("window", _("Largest window"), "largest_window.gpu_hours", "pool.name")
    without_data = lendable_cell(
        "without_data", _("Too little data"), "slots_without_data", "pool.name", end=True
    )

    class Meta(ListTable.Meta):
        fields = ()
        order_by = "-value"
        attrs = {**ListTable.Meta.attrs, "id": "lendable-rows"}

    def __init__(self, rows, **kwargs):
        super().__init__(RowsData(list(rows)), **kwargs)
        for name, unit in LENDABLE_UNITS.items():
            column = self.columns[name].column
            column.verbose_name = header_with_unit(column.verbose_name, unit)
