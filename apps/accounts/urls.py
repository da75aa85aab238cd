from django.urls import path

from apps.accounts import oidc, views

app_name = "accounts"
urlpatterns = [
    path("account/tokens/", views.token_list, name="token_list"),
    path("account/tokens/new/", views.token_create, name="token_create"),
    path("account/tokens/<str:key_id>/revoke/", views.token_delete, name="token_delete"),
    path("account/group-mappings/", views.group_mapping_list, name="group_mapping_list"),
    path("account/group-mappings/new/", views.group_mapping_create, name="group_mapping_create"),
    path(
        "account/group-mappings/<int:pk>/edit/",
        views.group_mapping_edit,
        name="group_mapping_edit",
    ),
    path(
        "account/group-mappings/<int:pk>/delete/",
        views.group_mapping_delete,
        name="group_mapping_delete",
    ),
    path("audit/", views.audit_list, name="audit_list"),
    # Register <gpufleet>/oidc/callback/ as the redirect URI at the provider.
    path("oidc/authenticate/", oidc.SignInView.as_view(), name="oidc_sign_in"),
    path("oidc/callback/", oidc.CallbackView.as_view(), name="oidc_callback"),
]
