import django_tables2 as tables
from django.db.models import DecimalField, ExpressionWrapper, F
from django.utils.translation import gettext_lazy as _

from apps.core.tables import END_ALIGNED, ListTable, cells
from apps.pools.models import Pool, Workload


def with_price_per_hour(pools):
    """``price_per_hour_sort``: the pool's price per wall-clock hour in SQL, to sort by it
    (``Pool.price_per_hour_usd`` is the same product in Python)."""
    return pools.annotate(
        price_per_hour_sort=ExpressionWrapper(
            F("effective_price_per_gpu_hour_usd") * F("gpu_count"),
            output_field=DecimalField(max_digits=16, decimal_places=4),
        )
    )


pool_cell = cells("pools/_pool_cells.html")
workload_cell = cells("pools/_workload_cells.html")


class PoolTable(ListTable):
    element_id = "pool-table"
    empty_template = "pools/_pool_list_empty.html"
    footer_template = "pools/_pool_totals.html"
    has_filter_form = True

    # Ties keep the list's order by name.
    name = pool_cell("name", _("Pool"), "name")
    purpose = pool_cell("purpose", _("Purpose"))
    deployment = tables.Column(verbose_name=_("Deployment"), orderable=False)
    region = pool_cell("region", _("Region"), "region", "name")
    gpu_model = tables.Column(
        verbose_name=_("GPU model"), accessor="gpu_model__name", orderable=False
    )
    gpus = pool_cell("gpus", _("GPUs"), "gpu_count", "name", end=True)
    price = pool_cell(
        "price", _("Price per GPU-hour"), "effective_price_per_gpu_hour_usd", "name", end=True
    )
    price_per_hour = pool_cell(
        "price_per_hour", _("Price per hour"), "price_per_hour_sort", "name", end=True
    )
    workloads = tables.Column(
        verbose_name=_("Workloads"),
        accessor="workload_count",
        order_by=("workload_count", "name"),
        attrs=END_ALIGNED,
    )

    class Meta(ListTable.Meta):
        model = Pool
        fields = ()
        order_by = "name"
        # Headers may wrap: with the columns other apps add, the list fits a 1440 px screen.
        attrs = {**ListTable.Meta.attrs, "thead": {"class": "headers-wrap"}}

    def __init__(self, *args, extra_columns=None, **kwargs):
        super().__init__(*args, extra_columns=extra_columns, **kwargs)
        # The columns other apps registered (apps/pools/list_columns.py): the totals row
        # leaves a cell for each.
        self.extra_column_names = [name for name, _ in extra_columns or ()]


class WorkloadTable(ListTable):
    """Memory, fit and warnings come from the fit engine (``record.assessment``, set by the
    view for the page's rows): they are not columns SQL can sort."""

    element_id = "workloads"
    empty_template = "pools/_workload_list_empty.html"
    has_filter_form = True

    name = workload_cell("name", _("Workload"), "name")
    kind = workload_cell("kind", _("Kind"), "kind", "name")
    model = workload_cell("model", _("Model"), "model_architecture__name", "name")
    pool = workload_cell("pool", _("Pool"), "pool__name", "name")
    gpus = workload_cell("gpus", _("GPUs"), "gpu_count", "name", end=True)
    memory = workload_cell("memory", _("Memory per GPU"), end=True)
    fit = workload_cell("fit", _("Fit"))
    warnings = workload_cell("warnings", _("Warnings"))

    class Meta(ListTable.Meta):
        model = Workload
        fields = ()
        order_by = "name"
        attrs = {**ListTable.Meta.attrs, "id": "workload-table"}
