from django.urls import path

from apps.accounts import views

app_name = "accounts"
urlpatterns = [
    path("tokens/", views.token_list, name="token_list"),
    path("tokens/new/", views.token_create, name="token_create"),
    path("tokens/<str:key_id>/revoke/", views.token_delete, name="token_delete"),
]
