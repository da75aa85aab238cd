"""The one guard of object views: 404 before 403, the object fetched once.

An object outside the requesting user's scope answers 404 whatever the role, exactly as a
missing one does, so its existence is not disclosed (NetBox answers another tenant's
object the same way); only an object in scope meets the permission, and lacking it
answers 403. The scope is a queryset the caller passes (the core knows no teams): the
object is fetched from it once, and that fetch is the scope check.

A permission is a codename (``"pools.change_pool"``), or a callable taking the request
that raises ``PermissionDenied`` with its reason (``superuser_only(...)``).
"""

from collections.abc import Callable
from functools import wraps

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _

Permission = str | Callable | None

ADMINISTRATORS_ONLY = _("Only administrators see this page.")


def require(request, permission: Permission) -> None:
    """403 unless the requesting user holds ``permission`` (None: everyone signed in)."""
    if permission is None:
        return
    if callable(permission):
        permission(request)
    elif not request.user.has_perm(permission):
        raise PermissionDenied


def guarded_object(request, objects, lookup: dict, *, permission: Permission = None, check=None):
    """The object ``lookup`` names among ``objects`` (the ones in the requesting user's
    scope), fetched once: 404 when it is not among them, then 403 without ``permission``
    or when ``check(request, obj)`` refuses this object in particular."""
    obj = get_object_or_404(objects, **lookup)
    require(request, permission)
    if check is not None:
        check(request, obj)
    return obj


def superuser_only(message=ADMINISTRATORS_ONLY):
    """A permission held by superusers only, refused with ``message``."""

    def permission(request):
        if not request.user.is_superuser:
            raise PermissionDenied(message)

    return permission


def superuser_required(view=None, *, message=ADMINISTRATORS_ONLY):
    """View decorator: 403 with ``message`` for anyone but a superuser. Used bare
    (``@superuser_required``) or with the page's own reason."""
    permission = superuser_only(message)

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            permission(request)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator(view) if view is not None else decorator
