from django.contrib import admin

from apps.alerts.models import (
    Alert,
    AlertChannel,
    AlertRule,
    Delivery,
    Silence,
    SlurmReportDelivery,
)


@admin.register(AlertChannel)
class AlertChannelAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "team", "enabled", "language"]
    list_filter = ["kind", "enabled"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "channel", "team", "enabled", "last_evaluated_at"]
    list_filter = ["kind", "enabled"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    """Alerts are raised and resolved by the evaluation only: read here, never edited."""

    list_display = ["rule_name", "fingerprint", "status", "starts_at", "ends_at"]
    list_filter = ["status", "kind"]
    readonly_fields = [field.name for field in Alert._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["alert", "channel", "event", "status", "attempts", "next_attempt_at"]
    list_filter = ["status", "event"]
    readonly_fields = [field.name for field in Delivery._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Silence)
class SilenceAdmin(admin.ModelAdmin):
    list_display = ["pk", "rule", "team", "starts_at", "ends_at", "created_by"]


@admin.register(SlurmReportDelivery)
class SlurmReportDeliveryAdmin(admin.ModelAdmin):
    """Recorded by the weekly report's sends; deleting a failed one is the way to forget it."""

    list_display = ["week_start", "recipient", "channel", "status", "attempts", "sent_at"]
    list_filter = ["status", "week_start"]
    readonly_fields = [field.name for field in SlurmReportDelivery._meta.fields]

    def has_add_permission(self, request):
        return False
