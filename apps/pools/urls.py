from django.urls import path

from apps.pools import views

app_name = "pools"
urlpatterns = [
    path("pools/", views.pool_list, name="pool_list"),
    path("pools/new/", views.pool_create, name="pool_create"),
    path("pools/<slug:slug>/", views.pool_detail, name="pool_detail"),
    path("pools/<slug:slug>/edit/", views.pool_edit, name="pool_edit"),
    path("pools/<slug:slug>/delete/", views.pool_delete, name="pool_delete"),
    path("pools/<slug:slug>/archive/", views.pool_archive, name="pool_archive"),
    path("pools/<slug:slug>/restore/", views.pool_restore, name="pool_restore"),
    path("calculator/", views.calculator, name="calculator"),
    path("workloads/", views.workload_list, name="workload_list"),
    path("workloads/new/", views.workload_create, name="workload_create"),
    path("workloads/<slug:slug>/", views.workload_detail, name="workload_detail"),
    path("workloads/<slug:slug>/edit/", views.workload_edit, name="workload_edit"),
    path("workloads/<slug:slug>/delete/", views.workload_delete, name="workload_delete"),
    path("workloads/<slug:slug>/archive/", views.workload_archive, name="workload_archive"),
    path("workloads/<slug:slug>/restore/", views.workload_restore, name="workload_restore"),
]
