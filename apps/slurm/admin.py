from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from apps.slurm.models import SlurmImport, SlurmJob, SlurmMappingRule, SlurmPull, SlurmRemap


@admin.register(SlurmImport)
class SlurmImportAdmin(admin.ModelAdmin):
    """Read-only: an import's record is what it did."""

    list_display = ["__str__", "source", "imported_by", "accepted", "updated", "rejected"]
    list_select_related = ["cluster", "imported_by"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(SlurmJob)
class SlurmJobAdmin(admin.ModelAdmin):
    """Read-only: jobs change only through imports (apps/slurm/services.py)."""

    list_display = ["job_id", "cluster", "user", "account", "state", "start", "gpus", "gpu_hours"]
    list_filter = ["cluster", "state"]
    search_fields = ["job_id", "user", "account", "job_name"]
    list_select_related = ["cluster"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(SlurmMappingRule)
class SlurmMappingRuleAdmin(SimpleHistoryAdmin):
    """Read-only: a rule changes through its pages or the API, which re-map the jobs."""

    list_display = ["priority", "field", "pattern", "cluster", "workload", "team"]
    list_select_related = ["cluster", "workload", "team"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(SlurmPull)
class SlurmPullAdmin(admin.ModelAdmin):
    """Read-only: a pull's record is what sacct answered."""

    list_display = ["__str__", "status", "since", "until", "exit_code"]
    list_filter = ["cluster", "status"]
    list_select_related = ["cluster"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(SlurmRemap)
class SlurmRemapAdmin(admin.ModelAdmin):
    """Read-only: a re-map's record is what it did (apps/slurm/remap.py)."""

    list_display = ["pk", "status", "jobs_total", "jobs_changed", "requested_by", "created_at"]
    list_filter = ["status"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
