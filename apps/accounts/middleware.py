"""Session idle timeout, beside the absolute lifetime of SESSION_COOKIE_AGE."""

import time

from django.conf import settings
from django.contrib.auth import logout

# Where the time of the session's last request is kept, in seconds since the epoch.
LAST_ACTIVITY_SESSION_KEY = "gpufleet_last_activity_epoch_seconds"
# Storing every request's time would write the session row on every request; a minute's
# precision is plenty for a timeout counted in hours.
ACTIVITY_WRITE_INTERVAL_SECONDS = 60


def start_idle_clock(sender, request, user, **kwargs):
    """Receiver of user_logged_in: the idle time counts from sign-in."""
    if request is not None and hasattr(request, "session"):
        request.session[LAST_ACTIVITY_SESSION_KEY] = int(time.time())


class SessionIdleTimeoutMiddleware:
    """Signs out a session that made no request for SESSION_IDLE_TIMEOUT.

    SESSION_COOKIE_AGE still ends every session that long after sign-in, however busy;
    this ends an unattended one sooner. Token-authenticated API requests carry no session
    and are not affected. Must come after AuthenticationMiddleware and before
    LoginRequiredMiddleware, which then sends the signed-out visitor to the sign-in page.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            now_epoch_seconds = int(time.time())
            last_activity = request.session.get(LAST_ACTIVITY_SESSION_KEY)
            idle_seconds = settings.SESSION_IDLE_TIMEOUT.total_seconds()
            if last_activity is not None and now_epoch_seconds - last_activity > idle_seconds:
                logout(request)
            elif (
                last_activity is None
                or now_epoch_seconds - last_activity >= ACTIVITY_WRITE_INTERVAL_SECONDS
            ):
                request.session[LAST_ACTIVITY_SESSION_KEY] = now_epoch_seconds
        return self.get_response(request)
