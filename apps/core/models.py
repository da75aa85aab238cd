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
