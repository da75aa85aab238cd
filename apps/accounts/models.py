"""API tokens for scripts and agents.

Like NetBox's v2 tokens and Grafana's service-account tokens, the secret is shown once
and only its SHA-256 digest is stored: the database never holds a usable credential.
A token is ``gpf_<key_id>_<secret>``; ``key_id`` is stored in clear to find the row,
the digest authenticates it.
"""

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

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
