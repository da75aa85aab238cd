from django.urls import path

from apps.core import views
from apps.reports.views import overview

app_name = "core"
urlpatterns = [
    path("", overview, name="overview"),
    path("users/", views.user_list, name="user_list"),
]
