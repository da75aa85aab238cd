"""API tokens for scripts and agents.

Like NetBox's v2 tokens and Grafana's service-account tokens, the secret is shown once
and only its SHA-256 digest is stored: the database never holds a usable credential.
A token is ``gpf_<key_id>_<secret>``; ``key_id`` is stored in clear to find the row,
the digest authenticates it.

Beside them: teams, single sign-on identities and the group mapping that gives SSO users
their roles and teams, and the audit log of sign-ins and role and team changes.
"""

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.core.texts import translated_data

TOKEN_PREFIX = "gpf"  # noqa: S105 - a public marker, not a secret
KEY_ID_BYTES = 6  # 12 hex chars: enough to find a row, not enough to guess a token
SECRET_BYTES = 32  # 256 bits of entropy, so a fast hash is sufficient (no key stretching)
# last_used_at is written at most this often, to spare a write on every API call.
LAST_USED_WRITE_INTERVAL = timedelta(minutes=1)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def active(self):
        return self.filter(expires_at__gt=timezone.now())


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    description = models.CharField(_("description"), max_length=200)
    key_id = models.CharField(max_length=2 * KEY_ID_BYTES, unique=True, editable=False)
    secret_sha256 = models.CharField(max_length=64, editable=False)
    read_only = models.BooleanField(
        _("read only"),
        default=True,
        help_text=_("A read-only token can read everything and change nothing."),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self):
        return f"{self.description} ({self.key_id})"

    @classmethod
    def issue(cls, *, user, description: str, lifetime: timedelta, read_only: bool):
        """Create a token and return ``(token, plaintext)``; the plaintext is not kept."""
        key_id = secrets.token_hex(KEY_ID_BYTES)
        secret = secrets.token_urlsafe(SECRET_BYTES)
        token = cls.objects.create(
            user=user,
            description=description,
            key_id=key_id,
            secret_sha256=hash_secret(secret),
            read_only=read_only,
            expires_at=timezone.now() + lifetime,
        )
        return token, f"{TOKEN_PREFIX}_{key_id}_{secret}"

    @staticmethod
    def split(plaintext: str) -> tuple[str, str] | None:
        parts = plaintext.split("_", 2)
        if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
            return None
        return parts[1], parts[2]

    def matches(self, secret: str) -> bool:
        return hmac.compare_digest(self.secret_sha256, hash_secret(secret))

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    def mark_used(self):
        now = timezone.now()
        if self.last_used_at is None or now - self.last_used_at > LAST_USED_WRITE_INTERVAL:
            ApiToken.objects.filter(pk=self.pk).update(last_used_at=now)
            self.last_used_at = now


class Team(models.Model):
    """A group of people who own pools and workloads and pay for them (showback).

    A pool or workload without a team is shared: everyone who can sign in sees it. One
    with a team is seen only by the team's members and by the fleet-wide roles
    (superusers and Finance), as NetBox scopes objects by tenant.
    """

    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(
        _("slug"), max_length=100, unique=True, help_text=_("Stable id used by the API.")
    )
    description = models.TextField(_("description"), blank=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="teams", verbose_name=_("members")
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("team")
        verbose_name_plural = _("teams")

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        # The team pages live in apps/showback, above this app: named, not imported.
        return reverse("showback:team_detail", kwargs={"slug": self.slug})


class MappedRole(models.TextChoices):
    """What an identity-provider group may give: a role of apps/core/roles.py, or
    Administrator (superuser and staff)."""

    LEAD = "lead", _("Technical lead")
    OPS = "ops", _("Ops")
    PROCUREMENT = "procurement", _("Procurement")
    FINANCE = "finance", _("Finance")
    ADMIN = "admin", _("Administrator")


class OidcIdentity(models.Model):
    """A user's account at an OpenID Connect provider: its issuer and subject (``sub``).

    SSO sign-ins find their user by this pair, never by email or username, which the
    provider lets people change: a renamed address cannot reach someone else's account.
    ``mapped_roles`` and ``mapped_team_ids`` are what the group mapping gave at the last
    sign-in, so a role or team the mapping stops giving is taken back at the next one.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities"
    )
    issuer = models.CharField(_("issuer"), max_length=255)
    subject = models.CharField(_("subject"), max_length=255)
    mapped_roles = models.JSONField(default=list, blank=True, editable=False)
    mapped_team_ids = models.JSONField(default=list, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_unique")
        ]
        verbose_name = _("single sign-on identity")
        verbose_name_plural = _("single sign-on identities")

    def __str__(self):
        return f"{self.subject} @ {self.issuer}"


class GroupMapping(models.Model):
    """An identity-provider group gives a role, a team membership, or both, at every SSO
    sign-in (apps/accounts/services.py ``apply_group_mapping``)."""

    idp_group = models.CharField(
        _("identity provider group"),
        max_length=255,
        help_text=_("The group's name as the provider sends it in the groups claim."),
    )
    role = models.CharField(_("role"), max_length=20, choices=MappedRole.choices, blank=True)
    team = models.ForeignKey(
        Team,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="group_mappings",
        verbose_name=_("team"),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["idp_group", "role", "team__name"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(role="") | models.Q(team__isnull=False),
                name="group_mapping_gives_something",
            )
        ]
        verbose_name = _("group mapping")
        verbose_name_plural = _("group mappings")

    def __str__(self):
        return f"{self.idp_group} → {self.target}"

    @property
    def name(self) -> str:
        return str(self)

    @property
    def target(self) -> str:
        """What the group gives, in English ("Technical lead, team vision")."""
        parts = [MappedRole(self.role).label] if self.role else []
        if self.team_id:
            parts.append(f"team {self.team}")
        return ", ".join(str(part) for part in parts)


class AuditEvent(models.Model):
    """Who signed in, failed to, signed out, and whose roles and teams changed, by whom.

    Kept forever: nothing in gpufleet deletes an event (the admin and the API only read),
    and deleting a user keeps their events: the foreign keys are set to NULL and the
    usernames stay as text. ``detail`` holds the sentence parts (apps/core/sentences.py),
    read in each reader's language.
    """

    class Kind(models.TextChoices):
        SIGN_IN = "sign_in", _("Signed in")
        SIGN_IN_FAILED = "sign_in_failed", _("Sign-in failed")
        SIGN_OUT = "sign_out", _("Signed out")
        ROLE_GRANTED = "role_granted", _("Role granted")
        ROLE_REVOKED = "role_revoked", _("Role revoked")
        TEAM_JOINED = "team_joined", _("Joined a team")
        TEAM_LEFT = "team_left", _("Left a team")
        MAPPING_CHANGED = "mapping_changed", _("Group mapping changed")
        MONTH_CLOSED = "month_closed", _("Month closed")
        MONTH_REOPENED = "month_reopened", _("Month reopened")

    class Method(models.TextChoices):
        LOCAL = "local", _("Password or page")
        SSO = "sso", _("Single sign-on")
        API = "api", "API"
        COMMAND = "command", _("Command line")

    at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)
    kind = models.CharField(_("event"), max_length=20, choices=Kind.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("by"),
    )
    actor_username = models.CharField(_("by (username)"), max_length=150, blank=True)
    subject_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="audit_events",
        verbose_name=_("user"),
    )
    # The subject's username as it was, and the name a failed sign-in typed.
    username = models.CharField(_("username"), max_length=150, blank=True)
    address = models.GenericIPAddressField(_("address"), null=True, blank=True)
    method = models.CharField(_("method"), max_length=10, choices=Method.choices)
    detail = models.JSONField(_("detail"), default=list, blank=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["kind", "-at"], name="audit_kind_at")]
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.kind} {self.username}"

    @property
    def sentence(self) -> str:
        """What happened, in the active language."""
        return translated_data(self.detail, fallback=self.get_kind_display())
