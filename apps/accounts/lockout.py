"""Sign-in lockout: per username from an address, and per address across usernames."""

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum


def address_failures(request) -> int:
    """Failed sign-ins from the request's address within the cool-off, whatever username
    they tried."""
    attempts = AccessAttempt.objects.filter(ip_address=request.axes_ip_address)
    if settings.AXES_COOLOFF_TIME is not None:
        attempts = attempts.filter(attempt_time__gte=get_cool_off_threshold(request))
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


class AddressAndUsernameLockoutHandler(AxesDatabaseHandler):
    """Axes' database handler with a second, higher limit per address.

    Axes compares every combination in AXES_LOCKOUT_PARAMETERS with one
    AXES_FAILURE_LIMIT. A username from an address gets that limit (a person mistyping
    their password); an address spraying one password over many usernames gets
    AXES_ADDRESS_FAILURE_LIMIT in total, so that colleagues behind one NAT can still
    mistype theirs.
    """

    def is_locked(self, request, credentials=None) -> bool:
        if super().is_locked(request, credentials):
            return True
        return (
            settings.AXES_LOCK_OUT_AT_FAILURE
            and address_failures(request) >= settings.AXES_ADDRESS_FAILURE_LIMIT
        )

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        super().user_login_failed(sender, credentials, request=request, **kwargs)
        if (
            request is not None
            and settings.AXES_LOCK_OUT_AT_FAILURE
            and not getattr(request, "axes_locked_out", False)
            and not self.is_whitelisted(request, credentials)
            and address_failures(request) >= settings.AXES_ADDRESS_FAILURE_LIMIT
        ):
            request.axes_locked_out = True
            request.axes_credentials = credentials
