from django.urls import path

from apps.pilots import views

app_name = "pilots"
urlpatterns = [
    path("workloads/<slug:slug>/pilots/", views.pilot_list, name="pilot_list"),
    path("workloads/<slug:slug>/pilots/fit/", views.workload_fit, name="workload_fit"),
    path("workloads/<slug:slug>/pilots/<int:pk>/delete/", views.pilot_delete, name="pilot_delete"),
]
