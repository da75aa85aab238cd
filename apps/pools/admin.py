from django.contrib import admin

from apps.pools.models import Pool, Workload
from apps.pools.services import save_pool


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["name", "purpose", "deployment", "gpu_model", "gpu_count"]
    list_filter = ["purpose", "deployment", "compliance_zone"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["effective_price_per_gpu_hour_usd"]
    search_fields = ["name", "slug", "region"]

    def save_model(self, request, obj, form, change):
        # A price edited here takes effect from the current hour, as on the pool page.
        save_pool(obj, price_history=True, user=request.user)


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "pool", "status"]
    list_filter = ["kind", "status"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name", "slug"]
