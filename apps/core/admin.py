from django.contrib import admin

from apps.core.models import WorkerHeartbeat


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["hostname", "process_id", "last_seen_at", "beats"]
