"""Clusters: a Kubernetes or Slurm cluster, a cloud account or any other group of
machines that owns pools, telemetry pull sources and Slurm imports. Every install has the
``default`` cluster; pools and pull sources made without naming one join it."""

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

DEFAULT_CLUSTER_SLUG = "default"
DEFAULT_CLUSTER_NAME = "default"


def validate_cluster_timezone(value: str) -> None:
    if value not in available_timezones():
        raise ValidationError(
            gettext("“%(zone)s” is not an IANA time zone, e.g. Asia/Shanghai or UTC.")
            % {"zone": value}
        )


def default_time_zone() -> str:
    return settings.TIME_ZONE


class Cluster(models.Model):
    class Kind(models.TextChoices):
        KUBERNETES = "kubernetes", _("Kubernetes")
        SLURM = "slurm", _("Slurm")
        CLOUD = "cloud", _("Cloud")
        OTHER = "other", _("Other")

    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(
        _("slug"), max_length=100, unique=True, help_text=_("Stable id used by the API.")
    )
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices, default=Kind.OTHER)
    region = models.CharField(_("region"), max_length=100, blank=True)
    # sacct prints Start and End in the local time of the machine it runs on, without an
    # offset: the imports read them in this zone. Each cluster has its own, since one
    # fleet spans regions.
    timezone = models.CharField(
        _("time zone"),
        max_length=64,
        default=default_time_zone,
        validators=[validate_cluster_timezone],
        help_text=_("The zone sacct prints its times in (IANA name, e.g. Asia/Shanghai)."),
    )
    description = models.TextField(_("description"), blank=True)
    # Pulled by the workers' beat with ``sacct`` (apps/slurm/pull.py). The path of sacct
    # is a setting, never a field: a path typed on a page would be run by the workers.
    slurm_pull_enabled = models.BooleanField(
        _("pull Slurm accounting"),
        default=False,
        help_text=_("Run sacct on a schedule on the workers' machine and import its jobs."),
    )
    slurm_pull_interval_minutes = models.PositiveIntegerField(
        _("Slurm pull interval (minutes)"),
        default=60,
        validators=[MinValueValidator(5), MaxValueValidator(7 * 24 * 60)],
    )
    archived_at = models.DateTimeField(
        _("Archived at"),
        null=True,
        blank=True,
        help_text=_("Retired: hidden from lists, kept with its history."),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["name"]
        verbose_name = _("cluster")
        verbose_name_plural = _("clusters")

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("clusters:cluster_detail", kwargs={"slug": self.slug})

    @property
    def zone(self) -> ZoneInfo:
        try:
            return ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            # Stored before the validator ran (a raw insert): read as the site's zone.
            return ZoneInfo(settings.TIME_ZONE)

    @property
    def is_default(self) -> bool:
        return self.slug == DEFAULT_CLUSTER_SLUG


def default_cluster_pk() -> int:
    """The pk of the ``default`` cluster, made on first use: the default of every
    cluster reference. Reads only the pk, so it also works while later migrations of
    this app have not run yet (a data migration of another app calling it)."""
    pk = (
        Cluster._default_manager.filter(slug=DEFAULT_CLUSTER_SLUG)
        .values_list("pk", flat=True)
        .first()
    )
    if pk is None:
        pk = Cluster._default_manager.create(
            name=DEFAULT_CLUSTER_NAME, slug=DEFAULT_CLUSTER_SLUG
        ).pk
    return pk
