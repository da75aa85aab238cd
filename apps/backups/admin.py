from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from apps.backups.models import BackupPolicy, BackupVersion, RestoreDrill, VersionChecksum


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
    list_display = ["policy", "version", "finished_at", "passed"]
    list_filter = ["passed"]
    list_select_related = ["policy__workload", "version"]
