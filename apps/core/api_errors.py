"""One DRF exception handler: a delete the database's references refuse (Django's
ProtectedError and RestrictedError) answers 409 JSON naming what still uses the object,
on every endpoint, instead of a 500 HTML page."""

from django.db.models import ProtectedError, RestrictedError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    if isinstance(exc, ProtectedError | RestrictedError):
        objects = list(getattr(exc, "protected_objects", None) or exc.restricted_objects)
        used_by = sorted({str(obj._meta.verbose_name_plural) for obj in objects})
        return Response(
            {
                "detail": (
                    f"It cannot be deleted: {len(objects):,} {', '.join(used_by)} still "
                    "refer to it."
                ),
                "used_by": used_by,
            },
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)
