from django.utils.translation import gettext_lazy as _

from apps.alerts.models import Alert, AlertChannel, AlertRule, Delivery, Silence
from apps.core.tables import ListTable, cells

cell = cells("alerts/_cells.html")


class AlertTable(ListTable):
    element_id = "alerts"
    empty_template = "alerts/_alert_list_empty.html"
    has_filter_form = True

    status = cell("alert_status", _("Status"), "status", "-starts_at")
    summary = cell("alert_summary", _("Alert"))
    rule = cell("alert_rule", _("Rule"), "rule_name", "-starts_at")
    starts_at = cell("alert_started", _("Started (UTC)"), "starts_at")
    ends_at = cell("alert_ended", _("Resolved (UTC)"), "ends_at", nulls_last=True)

    class Meta(ListTable.Meta):
        model = Alert
        fields = ()
        attrs = {**ListTable.Meta.attrs, "id": "alert-table"}


class RuleTable(ListTable):
    element_id = "rules"
    empty_template = "alerts/_rule_list_empty.html"

    name = cell("rule_name", _("Rule"), "name")
    condition = cell("rule_condition", _("Alerts when"))
    scope = cell("rule_scope", _("Looks at"))
    channel = cell("rule_channel", _("Channel"), "channel__name", "name")
    firing = cell("rule_firing", _("Firing"), "firing_count", "name", end=True)
    evaluated = cell(
        "rule_evaluated", _("Last evaluated (UTC)"), "last_evaluated_at", nulls_last=True
    )

    class Meta(ListTable.Meta):
        model = AlertRule
        fields = ()
        order_by = "name"
        attrs = {**ListTable.Meta.attrs, "id": "rule-table"}


class ChannelTable(ListTable):
    element_id = "channels"
    empty_template = "alerts/_channel_list_empty.html"

    name = cell("channel_name", _("Channel"), "name")
    kind = cell("channel_kind", _("Kind"), "kind", "name")
    destination = cell("channel_destination", _("Sends to"))
    team = cell("channel_team", _("Team"), "team__name", "name", nulls_last=True)
    rules = cell("channel_rules", _("Rules"), "rule_count", "name", end=True)
    last_sent = cell("channel_last_sent", _("Last sent (UTC)"), "last_sent_at", nulls_last=True)

    class Meta(ListTable.Meta):
        model = AlertChannel
        fields = ()
        order_by = "name"
        attrs = {**ListTable.Meta.attrs, "id": "channel-table"}


class DeliveryTable(ListTable):
    element_id = "deliveries"
    empty_template = "alerts/_delivery_list_empty.html"
    has_filter_form = True

    created_at = cell("delivery_created", _("Made (UTC)"), "created_at")
    alert = cell("delivery_alert", _("Alert"))
    channel = cell("delivery_channel", _("Channel"), "channel__name", "-created_at")
    event = cell("delivery_event", _("Event"), "event", "-created_at")
    status = cell("delivery_status", _("Status"), "status", "-created_at")
    attempts = cell("delivery_attempts", _("Attempts"), "attempts", "-created_at", end=True)
    outcome = cell("delivery_outcome", _("Outcome"))

    class Meta(ListTable.Meta):
        model = Delivery
        fields = ()
        attrs = {**ListTable.Meta.attrs, "id": "delivery-table"}


class SilenceTable(ListTable):
    element_id = "silences"
    empty_template = "alerts/_silence_list_empty.html"

    state = cell("silence_state", _("State"))
    what = cell("silence_what", _("Holds back"))
    team = cell("silence_team", _("Team"), "team__name", nulls_last=True)
    starts_at = cell("silence_starts", _("Starts (UTC)"), "starts_at")
    ends_at = cell("silence_ends", _("Ends (UTC)"), "ends_at")
    comment = cell("silence_comment", _("Comment"))
    actions = cell("silence_actions", "")

    class Meta(ListTable.Meta):
        model = Silence
        fields = ()
        attrs = {**ListTable.Meta.attrs, "id": "silence-table"}
