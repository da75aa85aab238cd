from django.urls import path

from apps.procurement import views

app_name = "procurement"
urlpatterns = [
    path("", views.scenario_list, name="scenario_list"),
    path("new/", views.scenario_create, name="scenario_create"),
    path("exports/<int:pk>/", views.export_detail, name="export_detail"),
    path("exports/<int:pk>/download/", views.export_download, name="export_download"),
    path("<slug:slug>/", views.scenario_detail, name="scenario_detail"),
    path("<slug:slug>/edit/", views.scenario_edit, name="scenario_edit"),
    path("<slug:slug>/delete/", views.scenario_delete, name="scenario_delete"),
    path("<slug:slug>/options/new/", views.option_create, name="option_create"),
    path("<slug:slug>/options/<int:pk>/edit/", views.option_edit, name="option_edit"),
    path("<slug:slug>/options/<int:pk>/delete/", views.option_delete, name="option_delete"),
    path("<slug:slug>/prices/import/", views.price_import, name="price_import"),
    path("<slug:slug>/exports/new/", views.export_create, name="export_create"),
]
