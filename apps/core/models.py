from django.db import models


class WorkerHeartbeat(models.Model):
    """Written by every Celery worker through the beat-scheduled heartbeat task.

    /healthz reads it to tell whether workers are alive *and* can reach the database.
    """

    hostname = models.CharField(max_length=255, unique=True)
    process_id = models.PositiveIntegerField()
    last_seen_at = models.DateTimeField()
    beats = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-last_seen_at"]

    def __str__(self):
        return f"{self.hostname} at {self.last_seen_at:%Y-%m-%d %H:%M:%S}"


class OutboxTask(models.Model):
    """A Celery task recorded in the transaction of the write that needs it, published
    once that transaction commits; while the broker is unreachable it waits here until
    ``core.drain_outbox`` publishes it (apps/core/outbox.py)."""

    name = models.CharField(max_length=200)
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [
            models.Index(
                fields=["created_at"],
                name="core_outbox_waiting",
                condition=models.Q(enqueued_at__isnull=True),
            )
        ]

    def __str__(self):
        state = f"enqueued {self.enqueued_at:%Y-%m-%d %H:%M:%S}" if self.enqueued_at else "waiting"
        return f"{self.name} ({state})"
