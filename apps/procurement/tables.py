from apps.core.tables import ListTable, cells
from apps.procurement.models import Scenario

cell = cells("procurement/_scenario_cells.html")


class ScenarioTable(ListTable):
    element_id = "scenarios"
    empty_template = "procurement/_scenario_list_empty.html"

    name = cell("name", "Scenario", "name")
    demand = cell("demand", "Demand")
    horizon = cell("horizon", "Horizon", "horizon_months", "name", end=True)
    currency = cell("currency", "Currency", "currency", "name")
    options = cell("options", "Options", "option_count", "name", end=True)
    last_export = cell("last_export", "Last export", "last_export_at", "name")
    created_by = cell("created_by", "Created by")

    class Meta(ListTable.Meta):
        model = Scenario
        fields = ()
        order_by = "name"
        attrs = {**ListTable.Meta.attrs, "id": "scenario-table"}
