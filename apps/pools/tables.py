import django_tables2 as tables
from django.db.models import DecimalField, ExpressionWrapper, F

from apps.core.tables import CellColumn, ListTable
from apps.pools.models import Pool, Workload

END = {"th": {"class": "text-end"}, "td": {"class": "text-end"}}


def with_price_per_hour(pools):
    """``price_per_hour_sort``: the pool's price per wall-clock hour in SQL, to sort by it
    (``Pool.price_per_hour_usd`` is the same product in Python)."""
    return pools.annotate(
        price_per_hour_sort=ExpressionWrapper(
            F("effective_price_per_gpu_hour_usd") * F("gpu_count"),
            output_field=DecimalField(max_digits=16, decimal_places=4),
        )
    )


class PoolTable(ListTable):
    element_id = "pool-table"
    empty_template = "pools/_pool_list_empty.html"
    footer_template = "pools/_pool_totals.html"
    has_filter_form = True

    # Ties keep the list's order by name.
    name = CellColumn(
        "pools/_pool_cells.html#name",
        verbose_name="Pool",
        order_by=("name",),
    )
    purpose = CellColumn(
        "pools/_pool_cells.html#purpose",
        verbose_name="Purpose",
        orderable=False,
    )
    deployment = tables.Column(verbose_name="Deployment", orderable=False)
    region = CellColumn(
        "pools/_pool_cells.html#region",
        verbose_name="Region",
        order_by=("region", "name"),
    )
    gpu_model = tables.Column(verbose_name="GPU model", accessor="gpu_model__name", orderable=False)
    gpus = CellColumn(
        "pools/_pool_cells.html#gpus",
        verbose_name="GPUs",
        order_by=("gpu_count", "name"),
        attrs=END,
    )
    price = CellColumn(
        "pools/_pool_cells.html#price",
        verbose_name="Price per GPU-hour",
        order_by=("effective_price_per_gpu_hour_usd", "name"),
        attrs=END,
    )
    price_per_hour = CellColumn(
        "pools/_pool_cells.html#price_per_hour",
        verbose_name="Price per hour",
        order_by=("price_per_hour_sort", "name"),
        attrs=END,
    )
    workloads = tables.Column(
        verbose_name="Workloads",
        accessor="workload_count",
        order_by=("workload_count", "name"),
        attrs=END,
    )

    class Meta(ListTable.Meta):
        model = Pool
        fields = ()
        order_by = "name"


class WorkloadTable(ListTable):
    """Memory, fit and warnings come from the fit engine (``record.assessment``, set by the
    view for the page's rows): they are not columns SQL can sort."""

    element_id = "workloads"
    empty_template = "pools/_workload_list_empty.html"
    has_filter_form = True

    name = CellColumn(
        "pools/_workload_cells.html#name",
        verbose_name="Workload",
        order_by=("name",),
    )
    kind = CellColumn(
        "pools/_workload_cells.html#kind",
        verbose_name="Kind",
        order_by=("kind", "name"),
    )
    model = CellColumn(
        "pools/_workload_cells.html#model",
        verbose_name="Model",
        order_by=("model_architecture__name", "name"),
    )
    pool = CellColumn(
        "pools/_workload_cells.html#pool",
        verbose_name="Pool",
        order_by=("pool__name", "name"),
    )
    gpus = CellColumn(
        "pools/_workload_cells.html#gpus",
        verbose_name="GPUs",
        order_by=("gpu_count", "name"),
        attrs=END,
    )
    memory = CellColumn(
        "pools/_workload_cells.html#memory",
        verbose_name="Memory per GPU",
        orderable=False,
        attrs=END,
    )
    fit = CellColumn(
        "pools/_workload_cells.html#fit",
        verbose_name="Fit",
        orderable=False,
    )
    warnings = CellColumn(
        "pools/_workload_cells.html#warnings",
        verbose_name="Warnings",
        orderable=False,
    )

    class Meta(ListTable.Meta):
        model = Workload
        fields = ()
        order_by = "name"
        attrs = {**ListTable.Meta.attrs, "id": "workload-table"}
