from django.utils.translation import gettext_lazy as _

from apps.accounts.models import AuditEvent, GroupMapping
from apps.core.tables import ListTable, cells

mapping_cell = cells("accounts/_group_mapping_cells.html")
audit_cell = cells("accounts/_audit_cells.html")


class GroupMappingTable(ListTable):
    element_id = "group-mappings"
    empty_template = "accounts/_group_mapping_list_empty.html"

    idp_group = mapping_cell("idp_group", _("Identity provider group"), "idp_group")
    role = mapping_cell("role", _("Role"), "role", "idp_group")
    team = mapping_cell("team", _("Team"), "team__name", "idp_group")
    actions = mapping_cell("actions", "", attrs={"td": {"class": "table-actions text-end"}})

    class Meta(ListTable.Meta):
        model = GroupMapping
        fields = ()
        row_attrs = {"data-group": lambda record: record.idp_group}


class AuditTable(ListTable):
    """Newest first, always: the log is read from the latest event back."""

    element_id = "audit-events"
    empty_template = "accounts/_audit_list_empty.html"
    has_filter_form = True

    at = audit_cell("at", _("Time"))
    kind = audit_cell("kind", _("Event"))
    username = audit_cell("username", _("User"))
    actor = audit_cell("actor", _("By"))
    method = audit_cell("method", _("Method"))
    address = audit_cell("address", _("Address"))
    sentence = audit_cell("sentence", _("What happened"), attrs={"td": {"class": "text-wrap"}})

    class Meta(ListTable.Meta):
        model = AuditEvent
        fields = ()
        row_attrs = {"data-kind": lambda record: record.kind}
