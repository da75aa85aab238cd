from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from apps.procurement.models import ComparisonExport, Scenario, ScenarioOption, UserRegion


class OptionInline(admin.StackedInline):
    model = ScenarioOption
    extra = 0

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        """The GPU-model and pool choices, read once per page: each inline form would
        otherwise query them again (2 queries per option)."""
        formfield = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if formfield is not None and db_field.name in ("gpu_model", "source_pool"):
            cache = request.__dict__.setdefault("_option_inline_choices", {})
            if db_field.name not in cache:
                cache[db_field.name] = list(formfield.choices)
            formfield.choices = cache[db_field.name]
        return formfield


class UserRegionInline(admin.TabularInline):
    model = UserRegion
    extra = 0


@admin.register(Scenario)
class ScenarioAdmin(SimpleHistoryAdmin):
    list_display = ["name", "demand_source", "horizon_months", "currency"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [UserRegionInline, OptionInline]
    search_fields = ["name", "slug"]


@admin.register(ComparisonExport)
class ComparisonExportAdmin(admin.ModelAdmin):
    list_display = ["scenario", "format", "status", "created_by", "created_at"]
    list_filter = ["format", "status"]
    list_select_related = ["scenario", "created_by"]
