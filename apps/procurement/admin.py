from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from apps.procurement.models import ComparisonExport, Scenario, ScenarioOption


class OptionInline(admin.StackedInline):
    model = ScenarioOption
    extra = 0


@admin.register(Scenario)
class ScenarioAdmin(SimpleHistoryAdmin):
    list_display = ["name", "demand_source", "horizon_months", "currency"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [OptionInline]
    search_fields = ["name", "slug"]


@admin.register(ComparisonExport)
class ComparisonExportAdmin(admin.ModelAdmin):
    list_display = ["scenario", "format", "status", "created_by", "created_at"]
    list_filter = ["format", "status"]
