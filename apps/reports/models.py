"""Daily sums of the hourly rollups, so a report over a year reads 365 rows per pool,
not 8,760. Kept in step with the hourly rows by
``apps.reports.rollups`` whenever telemetry rolls hours up; days are UTC days.

Interruptions live with the workloads (``apps.pools.models.Interruption``).
"""

from django.conf import settings
from django.db import models

from apps.core.jobs import Job


class PoolDailyUsage(models.Model):
    pool = models.ForeignKey("pools.Pool", on_delete=models.PROTECT, related_name="daily_usage")
    day = models.DateField()
    measured_hours = models.PositiveIntegerField(help_text="Hours with telemetry.")
    measured_capacity_gpu_hours = models.FloatField()
    busy_gpu_hours = models.FloatField()
    reporting_gpu_hours = models.FloatField(help_text="Σ reporting GPUs over the hours.")
    energy_kwh = models.FloatField(help_text="Measured energy of the hours that have it.")
    busy_gpu_hours_without_energy = models.FloatField(
        help_text="Busy GPU-hours of the hours without measured energy (TDP × utilisation)."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "day"], name="pool_daily_usage_unique")
        ]
        indexes = [models.Index(fields=["day"], name="pool_daily_usage_day")]
        ordering = ["pool_id", "day"]

    def __str__(self):
        return f"{self.pool_id} {self.day}"


class WorkloadDailyRequests(models.Model):
    workload = models.ForeignKey(
        "pools.Workload", on_delete=models.PROTECT, related_name="daily_requests"
    )
    day = models.DateField()
    requests = models.PositiveBigIntegerField()
    input_tokens = models.PositiveBigIntegerField()
    output_tokens = models.PositiveBigIntegerField()
    errors = models.PositiveBigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "day"], name="workload_daily_requests_unique"
            )
        ]
        indexes = [models.Index(fields=["day"], name="workload_daily_requests_day")]
        ordering = ["workload_id", "day"]

    def __str__(self):
        return f"{self.workload_id} {self.day}"


class RecomputeJob(Job):
    """Rebuilding the daily rows of a range from the hourly ones, on a Celery worker, with
    its progress for the page's progress bar."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        INTERRUPTED = "interrupted", "Interrupted"

    not_started_status = Status.QUEUED
    succeeded_status = Status.DONE
    finished_statuses = (Status.DONE, Status.FAILED, Status.INTERRUPTED)
    job_noun = "recompute"
    failure_sentence_template = (
        "The recompute stopped with an error ({error}); the days rebuilt so far are kept. "
        "Start it again; the server log has the details."
    )
    progress_kept_on_failure = True

    start_day = models.DateField()
    end_day = models.DateField(help_text="Included.")
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
        return f"Recompute {self.start_day} – {self.end_day}"

    @property
    def day_count(self) -> int:
        return (self.end_day - self.start_day).days + 1

    def days_done_pct(self) -> int:
        """The share of the range's days rebuilt, for ``advance``."""
        return round(100 * self.days_done / self.day_count) if self.day_count else 100


class WorkloadHourlyUsage(models.Model):
    """The GPU time a workload used in a shared pool, from the Kubernetes labels of the
    samples (dcgm-exporter's pod/namespace): a sample counts for the workload whose
    namespace and pod-name prefix it matches (the longest prefix wins).

    Per device and hour with n utilisation samples, m of them the workload's:
    ``allocated_gpu_hours`` += m ÷ n and ``busy_gpu_hours`` += Σ their utilisation ÷ 100 ÷ n,
    so a device serving one workload all hour adds exactly its pool-hour figures
    (apps/telemetry/rollups.py). Written with the pool's hourly rollup.
    """

    workload = models.ForeignKey(
        "pools.Workload", on_delete=models.PROTECT, related_name="attributed_usage"
    )
    hour = models.DateTimeField()
    allocated_gpu_hours = models.FloatField()
    busy_gpu_hours = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "hour"], name="workload_hourly_usage_unique"
            )
        ]
        indexes = [models.Index(fields=["hour"], name="workload_hourly_usage_hour")]
        ordering = ["workload_id", "hour"]

    def __str__(self):
        return f"{self.workload_id} {self.hour:%Y-%m-%d %H:00}"
