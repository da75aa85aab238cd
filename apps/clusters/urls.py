from django.urls import path

from apps.clusters import views

app_name = "clusters"
urlpatterns = [
    path("", views.cluster_list, name="cluster_list"),
    path("new/", views.cluster_create, name="cluster_create"),
    path("<slug:slug>/", views.cluster_detail, name="cluster_detail"),
    path("<slug:slug>/edit/", views.cluster_edit, name="cluster_edit"),
    path("<slug:slug>/delete/", views.cluster_delete, name="cluster_delete"),
    path("<slug:slug>/archive/", views.cluster_archive, name="cluster_archive"),
    path("<slug:slug>/restore/", views.cluster_restore, name="cluster_restore"),
]
