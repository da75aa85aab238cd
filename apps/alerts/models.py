"""Alert rules, the channels they notify, the alerts they raise, every notification sent
(or held back) and the silences that hold them back.

An **alert** is one subject breaching one rule, from the evaluation that first saw it to
the one that no longer does: one row firing, then resolved, never one per evaluation.
Each alert is told to each channel at most once firing and once resolved — a
**delivery** per (alert, channel, event), unique in the database, so a repeated
evaluation or a redelivered task never notifies twice. A delivery keeps what it sends
(its payload), its attempts and the sentence of its last error.

A rule and a channel may belong to a team (None: fleet-wide): a team's rule looks only
at what the team sees (its pools and workloads, and the shared ones) and notifies the
team's channels or the shared ones. Who sees an alert follows its subject's team.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, validate_email
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from apps.alerts import registry
from apps.alerts.notify import shown_address
from apps.core.sentences import Sentence, to_data
from apps.core.texts import translated_data

KIND_CHOICES = [(value, _(label)) for value, label in registry.KINDS]


class ScopedQuerySet(models.QuerySet):
    # The team field that decides who sees a row.
    scope_field = "team"

    def in_scope(self, scope):
        """Rows of the scope's teams and the fleet-wide (or shared) ones
        (apps/accounts/scope.py)."""
        return self.filter(scope.team_filter(self.scope_field))


class AlertChannel(models.Model):
    class Kind(models.TextChoices):
        WEBHOOK = "webhook", _("Webhook (Alertmanager JSON)")
        SLACK = "slack", _("Slack-compatible incoming webhook")
        EMAIL = "email", _("Email")

    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(
        _("slug"), max_length=100, unique=True, help_text=_("Stable id used by the API.")
    )
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    url = models.URLField(
        _("URL"),
        max_length=500,
        blank=True,
        help_text=_(
            "Webhook: where the Alertmanager JSON is posted. Slack: the incoming webhook's URL."
        ),
    )
    to = models.CharField(
        _("to"),
        max_length=1000,
        blank=True,
        help_text=_("Email: the addresses, separated by commas."),
    )
    language = models.CharField(
        _("language"),
        max_length=10,
        choices=settings.LANGUAGES,
        default="en",
        help_text=_("The language of the chat messages, emails and annotations it is sent."),
    )
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="alert_channels",
        verbose_name=_("team"),
        help_text=_("The team whose rules may use it; none: every rule may."),
    )
    enabled = models.BooleanField(
        _("enabled"), default=True, help_text=_("Off: notifications are recorded, not sent.")
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = _("alert channel")
        verbose_name_plural = _("alert channels")

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("alerts:channel_detail", kwargs={"slug": self.slug})

    def destination_for(self, user) -> str:
        """Where it sends, as ``user`` may read it: a chat webhook's path is its secret,
        so only those who may change channels see the whole URL."""
        if self.kind == self.Kind.EMAIL:
            return ", ".join(self.addresses)
        if user.has_perm("alerts.change_alertchannel"):
            return self.url
        return masked_url(self.url)

    @property
    def addresses(self) -> list[str]:
        return [address.strip() for address in self.to.split(",") if address.strip()]


def masked_url(url: str) -> str:
    """``https://hooks.example.com/…``: the scheme and host, the rest held back."""
    if not url:
        return ""
    return f"{shown_address(url)}/…"


def channel_errors(*, kind: str, url: str, to: str) -> dict[str, str]:
    """What a channel of ``kind`` lacks or has wrong, by field: forms and the API ask
    (as ``rule_errors`` and ``silence_errors``), so each says it in its own words."""
    if kind in (AlertChannel.Kind.WEBHOOK, AlertChannel.Kind.SLACK):
        if not url:
            return {"url": gettext("A webhook or chat channel needs the URL to post to.")}
        if not url.startswith(("http://", "https://")):
            return {"url": gettext("Only http:// and https:// URLs can be posted to.")}
        return {}
    if kind == AlertChannel.Kind.EMAIL:
        addresses = [address.strip() for address in (to or "").split(",") if address.strip()]
        if not addresses:
            return {"to": gettext("An email channel needs at least one address.")}
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                return {
                    "to": gettext("“%(address)s” is not an email address.") % {"address": address}
                }
    return {}


class AlertRule(models.Model):
    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(
        _("slug"), max_length=100, unique=True, help_text=_("Stable id used by the API.")
    )
    kind = models.CharField(_("kind"), max_length=20, choices=KIND_CHOICES)
    channel = models.ForeignKey(
        AlertChannel,
        on_delete=models.PROTECT,
        related_name="rules",
        verbose_name=_("channel"),
        help_text=_("Where its alerts are sent: a channel of the rule's team or a shared one."),
    )
    threshold_usd = models.DecimalField(
        _("amount (USD)"),
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text=_("Idle cost: alert when a pool's idle cost over the window is above this."),
    )
    threshold_pct = models.DecimalField(
        _("percentage (%)"),
        max_digits=5,
        decimal_places=2,
        null=True,
        blank=True,
        help_text=_(
            "Low utilisation: alert when a pool's utilisation over the window is below this "
            "(0–100). Budget: alert when a budget's share used this month reaches this (above "
            "100 for an overspend)."
        ),
    )
    window_hours = models.PositiveIntegerField(
        _("window (hours)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("How far back the rule looks, to the end of the current hour."),
    )
    stale_minutes = models.PositiveIntegerField(
        _("no sample for (minutes)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "Telemetry stale: alert when a pool's newest sample is older than this. An hourly "
            "TSDB pull lags by an hour or more."
        ),
    )
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="alert_rules",
        verbose_name=_("team"),
        help_text=_(
            "A team's rule looks at the team's pools and workloads and the shared ones; "
            "none: the whole fleet."
        ),
    )
    pool = models.ForeignKey(
        "pools.Pool",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="alert_rules",
        verbose_name=_("pool"),
        help_text=_("Only this pool; none: every pool the rule looks at."),
    )
    workload = models.ForeignKey(
        "pools.Workload",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="alert_rules",
        verbose_name=_("workload"),
        help_text=_("Only this workload (and, for pool figures, its pool)."),
    )
    enabled = models.BooleanField(
        _("enabled"),
        default=True,
        help_text=_("Off: it is not evaluated and its firing alerts resolve."),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_evaluated_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Why the last evaluation failed (English, with its sentence parts); empty when it ran.
    last_error = models.TextField(blank=True, editable=False)
    last_error_parts = models.JSONField(default=list, blank=True, editable=False)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = _("alert rule")
        verbose_name_plural = _("alert rules")

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("alerts:rule_detail", kwargs={"slug": self.slug})

    @property
    def evaluator(self) -> registry.Evaluator | None:
        return registry.evaluator_for(self.kind)

    @property
    def threshold_fields(self) -> tuple[str, ...]:
        evaluator = self.evaluator
        return evaluator.thresholds if evaluator else ()

    def last_error_in_language(self) -> str:
        return translated_data(self.last_error_parts, self.last_error)

    def condition_text(self) -> str:
        """When the rule alerts, with its thresholds and their units."""
        values = {
            "amount": f"${self.threshold_usd:,.2f}" if self.threshold_usd is not None else "—",
            "percentage": f"{self.threshold_pct:g}" if self.threshold_pct is not None else "—",
            "hours": self.window_hours or "—",
            "minutes": self.stale_minutes or "—",
        }
        return gettext(CONDITIONS[self.kind]) % values

    def scope_text(self) -> str:
        if self.workload_id:
            return gettext("the workload %(name)s") % {"name": self.workload.name}
        if self.pool_id:
            return gettext("the pool %(name)s") % {"name": self.pool.name}
        if self.team_id:
            return gettext("team %(team)s's pools and workloads, and the shared ones") % {
                "team": self.team.name
            }
        return gettext("the whole fleet")


CONDITIONS = {
    registry.IDLE_COST: gettext_noop("a pool's idle cost is above %(amount)s over %(hours)s h"),
    registry.LOW_UTILISATION: gettext_noop(
        "a pool's utilisation is below %(percentage)s %% over %(hours)s h"
    ),
    registry.BUDGET: gettext_noop("a budget's share used this month reaches %(percentage)s %%"),
    registry.DRILL_OVERDUE: gettext_noop("a restore drill is overdue"),
    registry.DRILL_FAILED: gettext_noop("the latest restore drill failed"),
    registry.TELEMETRY_STALE: gettext_noop("a pool sent no sample for %(minutes)s min"),
    registry.FLAGGED_HOURS: gettext_noop("pool-hours were flagged in the last %(hours)s h"),
    registry.JOB_FAILED: gettext_noop(
        "an import, export or recompute failed in the last %(hours)s h"
    ),
    registry.DOLLARS_AT_RISK: gettext_noop(
        "a training workload's dollars at risk are above %(amount)s"
    ),
}


# What a missing threshold is called in the sentence that asks for it.
THRESHOLD_NAMES = {
    "threshold_usd": gettext_noop("an amount in USD"),
    "threshold_pct": gettext_noop("a percentage"),
    "window_hours": gettext_noop("a window in hours"),
    "stale_minutes": gettext_noop("a number of minutes"),
}


def rule_errors(*, kind, thresholds: dict, channel, team, pool, workload) -> dict[str, str]:
    """What keeps a rule from being saved, by field, in the active language (forms and
    the API): a kind with no evaluator, a threshold its kind needs, a channel, pool or
    workload of another team than the rule's."""
    reason = registry.unavailable_reason(kind)
    if reason:
        return {"kind": gettext(reason)}
    errors = {}
    label = dict(KIND_CHOICES).get(kind, kind)
    for name in registry.evaluator_for(kind).thresholds:
        if thresholds.get(name) is None:
            errors[name] = gettext("A rule of the kind “%(kind)s” needs %(what)s.") % {
                "kind": label,
                "what": gettext(THRESHOLD_NAMES[name]),
            }
    percentage = thresholds.get("threshold_pct")
    if percentage is not None and "threshold_pct" not in errors:
        # A utilisation lies in 0–100 %; a budget's share used may pass 100 %, never 0.
        if kind == registry.LOW_UTILISATION and not 0 < percentage <= 100:
            errors["threshold_pct"] = gettext(
                "A utilisation threshold lies above 0 and at most 100 %% (got %(value)s)."
            ) % {"value": f"{percentage:g}"}
        elif kind == registry.BUDGET and percentage <= 0:
            errors["threshold_pct"] = gettext(
                "A budget threshold is above 0 %% of the budget (got %(value)s); above 100 "
                "alerts on an overspend."
            ) % {"value": f"{percentage:g}"}
    team_id = team.pk if team else None
    if channel is not None and channel.team_id not in (None, team_id):
        errors["channel"] = gettext(
            "The channel %(channel)s belongs to team %(team)s: only that team's rules use it."
        ) % {"channel": channel.name, "team": channel.team}
    if pool is not None and pool.team_id not in (None, team_id):
        errors["pool"] = gettext(
            "The pool %(pool)s belongs to team %(team)s: choose that team for the rule."
        ) % {"pool": pool.name, "team": pool.team}
    if workload is not None:
        if pool is not None and workload.pool_id != pool.pk:
            errors["workload"] = gettext(
                "The workload %(workload)s runs on the pool %(pool)s, not on %(other)s."
            ) % {"workload": workload.name, "pool": workload.pool, "other": pool.name}
        elif workload.effective_team_id not in (None, team_id):
            errors["workload"] = gettext(
                "The workload %(workload)s belongs to another team: choose its team for the rule."
            ) % {"workload": workload.name}
    return errors


class Alert(models.Model):
    class Status(models.TextChoices):
        FIRING = "firing", _("Firing")
        RESOLVED = "resolved", _("Resolved")

    # Kept when its rule is deleted, with the rule's name, so the history stays.
    rule = models.ForeignKey(
        AlertRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="alerts"
    )
    rule_name = models.CharField(_("rule"), max_length=100)
    kind = models.CharField(_("kind"), max_length=20, choices=KIND_CHOICES)
    severity = models.CharField(_("severity"), max_length=20, default="warning")
    fingerprint = models.CharField(max_length=16)
    labels = models.JSONField(default=dict)
    # "summary" and "description" in English; ``annotation_parts`` holds their sentences,
    # so a page says them in its reader's language and a channel in its own.
    annotations = models.JSONField(default=dict)
    annotation_parts = models.JSONField(default=dict)
    # The subject's team (None: shared): who sees the alert.
    team = models.ForeignKey(
        "accounts.Team", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    subject_url = models.CharField(max_length=500, blank=True)
    status = models.CharField(
        _("status"), max_length=10, choices=Status.choices, default=Status.FIRING
    )
    starts_at = models.DateTimeField(_("started at"))
    ends_at = models.DateTimeField(_("resolved at"), null=True, blank=True)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-starts_at", "-id"]
        constraints = [
            # One firing alert per subject of a rule: two evaluations at once cannot both
            # raise it.
            models.UniqueConstraint(
                fields=["rule", "fingerprint"],
                condition=Q(status="firing"),
                name="alert_one_firing_per_rule_fingerprint",
            )
        ]
        indexes = [models.Index(fields=["status", "-starts_at"], name="alert_status_starts")]
        verbose_name = _("alert")
        verbose_name_plural = _("alerts")

    def __str__(self):
        return f"{self.rule_name} {self.fingerprint} ({self.status})"

    def get_absolute_url(self):
        return reverse("alerts:alert_detail", kwargs={"pk": self.pk})

    @property
    def name(self) -> str:
        return self.summary_in_language()

    @property
    def is_firing(self) -> bool:
        return self.status == self.Status.FIRING

    def summary_in_language(self) -> str:
        return translated_data(
            self.annotation_parts.get("summary"), self.annotations.get("summary", "")
        )

    def description_in_language(self) -> str:
        return translated_data(
            self.annotation_parts.get("description"), self.annotations.get("description", "")
        )


class Delivery(models.Model):
    class Event(models.TextChoices):
        FIRING = "firing", _("Firing")
        RESOLVED = "resolved", _("Resolved")

    class Status(models.TextChoices):
        PENDING = "pending", _("Waiting to be sent")
        SENT = "sent", _("Sent")
        RETRYING = "retrying", _("Retrying")
        FAILED = "failed", _("Failed")
        SILENCED = "silenced", _("Silenced")
        SUPPRESSED = "suppressed", _("Not sent")

    DUE_STATUSES = (Status.PENDING, Status.RETRYING)

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(
        AlertChannel, on_delete=models.CASCADE, related_name="deliveries", verbose_name=_("channel")
    )
    event = models.CharField(_("event"), max_length=10, choices=Event.choices)
    status = models.CharField(
        _("status"), max_length=12, choices=Status.choices, default=Status.PENDING
    )
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt"), null=True, blank=True)
    # The last attempt's error, or why it was not sent: English, with its sentence parts.
    last_error = models.TextField(_("last error"), blank=True)
    last_error_parts = models.JSONField(default=list, blank=True)
    response_status = models.PositiveSmallIntegerField(_("HTTP status"), null=True, blank=True)
    # What is sent, built once when the delivery is made: every attempt sends the same.
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(_("sent at"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["alert", "channel", "event"], name="delivery_once_per_alert_channel_event"
            )
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="delivery_due")]
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")

    def __str__(self):
        return f"{self.event} of alert {self.alert_id} to {self.channel_id} ({self.status})"

    @property
    def is_due(self) -> bool:
        return self.status in self.DUE_STATUSES

    @property
    def can_send_again(self) -> bool:
        return self.status in (self.Status.FAILED, self.Status.SILENCED, self.Status.SUPPRESSED)

    def last_error_in_language(self) -> str:
        return translated_data(self.last_error_parts, self.last_error)


class SilenceQuerySet(ScopedQuerySet):
    def active(self, now=None):
        now = now or timezone.now()
        return self.filter(starts_at__lte=now, ends_at__gt=now)


class Silence(models.Model):
    """Notifications held back until ``ends_at``: of one rule's alerts, or of the alerts
    whose labels hold every matcher (Alertmanager's ``label="value"`` matchers). A team's
    silence holds back only its team's rules' alerts; a fleet-wide one any alert."""

    rule = models.ForeignKey(
        AlertRule,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="silences",
        verbose_name=_("rule"),
        help_text=_("Every alert of this rule; none: the alerts the matchers pick."),
    )
    matchers = models.JSONField(
        _("matchers"),
        default=dict,
        blank=True,
        help_text=_("Label → value: an alert is silenced when its labels hold them all."),
    )
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="alert_silences",
        verbose_name=_("team"),
        help_text=_("Silences only this team's rules; none: every rule."),
    )
    starts_at = models.DateTimeField(_("starts at"), default=timezone.now)
    ends_at = models.DateTimeField(_("ends at"))
    comment = models.TextField(_("comment"), help_text=_("Why, and who to ask."))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SilenceQuerySet.as_manager()

    class Meta:
        ordering = ["-ends_at", "-id"]
        verbose_name = _("silence")
        verbose_name_plural = _("silences")

    def __str__(self):
        return f"silence #{self.pk} until {self.ends_at:%Y-%m-%d %H:%M}"

    @property
    def name(self) -> str:
        return gettext("silence #%(id)s") % {"id": self.pk}

    @property
    def matchers_text(self) -> str:
        return ", ".join(f"{name}={value}" for name, value in sorted(self.matchers.items()))

    def is_active(self, now=None) -> bool:
        now = now or timezone.now()
        return self.starts_at <= now < self.ends_at

    def matches(self, alert: Alert, rule_team_id: int | None) -> bool:
        """Whether it holds back ``alert``, whose rule belongs to ``rule_team_id``."""
        if self.team_id is not None and self.team_id != rule_team_id:
            return False
        if self.rule_id is not None and self.rule_id != alert.rule_id:
            return False
        return all(alert.labels.get(name) == value for name, value in self.matchers.items())


def silence_errors(*, rule, matchers, team, starts_at, ends_at, now=None) -> dict[str, str]:
    """What keeps a silence from being saved, by field; ``now``, for a new silence, which
    must end in the future."""
    errors = {}
    if rule is None and not matchers:
        errors["matchers"] = gettext(
            "Choose a rule or give at least one matcher: a silence of everything hides every alert."
        )
    if rule is not None and rule.team_id != (team.pk if team else None):
        errors["rule"] = gettext(
            "A silence of the rule %(rule)s belongs to the rule's team (%(team)s)."
        ) % {"rule": rule.name, "team": rule.team or gettext("fleet-wide")}
    if starts_at and ends_at and ends_at <= starts_at:
        errors["ends_at"] = gettext("A silence ends after it starts.")
    elif now is not None and ends_at and ends_at <= now:
        errors["ends_at"] = gettext("A new silence ends in the future.")
    return errors


class SlurmReportDelivery(models.Model):
    """One send of the weekly Slurm efficiency report (apps/alerts/slurm_reports.py): to a
    Slurm user's email address (no channel) or to a team's channel, unique per week,
    channel, recipient and the Slurm user's cluster, so a retried or re-run task sends
    each once: one ``sent`` is skipped, one ``failed`` is tried again by the next run for
    that week."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Being sent")
        SENT = "sent", _("Sent")
        FAILED = "failed", _("Failed")

    week_start = models.DateField(_("week of"), help_text=_("The week's Monday (UTC)."))
    channel = models.ForeignKey(
        AlertChannel,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="slurm_report_deliveries",
        verbose_name=_("channel"),
        help_text=_("Blank: the Slurm user's own email."),
    )
    # The email address of a Slurm user's report; a channel's slug for a team's.
    recipient = models.CharField(_("recipient"), max_length=255)
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("team"),
    )
    slurm_user = models.CharField(_("Slurm user"), max_length=100, blank=True)
    # A Slurm user is a cluster's: alice of two clusters gets two emails at one address.
    # A cluster with sends on record is kept (its delete page says why), with them.
    cluster = models.ForeignKey(
        "clusters.Cluster",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("cluster"),
        help_text=_("The Slurm user's cluster; blank for a team's channel."),
    )
    status = models.CharField(
        _("status"), max_length=10, choices=Status.choices, default=Status.PENDING
    )
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    # Why the last attempt failed: English, with its sentence parts.
    error = models.TextField(_("error"), blank=True)
    error_parts = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_attempt_at = models.DateTimeField(_("last attempt"), null=True, blank=True)
    sent_at = models.DateTimeField(_("sent at"), null=True, blank=True)

    class Meta:
        ordering = ["-week_start", "channel_id", "recipient"]
        constraints = [
            models.UniqueConstraint(
                fields=["week_start", "channel", "recipient", "cluster"],
                nulls_distinct=False,
                name="slurm_report_once_per_week_channel_recipient",
            )
        ]
        verbose_name = _("Slurm report delivery")
        verbose_name_plural = _("Slurm report deliveries")

    def __str__(self):
        return f"{self.week_start} {self.recipient} ({self.status})"

    def record(self, outcome) -> None:
        """Save how an attempt went (an ``apps.alerts.notify.Outcome``)."""
        now = timezone.now()
        self.attempts += 1
        self.last_attempt_at = now
        if outcome.sent:
            self.status, self.sent_at = self.Status.SENT, now
            self.error, self.error_parts = "", []
        else:
            self.status = self.Status.FAILED
            self.error = str(outcome.error or "")
            self.error_parts = to_data(outcome.error) if isinstance(outcome.error, Sentence) else []
        self.save()

    def error_in_language(self) -> str:
        return translated_data(self.error_parts, self.error)
