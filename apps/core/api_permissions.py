from rest_framework.permissions import SAFE_METHODS, DjangoModelPermissions


class ModelPermissionsOrReadOnly(DjangoModelPermissions):
    """Every signed-in user reads; writes need the model's add/change/delete permission.

    Views without a queryset (estimates, "me") are allowed through to their own checks.
    """

    def has_permission(self, request, view):
        if request.method in SAFE_METHODS:
            return True
        if getattr(view, "queryset", None) is None and not hasattr(view, "get_queryset"):
            return True
        return super().has_permission(request, view)
