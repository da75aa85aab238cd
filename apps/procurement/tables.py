from django.utils.translation import gettext_lazy as _

from apps.core.tables import ListTable, cells
from apps.procurement.models import Scenario

cell = cells("procurement/_scenario_cells.html")


class ScenarioTable(ListTable):
    element_id = "scenarios"
    empty_template = "procurement/_scenario_list_empty.html"

    name = cell("name", _("Scenario"), "name")
    demand = cell("demand", _("Demand"))
    horizon = cell("horizon", _("Horizon"), "horizon_months", "name", end=True)
    currency = cell("currency", _("Currency"), "currency", "name")
    options = cell("options", _("Options"), "option_count", "name", end=True)
    last_export = cell("last_export", _("Last export"), "last_export_at", "name")
    created_by = cell("created_by", _("Created by"))

    class Meta(ListTable.Meta):
        model = Scenario
        fields = ()
        order_by = "name"
        attrs = {**ListTable.Meta.attrs, "id": "scenario-table"}
