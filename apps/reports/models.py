"""The reports' own records: recompute jobs. The usage they read (hourly and daily
rollups, workload attribution) is telemetry's (apps/telemetry/models.py); interruptions
live with the workloads (``apps.pools.models.Interruption``).
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from apps.core.jobs import Job


class RecomputeJob(Job):
    """Rebuilding the daily rows of a range from the hourly ones, on a Celery worker, with
    its progress for the page's progress bar."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")
        INTERRUPTED = "interrupted", _("Interrupted")

    not_started_status = Status.QUEUED
    succeeded_status = Status.DONE
    finished_statuses = (Status.DONE, Status.FAILED, Status.INTERRUPTED)
    job_noun = _("recompute")
    failure_sentence_template = gettext_noop(
        "The recompute stopped with an error (%(error)s); the days rebuilt so far are kept. "
        "Start it again; the server log has the details."
    )
    progress_kept_on_failure = True

    start_day = models.DateField()
    end_day = models.DateField(help_text=_("Included."))
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    days_done = models.PositiveIntegerField(default=0)
    rows_written = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return gettext("Recompute %(start)s – %(end)s") % {
            "start": self.start_day,
            "end": self.end_day,
        }

    @property
    def day_count(self) -> int:
        return (self.end_day - self.start_day).days + 1

    def days_done_pct(self) -> int:
        """The share of the range's days rebuilt, for ``advance``."""
        return round(100 * self.days_done / self.day_count) if self.day_count else 100


class ClosedMonth(models.Model):
    """A month finance has closed: its figures are stored as they were when it closed
    (``FrozenCostRow``, and ``showback`` for the teams' split and budgets), and what
    changes them afterwards shows as an adjustment in the first open month
    (apps/reports/cost/periods.py). A reopened month keeps its row with ``is_closed`` false and
    its reopenings (``MonthReopening``); closing it again freezes it anew."""

    month = models.DateField(_("month"), unique=True, help_text=_("Its first day."))
    is_closed = models.BooleanField(_("closed"), default=True)
    closed_at = models.DateTimeField(_("closed at"))
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("closed by"),
    )
    closed_by_username = models.CharField(_("closed by (username)"), max_length=150)
    # The fleet's cost of the month as frozen, a decimal string's value.
    cost_usd = models.DecimalField(_("cost (USD)"), max_digits=18, decimal_places=6)
    # Each team's share, the unattributed rest and the pools' costs as frozen, and the
    # budgets of the month: decimal strings (apps/showback/periods.py writes it).
    showback = models.JSONField(default=dict, blank=True)
    # The exchange rates the month closed with ({currency: units per USD, a decimal
    # string}): its figures recomputed later use these, never a rate edited since
    # (apps/reports/cost/rates.py).
    exchange_rates = models.JSONField(_("exchange rates"), default=dict, blank=True)

    class Meta:
        ordering = ["-month"]
        verbose_name = _("closed month")
        verbose_name_plural = _("closed months")
        permissions = [("close_month", _("Can close a month"))]

    def __str__(self):
        return f"{self.month:%Y-%m}"


class FrozenCostRow(models.Model):
    """One row of a closed month's cost report as it was: grouped by pool (one per pool)
    or by workload (each pool's rows, so any scope's report composes from them)."""

    closed_month = models.ForeignKey(
        ClosedMonth, on_delete=models.CASCADE, related_name="frozen_rows"
    )
    group_by = models.CharField(max_length=10)
    pool_id = models.IntegerField()
    pool_slug = models.CharField(max_length=100)
    pool_team_id = models.IntegerField(null=True, blank=True)
    # The workload's team when the row is a workload's (its own, or its pool's); None for
    # rows that are no workload's (the unattributed rest).
    workload_team_id = models.IntegerField(null=True, blank=True)
    is_workload = models.BooleanField(default=False)
    key = models.CharField(max_length=200)
    label = models.CharField(max_length=300)
    purpose = models.CharField(max_length=20, blank=True)
    # The row's additive figures: money and hours as decimal strings, counts as integers.
    figures = models.JSONField(default=dict)

    class Meta:
        ordering = ["pk"]
        indexes = [models.Index(fields=["closed_month", "group_by"])]

    def __str__(self):
        return f"{self.closed_month} {self.group_by} {self.key}"


class MonthReopening(models.Model):
    """A closed month reopened: by a superuser, with a reason (also an AuditEvent)."""

    closed_month = models.ForeignKey(
        ClosedMonth, on_delete=models.CASCADE, related_name="reopenings"
    )
    reopened_at = models.DateTimeField(_("reopened at"))
    reopened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("reopened by"),
    )
    reopened_by_username = models.CharField(_("reopened by (username)"), max_length=150)
    reason = models.TextField(_("reason"))

    class Meta:
        ordering = ["-reopened_at"]

    def __str__(self):
        return f"{self.closed_month} reopened by {self.reopened_by_username}"
