from apps.core.tables import CellColumn, ListTable
from apps.procurement.models import Scenario

END = {"th": {"class": "text-end"}, "td": {"class": "text-end"}}


class ScenarioTable(ListTable):
    element_id = "scenarios"
    empty_template = "procurement/_scenario_list_empty.html"

    name = CellColumn(
        "procurement/_scenario_cells.html#name",
        verbose_name="Scenario",
        order_by=("name",),
    )
    demand = CellColumn(
        "procurement/_scenario_cells.html#demand",
        verbose_name="Demand",
        orderable=False,
    )
    horizon = CellColumn(
        "procurement/_scenario_cells.html#horizon",
        verbose_name="Horizon",
        order_by=("horizon_months", "name"),
        attrs=END,
    )
    currency = CellColumn(
        "procurement/_scenario_cells.html#currency",
        verbose_name="Currency",
        order_by=("currency", "name"),
    )
    options = CellColumn(
        "procurement/_scenario_cells.html#options",
        verbose_name="Options",
        order_by=("option_count", "name"),
        attrs=END,
    )
    last_export = CellColumn(
        "procurement/_scenario_cells.html#last_export",
        verbose_name="Last export",
        order_by=("last_export_at", "name"),
    )
    created_by = CellColumn(
        "procurement/_scenario_cells.html#created_by",
        verbose_name="Created by",
        orderable=False,
    )

    class Meta(ListTable.Meta):
        model = Scenario
        fields = ()
        order_by = "name"
        attrs = {**ListTable.Meta.attrs, "id": "scenario-table"}
