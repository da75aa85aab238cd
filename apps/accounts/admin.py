from django.contrib import admin

from apps.accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["description", "user", "key_id", "read_only", "expires_at", "last_used_at"]
    list_filter = ["read_only"]
    readonly_fields = ["key_id", "secret_sha256", "created_at", "last_used_at"]
    search_fields = ["description", "user__username", "key_id"]

    def has_add_permission(self, request):
        # Tokens are issued from the dashboard, which shows the secret once.
        return False
