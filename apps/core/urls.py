from django.urls import path

from apps.core import views

app_name = "core"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("backups/", views.backups, name="backups"),
    path("reports/", views.reports, name="reports"),
    path("procurement/", views.procurement, name="procurement"),
    path("users/", views.user_list, name="user_list"),
]
