from django.utils.translation import gettext_lazy as _

from apps.core.tables import ListTable, RowsData, cells

pilot_cell = cells("pilots/_pilot_cells.html")


class PilotTable(ListTable):
    """The workload's measured options (``selectors.PricedPilot`` rows), cheapest per
    10⁶ output tokens first; rows without a price sort last either way."""

    element_id = "pilot-table"
    empty_template = "pilots/_pilot_list_empty.html"

    gpu_model = pilot_cell("gpu_model", _("GPU model"), "gpu_model_name", "name")
    name = pilot_cell("name", _("Configuration"), "name")
    gpus = pilot_cell("gpus", _("GPUs"), "gpu_count", "name", end=True)
    concurrency = pilot_cell("concurrency", _("Concurrency"), "concurrency", end=True)
    throughput = pilot_cell(
        "throughput", _("Output tokens/s"), "output_tokens_per_second", end=True
    )
    throughput_per_gpu = pilot_cell(
        "throughput_per_gpu",
        _("Output tokens/s per GPU"),
        "output_tokens_per_second_per_gpu",
        end=True,
    )
    ceiling = pilot_cell(
        "ceiling",
        _("Share of the decode ceiling (%)"),
        "share_of_decode_ceiling_pct",
        "name",
        end=True,
    )
    ttft = pilot_cell("ttft", _("TTFT p50 / p99 (ms)"), "ttft_p99_ms", end=True)
    itl = pilot_cell("itl", _("ITL p50 / p99 (ms)"), "itl_p99_ms", end=True)
    price = pilot_cell("price", _("Price per GPU-hour (USD)"), "price_per_gpu_hour_usd", end=True)
    cost = pilot_cell(
        "cost",
        _("Cost per 1M output tokens (USD)"),
        "cost_per_million_output_tokens_usd",
        "name",
        end=True,
    )
    actions = pilot_cell("actions", "")

    class Meta(ListTable.Meta):
        fields = ()
        order_by = "cost"
        attrs = {**ListTable.Meta.attrs, "id": "pilot-results"}

    def __init__(self, rows, **kwargs):
        super().__init__(RowsData(list(rows)), **kwargs)
