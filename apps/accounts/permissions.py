from rest_framework.permissions import SAFE_METHODS, BasePermission

from apps.accounts.models import ApiToken


class ReadOnlyTokenPermission(BasePermission):
    """A request authenticated by a read-only token may only read."""

    message = "This API token is read-only."

    def has_permission(self, request, view):
        if isinstance(request.auth, ApiToken) and request.auth.read_only:
            return request.method in SAFE_METHODS
        return True
