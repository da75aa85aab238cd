from copy import copy

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from apps.accounts import audit, services
from apps.accounts.models import ApiToken, AuditEvent, GroupMapping, OidcIdentity


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["description", "user", "key_id", "read_only", "expires_at", "last_used_at"]
    list_filter = ["read_only"]
    readonly_fields = ["key_id", "secret_sha256", "created_at", "last_used_at"]
    search_fields = ["description", "user__username", "key_id"]

    def has_add_permission(self, request):
        # Tokens are issued from the dashboard, which shows the secret once.
        return False


@admin.register(GroupMapping)
class GroupMappingAdmin(admin.ModelAdmin):
    """Changes go through the services, so the admin's are audited like the page's."""

    list_display = ["idp_group", "role", "team"]
    list_filter = ["role", "team"]
    search_fields = ["idp_group"]

    def save_model(self, request, obj, form, change):
        previous = copy(GroupMapping.objects.get(pk=obj.pk)) if change else None
        services.save_group_mapping(obj, previous=previous)

    def delete_model(self, request, obj):
        services.delete_group_mapping(obj)

    def delete_queryset(self, request, queryset):
        for mapping in queryset:
            services.delete_group_mapping(mapping)


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """Linking an existing account to its provider identity is done here, by hand: SSO
    never matches accounts by email."""

    list_display = ["user", "issuer", "subject", "last_sign_in_at"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["mapped_roles", "mapped_team_ids", "created_at", "last_sign_in_at"]
    raw_id_fields = ["user"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read only: the log is kept forever and has no delete path."""

    list_display = ["at", "kind", "username", "actor_username", "method", "address"]
    list_filter = ["kind", "method"]
    search_fields = ["username", "actor_username"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class AuditedUserAdmin(UserAdmin):
    """Django's user admin; a change of the superuser flag is audited as the
    Administrator role (groups and teams are audited by their m2m signals)."""

    def save_model(self, request, obj, form, change):
        was_superuser = change and User.objects.filter(pk=obj.pk, is_superuser=True).exists()
        super().save_model(request, obj, form, change)
        if obj.is_superuser != was_superuser:
            audit.record_role_change(obj, audit.ADMINISTRATOR, granted=obj.is_superuser)
