from django.urls import path

from apps.reports import views

app_name = "reports"
urlpatterns = [
    path("reports/", views.report, name="report"),
    path("reports/explain/", views.report_explain, name="report_explain"),
    path("reports/pools/<slug:slug>/", views.pool_panel, name="pool_panel"),
    path(
        "reports/pools/<slug:slug>/lendable/",
        views.pool_lending_panel,
        name="pool_lending_panel",
    ),
    path("reports/lendable/", views.lendable_list, name="lendable_list"),
    path("reports/recompute/", views.recompute_create, name="recompute_create"),
    path("reports/recompute/<int:pk>/", views.recompute_detail, name="recompute_detail"),
    path("interruptions/", views.interruption_list, name="interruption_list"),
    path("interruptions/new/", views.interruption_create, name="interruption_create"),
    path("interruptions/<int:pk>/", views.interruption_detail, name="interruption_detail"),
    path("interruptions/<int:pk>/edit/", views.interruption_edit, name="interruption_edit"),
    path("interruptions/<int:pk>/delete/", views.interruption_delete, name="interruption_delete"),
]
