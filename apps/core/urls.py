from django.urls import path

from apps.core import views

app_name = "core"
urlpatterns = [
    path("users/", views.user_list, name="user_list"),
]
