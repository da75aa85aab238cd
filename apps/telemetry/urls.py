from django.urls import path

from apps.telemetry import views
from apps.telemetry.pull import views as pull_views

app_name = "telemetry"
urlpatterns = [
    path("imports/", views.import_list, name="import_list"),
    path("imports/new/", views.import_create, name="import_create"),
    path("imports/<int:pk>/", views.import_detail, name="import_detail"),
    path("gpus/unassigned/", views.device_unassigned, name="device_unassigned"),
    path("gpus/assign/", views.device_assign, name="device_assign"),
    path("reconciliation/", views.reconciliation, name="reconciliation"),
    path("pools/<slug:slug>/panel/", views.pool_panel, name="pool_panel"),
    path("rules/", views.rule_list, name="rule_list"),
    path("rules/new/", views.rule_create, name="rule_create"),
    path("rules/<int:pk>/delete/", views.rule_delete, name="rule_delete"),
    path("storage/", views.storage, name="storage"),
    path("sources/", pull_views.pull_source_list, name="pull_source_list"),
    path("sources/new/", pull_views.pull_source_create, name="pull_source_create"),
    path("sources/<slug:slug>/edit/", pull_views.pull_source_edit, name="pull_source_edit"),
    path("connect/", pull_views.connect_fleet, name="connect"),
    path("connect/<int:pk>/", pull_views.connect_run, name="connect_run"),
]
