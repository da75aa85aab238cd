from django.urls import path

from apps.dashboard import views

app_name = "dashboard"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("reports/explain/overview/", views.overview_explain, name="overview_explain"),
]
