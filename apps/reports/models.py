"""The reports' own records: recompute jobs. The usage they read (hourly and daily
rollups, workload attribution) is telemetry's (apps/telemetry/models.py); interruptions
live with the workloads (``apps.pools.models.Interruption``).
"""

from django.conf import settings
from django.db import models


class RecomputeJob(models.Model):
    """Rebuilding the daily rows of a range from the hourly ones, on a Celery worker, with
    its progress for the page's progress bar."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        INTERRUPTED = "interrupted", "Interrupted"

    start_day = models.DateField()
    end_day = models.DateField(help_text="Included.")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    # Written at each progress update and every RUN_HEARTBEAT_SECONDS while it runs; the
    # reaper marks a run not heard from for a few minutes interrupted (apps/core/runs.py).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a worker started it.")
    days_done = models.PositiveIntegerField(default=0)
    rows_written = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"Recompute {self.start_day} – {self.end_day}"

    @property
    def day_count(self) -> int:
        return (self.end_day - self.start_day).days + 1

    @property
    def progress_pct(self) -> int:
        return round(100 * self.days_done / self.day_count) if self.day_count else 100

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED, self.Status.INTERRUPTED)
