"""Training event logs of a workload and the imports that brought them."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.core.texts import translated_data


class EventType(models.TextChoices):
    USER_SCHEDULED = "user_scheduled", _("user scheduled")
    JOB_STARTED = "job_started", _("job started")
    CHECKPOINT_LOADED = "checkpoint_loaded", _("checkpoint loaded")
    CHECKPOINT_SAVED = "checkpoint_saved", _("checkpoint saved")
    USER_TERMINATED = "user_terminated", _("user terminated")
    JOB_TERMINATED = "job_terminated", _("job terminated")


class TrainingImportRun(models.Model):
    """One import of an event log: what it stored, or why it stored nothing."""

    class Format(models.TextChoices):
        JSONL = "jsonl", _("goodput_measure JSON lines")
        CSV = "csv", _("CSV with a column mapping")

    class Source(models.TextChoices):
        UPLOAD = "upload", _("upload")
        API = "api", _("API push")
        COMMAND = "command", _("command line")

    class Status(models.TextChoices):
        SUCCEEDED = "succeeded", _("succeeded")
        FAILED = "failed", _("failed")

    workload = models.ForeignKey(
        "pools.Workload",
        on_delete=models.CASCADE,
        related_name="training_import_runs",
        verbose_name=_("workload"),
    )
    format = models.CharField(_("format"), max_length=10, choices=Format.choices)
    source = models.CharField(_("source"), max_length=10, choices=Source.choices)
    filename = models.CharField(_("file name"), max_length=255, blank=True)
    content_sha256 = models.CharField(max_length=64, blank=True)
    status = models.CharField(_("status"), max_length=10, choices=Status.choices)
    events_accepted = models.PositiveIntegerField(_("events stored"), default=0)
    events_duplicate = models.PositiveIntegerField(_("events already stored"), default=0)
    # [{"line": n, "message": English, "message_parts": sentences.to_data}]
    errors = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True)
    message_parts = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("training event import")
        verbose_name_plural = _("training event imports")

    def __str__(self):
        return f"{self.workload} {self.format} {self.created_at:%Y-%m-%d %H:%M}"

    def message_in_language(self) -> str:
        return translated_data(self.message_parts, self.message)

    def errors_in_language(self) -> list[dict]:
        return [
            {**error, "message": translated_data(error.get("message_parts"), error["message"])}
            for error in self.errors
        ]


class TrainingEvent(models.Model):
    """One line of a job's event log. The identity (workload, job, type, instant, step,
    node rank) is unique, so importing the same log again stores nothing new."""

    workload = models.ForeignKey(
        "pools.Workload",
        on_delete=models.CASCADE,
        related_name="training_events",
        verbose_name=_("workload"),
    )
    job_name = models.CharField(_("job name"), max_length=200)
    event_type = models.CharField(_("event type"), max_length=20, choices=EventType.choices)
    timestamp = models.DateTimeField(_("timestamp"))
    step = models.PositiveBigIntegerField(_("step"), null=True, blank=True)
    node_rank = models.PositiveIntegerField(_("node rank"), null=True, blank=True)
    duration_seconds = models.FloatField(_("duration (seconds)"), null=True, blank=True)
    import_run = models.ForeignKey(
        TrainingImportRun,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="events",
    )

    class Meta:
        ordering = ["workload", "job_name", "timestamp", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "job_name", "event_type", "timestamp", "step", "node_rank"],
                name="training_event_identity",
                nulls_distinct=False,
            )
        ]
        indexes = [models.Index(fields=["workload", "timestamp"], name="training_event_when")]
        verbose_name = _("training event")
        verbose_name_plural = _("training events")

    def __str__(self):
        return f"{self.job_name} {self.event_type} {self.timestamp:%Y-%m-%d %H:%M:%S}"

    @property
    def identity(self) -> tuple:
        return (self.job_name, self.event_type, self.timestamp, self.step, self.node_rank)
