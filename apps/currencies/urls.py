from django.urls import path

from apps.currencies import views

app_name = "currencies"
urlpatterns = [
    path("", views.exchangerate_list, name="exchangerate_list"),
    path("new/", views.exchangerate_create, name="exchangerate_create"),
    path("import/", views.exchangerate_import, name="exchangerate_import"),
    path("<int:pk>/edit/", views.exchangerate_edit, name="exchangerate_edit"),
    path("<int:pk>/delete/", views.exchangerate_delete, name="exchangerate_delete"),
]
