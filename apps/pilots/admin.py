from django.contrib import admin

from apps.pilots.models import PilotResult


@admin.register(PilotResult)
class PilotResultAdmin(admin.ModelAdmin):
    list_display = ["workload", "gpu_model", "name", "gpu_count", "output_tokens_per_second"]
    list_select_related = ["workload", "gpu_model"]
    readonly_fields = ["content_sha256", "raw_figures", "imported_at", "imported_by"]
