from django.urls import path

from apps.training import views

app_name = "training"
urlpatterns = [
    path("workloads/<slug:slug>/goodput/", views.workload_panel, name="workload_panel"),
    path("workloads/<slug:slug>/goodput/import/", views.event_import, name="event_import"),
]
