from django.urls import path

from apps.catalog import views

app_name = "catalog"
urlpatterns = [
    path("", views.gpu_model_list, name="gpu_model_list"),
    path("gpus/new/", views.gpu_model_create, name="gpu_model_create"),
    path("gpus/<slug:slug>/", views.gpu_model_detail, name="gpu_model_detail"),
    path("gpus/<slug:slug>/edit/", views.gpu_model_edit, name="gpu_model_edit"),
    path("gpus/<slug:slug>/delete/", views.gpu_model_delete, name="gpu_model_delete"),
    path("models/", views.architecture_list, name="architecture_list"),
    path("models/new/", views.architecture_create, name="architecture_create"),
    path("models/<slug:slug>/", views.architecture_detail, name="architecture_detail"),
    path("models/<slug:slug>/edit/", views.architecture_edit, name="architecture_edit"),
    path("models/<slug:slug>/delete/", views.architecture_delete, name="architecture_delete"),
]
