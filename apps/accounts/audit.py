"""The audit log: sign-ins, failed sign-ins, sign-outs, and every change of a user's roles
and teams, whichever path made it.

Roles are auth groups and teams have members: the admin, the pages, the API, the SSO sign-in
and management commands all change them through the ORM's many-to-many managers, and
``m2m_changed`` is the one hook that sees every one of them, so the receivers here record
those changes. Who made a change comes from the request being served, which
``AuditContextMiddleware`` keeps in a context variable; outside a request (a management
command) there is no actor and the method says ``command``, and the SSO sign-in applies
its group mapping as ``sso`` with no actor. The sign-in receivers take the request
Django's auth signals pass.
"""

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from axes.helpers import get_client_ip_address
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model
from django.contrib.auth.models import Group

from apps.accounts.models import AuditEvent, Team
from apps.core.sentences import Sentence, gettext_noop, sentence, to_data

Kind = AuditEvent.Kind
Method = AuditEvent.Method
OIDC_BACKEND = "apps.accounts.oidc.OidcBackend"
ADMINISTRATOR = "Administrator"  # the role name roles.role_names_of shows for superusers


@dataclass(frozen=True)
class Context:
    method: str
    request: object = None
    # False while gpufleet acts on its own within a request (the SSO group mapping).
    acting_user: bool = True


# Outside a request (a management command, a shell): no actor, method "command".
NO_REQUEST = Context(Method.COMMAND)
_current: ContextVar[Context | None] = ContextVar("gpufleet_audit", default=None)


def current() -> Context:
    return _current.get() or NO_REQUEST


@contextmanager
def acting(**changes):
    """Within the block, changes are recorded with ``changes`` applied to the context:
    ``acting(method=Method.SSO, acting_user=False)``."""
    token = _current.set(replace(current(), **changes))
    try:
        yield
    finally:
        _current.reset(token)


class AuditContextMiddleware:
    """Keeps the request for the audit receivers: its user is the actor (for the API, the
    token's user once DRF has authenticated it, as DRF sets it on the request). Comes
    after AuthenticationMiddleware."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        method = Method.API if request.path.startswith("/api/") else Method.LOCAL
        token = _current.set(Context(method=method, request=request))
        try:
            return self.get_response(request)
        finally:
            _current.reset(token)


def _address(request):
    if request is None:
        return None
    # Axes' reading of the address: the audit names the address the lockout counts.
    return getattr(request, "axes_ip_address", None) or get_client_ip_address(request) or None


def record(kind, *, subject=None, username="", detail, request=None, method=None, actor=None):
    """Write one event. ``subject`` is the user it concerns; the actor and the address
    default to the context's request."""
    context = current()
    request = request if request is not None else context.request
    if actor is None and context.acting_user and request is not None:
        user = getattr(request, "user", None)
        actor = user if user is not None and user.is_authenticated else None
    return AuditEvent.objects.create(
        kind=kind,
        actor=actor,
        actor_username=actor.get_username() if actor else "",
        subject_user=subject,
        username=subject.get_username() if subject else username,
        address=_address(request),
        method=method or context.method,
        detail=to_data(detail),
    )


def provider_name() -> str:
    return settings.OIDC_PROVIDER_NAME


# --- Sign-in, failed sign-in, sign-out (django.contrib.auth signals) ------------------


def _signed_in_with_sso(request, user) -> bool:
    backend = getattr(user, "backend", None)
    if backend is None and request is not None and hasattr(request, "session"):
        backend = request.session.get(BACKEND_SESSION_KEY)
    return backend == OIDC_BACKEND


def on_signed_in(sender, request, user, **kwargs):
    if _signed_in_with_sso(request, user):
        detail = sentence(gettext_noop("Signed in with %(provider)s."), provider=provider_name())
        method = Method.SSO
    else:
        detail, method = sentence(gettext_noop("Signed in with a password.")), Method.LOCAL
    record(Kind.SIGN_IN, subject=user, detail=detail, request=request, method=method, actor=user)


def on_sign_in_failed(sender, credentials, request=None, **kwargs):
    if "nonce" in credentials:
        # An SSO callback: its view records the failure with the provider's reason.
        return
    username = str(credentials.get("username") or "")[:150]
    user = get_user_model().objects.filter(username=username).first() if username else None
    parts = [
        sentence(gettext_noop("Wrong username or password for %(username)s."), username=username)
    ]
    if request is not None and getattr(request, "axes_locked_out", False):
        parts.append(sentence(gettext_noop(" Locked out after repeated failures.")))
    record(
        Kind.SIGN_IN_FAILED,
        subject=user,
        username=username,
        detail=parts,
        request=request,
        method=Method.LOCAL,
    )


def record_sso_failure(request, reason: Sentence):
    record(
        Kind.SIGN_IN_FAILED,
        detail=sentence(
            gettext_noop("Sign-in with %(provider)s failed: %(reason)s"),
            provider=provider_name(),
            reason=reason,
        ),
        request=request,
        method=Method.SSO,
    )


def on_signed_out(sender, request, user, **kwargs):
    if user is None:
        return
    sso = _signed_in_with_sso(request, user)
    record(
        Kind.SIGN_OUT,
        subject=user,
        detail=sentence(gettext_noop("Signed out.")),
        request=request,
        method=Method.SSO if sso else Method.LOCAL,
        actor=user,
    )


# --- Roles and teams (m2m_changed) --------------------------------------------------------


def role_label(group_name: str) -> Sentence:
    """A role's name, translated where it is read (role names are msgids)."""
    return Sentence(group_name)


def record_role_change(user, role_name: str, *, granted: bool):
    values = {"user": user.get_username(), "role": role_label(role_name)}
    if granted:
        detail = sentence(gettext_noop("%(user)s was given the role %(role)s."), **values)
    else:
        detail = sentence(gettext_noop("%(user)s no longer has the role %(role)s."), **values)
    record(Kind.ROLE_GRANTED if granted else Kind.ROLE_REVOKED, subject=user, detail=detail)


def record_team_change(user, team_name: str, *, joined: bool):
    values = {"user": user.get_username(), "team": team_name}
    if joined:
        detail = sentence(gettext_noop("%(user)s joined the team %(team)s."), **values)
    else:
        detail = sentence(gettext_noop("%(user)s left the team %(team)s."), **values)
    record(Kind.TEAM_JOINED if joined else Kind.TEAM_LEFT, subject=user, detail=detail)


def _pairs(instance, reverse, model, pk_set, *, user_side_reverse: bool):
    """(user, other) for each changed row, whichever side the change was made from.
    ``user_side_reverse`` tells whether the user is the instance when ``reverse`` is
    False (``user.groups``) or True (``user.teams``)."""
    others = sorted(model.objects.filter(pk__in=pk_set), key=str)
    if reverse == user_side_reverse:
        return [(instance, other) for other in others]
    return [(other, instance) for other in others]


def _membership_changed(instance, action, reverse, model, pk_set, *, user_side_reverse, note):
    if action == "pre_clear":
        # The rows are gone by post_clear: what is cleared is read now.
        instance._audit_cleared = set(_current_pks(instance, reverse, user_side_reverse))
        return
    if action == "post_clear":
        pk_set, granted = getattr(instance, "_audit_cleared", set()), False
    elif action in ("post_add", "post_remove"):
        granted = action == "post_add"
    else:
        return
    if not pk_set:
        return
    for user, other in _pairs(
        instance, reverse, model, pk_set, user_side_reverse=user_side_reverse
    ):
        note(user, other, granted)


def _current_pks(instance, reverse, user_side_reverse):
    if isinstance(instance, Group):
        return instance.user_set.values_list("pk", flat=True)
    if isinstance(instance, Team):
        return instance.members.values_list("pk", flat=True)
    if user_side_reverse:  # a user's teams
        return instance.teams.values_list("pk", flat=True)
    return instance.groups.values_list("pk", flat=True)


def on_groups_changed(sender, instance, action, reverse, model, pk_set, **kwargs):
    _membership_changed(
        instance,
        action,
        reverse,
        model,
        pk_set,
        user_side_reverse=False,
        note=lambda user, group, granted: record_role_change(user, group.name, granted=granted),
    )


def on_team_members_changed(sender, instance, action, reverse, model, pk_set, **kwargs):
    _membership_changed(
        instance,
        action,
        reverse,
        model,
        pk_set,
        user_side_reverse=True,
        note=lambda user, team, joined: record_team_change(user, team.name, joined=joined),
    )
