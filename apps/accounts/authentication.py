from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions

from apps.accounts.models import ApiToken


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer gpf_<key_id>_<secret>`` (``Token`` is accepted too)."""

    keywords = ("bearer", "token")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                _("Authorization header must be 'Bearer <token>'.")
            )
        plaintext = header[1].decode(errors="replace")
        parts = ApiToken.split(plaintext)
        if parts is None:
            raise exceptions.AuthenticationFailed(_("Malformed API token."))
        key_id, secret = parts
        token = ApiToken.objects.select_related("user").filter(key_id=key_id).first()
        if token is None or not token.matches(secret):
            raise exceptions.AuthenticationFailed(_("Invalid API token."))
        if token.is_expired:
            raise exceptions.AuthenticationFailed(_("API token expired."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token.mark_used()
        return token.user, token

    def authenticate_header(self, request):
        # Makes DRF answer 401 (with WWW-Authenticate) rather than 403 for bad tokens.
        return 'Bearer realm="api"'
