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
