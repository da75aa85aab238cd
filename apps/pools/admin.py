from django.contrib import admin

from apps.pools.models import Pool, Workload


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "purpose",
        "deployment",
        "gpu_model_name",
        "gpu_count",
        "price_per_gpu_hour_usd",
    ]
    list_filter = ["purpose", "deployment"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name", "slug", "region"]


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "pool", "status"]
    list_filter = ["kind", "status"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name", "slug"]
