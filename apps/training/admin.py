from django.contrib import admin

from apps.training.models import TrainingEvent, TrainingImportRun


@admin.register(TrainingImportRun)
class TrainingImportRunAdmin(admin.ModelAdmin):
    list_display = ("workload", "format", "source", "status", "events_accepted", "created_at")
    list_filter = ("status", "format", "source")
    raw_id_fields = ("workload", "created_by")


@admin.register(TrainingEvent)
class TrainingEventAdmin(admin.ModelAdmin):
    list_display = ("workload", "job_name", "event_type", "timestamp", "step", "node_rank")
    list_filter = ("event_type",)
    search_fields = ("job_name",)
    raw_id_fields = ("workload", "import_run")
