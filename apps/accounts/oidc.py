"""Sign-in with an OpenID Connect provider, through mozilla-django-oidc.

mozilla-django-oidc is OIDC only: one authentication backend and three views, with no
account pages of its own to secure. gpufleet adds what it leaves to the project:

- the provider's endpoints come from its discovery document
  (``<OIDC_ISSUER>/.well-known/openid-configuration``), read at the first sign-in and
  kept for an hour, unless set explicitly (``OIDC_OP_*_ENDPOINT``);
- the ID token's issuer and audience are checked, and the userinfo ``sub`` must be the ID
  token's (OpenID Connect Core 5.3.2);
- users are found by issuer and subject (``OidcIdentity``), never by email, and get their
  roles and teams from the group mapping at every sign-in (``services.sso_sign_in``);
- sign-out goes through the provider's ``end_session_endpoint`` when it has one.

With ``OIDC_ISSUER`` empty, SSO is off: the backend authenticates nobody and the views
answer 404.
"""

import logging
import threading
import time
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
    OIDCLogoutView,
)

from apps.accounts import audit, services
from apps.core.sentences import Sentence, gettext_noop, sentence

logger = logging.getLogger(__name__)

# Setting → the discovery document's key (OpenID Connect Discovery 1.0, section 3).
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_END_SESSION_ENDPOINT": "end_session_endpoint",
}
DISCOVERY_KEPT_SECONDS = 3600
_discovered: dict[str, tuple[float, dict]] = {}
_discovery_lock = threading.Lock()


def sso_enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def discovery() -> dict:
    """The provider's discovery document, fetched once an hour per issuer."""
    issuer = settings.OIDC_ISSUER
    with _discovery_lock:
        kept = _discovered.get(issuer)
        if kept and time.monotonic() - kept[0] < DISCOVERY_KEPT_SECONDS:
            return kept[1]
    response = requests.get(
        f"{issuer}/.well-known/openid-configuration", timeout=settings.OIDC_TIMEOUT
    )
    response.raise_for_status()
    document = response.json()
    if str(document.get("issuer", "")).rstrip("/") != issuer:
        raise SuspiciousOperation(
            f"The discovery document of {issuer} names another issuer: {document.get('issuer')}"
        )
    with _discovery_lock:
        _discovered[issuer] = (time.monotonic(), document)
    return document


def endpoint(setting: str) -> str:
    """An endpoint's URL: the explicit setting, else the discovery document's."""
    explicit = getattr(settings, setting, "")
    if explicit:
        return explicit
    return discovery().get(ENDPOINTS[setting], "")


def oidc_setting(name, *default):
    """mozilla-django-oidc's ``get_settings``, with the endpoints discovered."""
    if name in ENDPOINTS:
        return endpoint(name)
    if name == "OIDC_TOKEN_USE_BASIC_AUTH":
        # client_secret_basic is the default of OpenID Connect Core 9 and what discovery
        # implies when it lists no methods; client_secret_post only when the provider
        # offers nothing else.
        methods = discovery().get("token_endpoint_auth_methods_supported", [])
        return not methods or "client_secret_basic" in methods
    return import_from_settings(name, *default)


class OidcBackend(OIDCAuthenticationBackend):
    """The SSO backend: authenticates only the callback of a sign-in started here."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args, **kwargs):
        # mozilla-django-oidc reads every endpoint here, and Django builds the backends for
        # each password sign-in too: endpoints are read when a callback needs them.
        self.UserModel = get_user_model()

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: endpoint("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: endpoint("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: endpoint("OIDC_OP_JWKS_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_RP_CLIENT_SECRET = property(lambda self: settings.OIDC_RP_CLIENT_SECRET)
    OIDC_RP_SIGN_ALGO = property(lambda self: settings.OIDC_RP_SIGN_ALGO)
    OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request, **credentials):
        # The callback view passes nonce and code_verifier; a password sign-in never does.
        if not sso_enabled() or request is None or "nonce" not in credentials:
            return None
        if "username" in credentials or "password" in credentials:
            return None
        return super().authenticate(request, **credentials)

    def verify_token(self, token, **kwargs):
        payload = super().verify_token(token, **kwargs)
        if "aud" in payload:  # an ID token (a signed userinfo response need not have one)
            audience = payload["aud"] if isinstance(payload["aud"], list) else [payload["aud"]]
            if settings.OIDC_RP_CLIENT_ID not in audience:
                raise SuspiciousOperation("The ID token is not meant for this client.")
            if str(payload.get("iss", "")).rstrip("/") != settings.OIDC_ISSUER:
                raise SuspiciousOperation("The ID token comes from another issuer.")
        return payload

    def verify_claims(self, claims):
        return bool(claims.get("sub"))

    def get_or_create_user(self, access_token, id_token, payload):
        claims = self.get_userinfo(access_token, id_token, payload)
        if not self.verify_claims(claims) or claims["sub"] != payload.get("sub"):
            raise SuspiciousOperation("The userinfo subject is not the ID token's.")
        groups = claims.get(settings.OIDC_GROUPS_CLAIM, payload.get(settings.OIDC_GROUPS_CLAIM))
        return services.sso_sign_in(
            issuer=settings.OIDC_ISSUER, claims=claims, idp_groups=_group_names(groups)
        )

    def get_user(self, user_id):
        # Django's check, which mozilla-django-oidc's get_user skips: a deactivated user's
        # session ends at its next request.
        return ModelBackend.get_user(self, user_id)


def _group_names(groups) -> set[str]:
    """The groups claim as names: a list, or one name, as providers send it."""
    if isinstance(groups, str):
        return {groups}
    if isinstance(groups, list | tuple):
        return {str(group) for group in groups}
    return set()


def _reason(error) -> Sentence:
    if isinstance(error, requests.RequestException):
        return sentence(
            gettext_noop("the provider could not be reached (%(error)s)."),
            error=type(error).__name__,
        )
    return sentence(
        gettext_noop("the provider's answer was refused (%(error)s)."), error=str(error)[:200]
    )


def _sso_failed(request, reason: Sentence):
    audit.record_sso_failure(request, reason)
    messages.error(
        request,
        _("Sign-in with %(provider)s did not succeed. Try again, or sign in with a local account.")
        % {"provider": settings.OIDC_PROVIDER_NAME},
    )
    return HttpResponseRedirect(resolve_url(settings.LOGIN_URL))


class SsoViewMixin:
    """404 while SSO is off; a provider that cannot be reached, or an answer refused,
    sends the browser back to the sign-in page saying so, and is audited."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request):
        if not sso_enabled():
            raise Http404
        try:
            return super().get(request)
        except (requests.RequestException, SuspiciousOperation) as error:
            logger.warning("OIDC sign-in failed: %s", error)
            return _sso_failed(request, _reason(error))


@method_decorator(login_not_required, name="dispatch")
class SignInView(SsoViewMixin, OIDCAuthenticationRequestView):
    """Sends the browser to the provider's authorization endpoint."""

    def __init__(self, *args, **kwargs):
        # Skips mozilla-django-oidc's, which reads the endpoint before any request.
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)

    OIDC_OP_AUTH_ENDPOINT = property(lambda self: endpoint("OIDC_OP_AUTHORIZATION_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)


@method_decorator(login_not_required, name="dispatch")
class CallbackView(SsoViewMixin, OIDCAuthenticationCallbackView):
    """The provider's redirect back: exchanges the code, signs the user in."""

    def login_failure(self):
        error = self.request.GET.get("error")
        if error:
            reason = sentence(gettext_noop("the provider answered %(error)s."), error=error[:100])
        else:
            reason = sentence(gettext_noop("gpufleet refused the provider's answer."))
        return _sso_failed(self.request, reason)


@method_decorator(login_not_required, name="dispatch")
class SignOutView(OIDCLogoutView):
    """Ends the session, then the provider's when the user signed in with it."""

    http_method_names = ["post"]
    get_settings = staticmethod(oidc_setting)


def end_session_url(request) -> str:
    """Where sign-out goes (``OIDC_OP_LOGOUT_URL_METHOD``): the provider's end-session
    endpoint with the ID token as hint and the sign-in page to come back to, for a user
    signed in with SSO; the sign-in page otherwise (OpenID Connect RP-Initiated Logout)."""
    login_url = resolve_url(settings.LOGOUT_REDIRECT_URL)
    if not sso_enabled() or not settings.OIDC_END_SESSION:
        return login_url
    if request.session.get(BACKEND_SESSION_KEY) != audit.OIDC_BACKEND:
        return login_url
    try:
        end_session = endpoint("OIDC_OP_END_SESSION_ENDPOINT")
    except (requests.RequestException, SuspiciousOperation) as error:
        logger.warning("OIDC end-session endpoint unknown, signing out here only: %s", error)
        return login_url
    if not end_session:
        return login_url
    params = {
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "post_logout_redirect_uri": request.build_absolute_uri(login_url),
    }
    id_token = request.session.get("oidc_id_token")
    if id_token:
        params["id_token_hint"] = id_token
    separator = "&" if "?" in end_session else "?"
    return f"{end_session}{separator}{urlencode(params)}"


def sign_in_url() -> str:
    return reverse("accounts:oidc_sign_in")
