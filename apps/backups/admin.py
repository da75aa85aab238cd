from django.contrib import admin
from django.db import transaction
from simple_history.admin import SimpleHistoryAdmin

from apps.backups.models import BackupPolicy, BackupVersion, RestoreDrill, VersionChecksum
from apps.backups.services import delete_drill, refresh_drill_schedules


@admin.register(BackupPolicy)
class BackupPolicyAdmin(SimpleHistoryAdmin):
    list_display = ["workload", "coverage_percent", "rpo_minutes", "rto_minutes", "drill_due_at"]
    list_select_related = ["workload"]
    search_fields = ["workload__name", "workload__slug"]


class VersionChecksumInline(admin.TabularInline):
    model = VersionChecksum
    extra = 0


@admin.register(BackupVersion)
class BackupVersionAdmin(SimpleHistoryAdmin):
    list_display = ["name", "workload", "kind", "tier", "created_at", "purged_at"]
    list_filter = ["kind", "tier"]
    list_select_related = ["workload"]
    search_fields = ["name", "workload__name"]
    inlines = [VersionChecksumInline]


@admin.register(RestoreDrill)
class RestoreDrillAdmin(SimpleHistoryAdmin):
    list_display = ["policy", "version", "finished_at", "verdict"]
    list_filter = ["verdict"]
    list_select_related = ["policy__workload", "version"]

    # A drill edited or deleted here moves its policy's next drill date and overdue flag
    # at once, as on the policy page (apps/backups/services.py), not at the daily refresh.
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        refresh_drill_schedules(BackupPolicy.objects.filter(pk=obj.policy_id))

    def delete_model(self, request, obj):
        delete_drill(obj)

    def delete_queryset(self, request, queryset):
        policy_ids = set(queryset.values_list("policy_id", flat=True))
        with transaction.atomic():
            super().delete_queryset(request, queryset)
            refresh_drill_schedules(BackupPolicy.objects.filter(pk__in=policy_ids))
