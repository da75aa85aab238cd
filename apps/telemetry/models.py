"""GPU devices, their samples, request logs, imports and the hourly rollups.

Raw samples are kept for a retention window; hourly rollups are kept forever and are
what reports read. Keys make every write idempotent: a sample is unique per (device,
timestamp), a rollup per (pool, hour), so a retried import or rollup changes nothing.
"""

import re
import uuid
from datetime import UTC

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext, gettext_noop, ngettext
from django.utils.translation import gettext_lazy as _

from apps.accounts.scope import Scope
from apps.clusters.models import default_cluster_pk
from apps.core.jobs import Job
from apps.core.sentences import Sentence, to_data
from apps.core.texts import translated_data


class GpuDevice(models.Model):
    """A GPU, or a MIG slice of one (UUID + GPU instance id), registered on first sight."""

    class Assignment(models.TextChoices):
        UNASSIGNED = "unassigned", _("Unassigned")
        RULE = "rule", _("By hostname rule")
        IMPORT = "import", _("By the import's pool")
        MANUAL = "manual", _("By hand")

    # "GPU-…" for a whole GPU, "GPU-…/3" for MIG instance 3: one unique text key keeps
    # uniqueness simple on every database (NULL instance ids are never equal in SQL).
    key = models.CharField(max_length=120, unique=True)
    uuid = models.CharField(_("UUID"), max_length=100, db_index=True)
    gpu_instance_id = models.PositiveIntegerField(_("MIG GPU instance"), null=True, blank=True)
    mig_profile = models.CharField(_("MIG profile"), max_length=50, blank=True)
    # The N of a slice's profile "Ng.…" (apps/telemetry/mig.py): its share of the GPU is N
    # over the GPU model's compute slices.
    mig_compute_slices = models.PositiveSmallIntegerField(
        _("MIG compute slices held"), null=True, blank=True
    )
    # nvidia-smi reports "[N/A]" utilisation for a GPU in MIG mode: its hours are "not
    # measurable by nvidia-smi under MIG", never 0 % busy.
    mig_mode_enabled = models.BooleanField(_("MIG mode on"), default=False)
    hostname = models.CharField(max_length=255, blank=True, db_index=True)
    gpu_index = models.PositiveIntegerField(_("GPU index"), null=True, blank=True)
    model_name = models.CharField(_("Reported model"), max_length=100, blank=True)
    driver_version = models.CharField(max_length=50, blank=True)
    pool = models.ForeignKey(
        "pools.Pool", null=True, blank=True, on_delete=models.SET_NULL, related_name="devices"
    )
    assignment = models.CharField(
        max_length=12, choices=Assignment.choices, default=Assignment.UNASSIGNED
    )
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()

    class Meta:
        ordering = ["hostname", "gpu_index", "key"]
        verbose_name = _("GPU device")

    def __str__(self):
        where = f"{self.hostname} #{self.gpu_index}" if self.hostname else self.uuid
        return (
            f"{where} (MIG {self.gpu_instance_id})" if self.gpu_instance_id is not None else where
        )

    @staticmethod
    def key_for(uuid: str, gpu_instance_id: int | None) -> str:
        return uuid if gpu_instance_id is None else f"{uuid}/{gpu_instance_id}"


class HostnameRule(models.Model):
    """Devices whose hostname matches the pattern (shell-style, e.g. ``gpu-sh-*``) join the
    pool. Lower priority numbers are tried first."""

    pool = models.ForeignKey(
        "pools.Pool",
        on_delete=models.CASCADE,
        related_name="hostname_rules",
        verbose_name=_("Pool"),
    )
    hostname_pattern = models.CharField(
        max_length=255, help_text=_("Shell-style: gpu-sh-*, node-1?")
    )
    priority = models.PositiveIntegerField(_("Priority"), default=100)

    class Meta:
        ordering = ["priority", "id"]

    def __str__(self):
        return f"{self.hostname_pattern} → {self.pool}"


class GpuSample(models.Model):
    """One reading of one GPU at one instant.

    The key is (device, timestamp) itself: it is the "never twice" rule, so no surrogate
    ``id`` and no separate unique index are kept up to date on every insert
    (bench/README.md, finding 2, measures what a surrogate id and its index cost an
    import). Its first column also serves the foreign key's lookups, hence no index of
    its own on ``device``.
    """

    pk = models.CompositePrimaryKey("device_id", "timestamp")
    device = models.ForeignKey(
        GpuDevice, on_delete=models.CASCADE, related_name="samples", db_index=False
    )
    timestamp = models.DateTimeField()
    utilization_pct = models.FloatField(null=True)
    memory_used_mib = models.FloatField(null=True)
    memory_free_mib = models.FloatField(null=True)
    power_w = models.FloatField(null=True)
    energy_mj = models.FloatField(null=True, help_text="Energy counter since boot, mJ.")
    temperature_c = models.FloatField(null=True)
    pod = models.CharField(max_length=255, blank=True)
    namespace = models.CharField(max_length=255, blank=True)
    container = models.CharField(max_length=255, blank=True)

    class Meta:
        # Rollups and the retention purge select by time across every device.
        indexes = [models.Index(fields=["timestamp"], name="gpu_sample_timestamp")]

    def __str__(self):
        return f"{self.device_id} at {self.timestamp:%Y-%m-%d %H:%M:%S}"


class RequestSample(models.Model):
    id = models.BigAutoField(primary_key=True)
    workload = models.ForeignKey(
        "pools.Workload", on_delete=models.PROTECT, related_name="request_samples"
    )
    timestamp = models.DateTimeField()
    input_tokens = models.PositiveIntegerField()
    output_tokens = models.PositiveIntegerField()
    latency_ms = models.FloatField(null=True)
    status = models.CharField(max_length=50, blank=True)
    count = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            # Request logs have no id; the same request imported twice has the same
            # time and token counts.
            models.UniqueConstraint(
                fields=["workload", "timestamp", "input_tokens", "output_tokens"],
                name="request_sample_unique",
            )
        ]
        indexes = [models.Index(fields=["timestamp"], name="request_sample_timestamp")]

    def __str__(self):
        return f"{self.count} request(s) at {self.timestamp:%Y-%m-%d %H:%M:%S}"


class ImportRun(Job):
    class Status(models.TextChoices):
        PENDING = "pending", _("Waiting")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        REJECTED = "rejected", _("Rejected")
        FAILED = "failed", _("Failed")
        INTERRUPTED = "interrupted", _("Interrupted")

    class Source(models.TextChoices):
        UPLOAD = "upload", _("Web upload")
        API = "api", "API"
        COMMAND = "command", _("Command line")
        SCRAPE = "scrape", _("dcgm-exporter scrape")
        PROMETHEUS = "prometheus", _("Prometheus query")
        TSDB_HOURLY = "tsdb_hourly", _("TSDB hourly aggregates")

    not_started_status = Status.PENDING
    succeeded_status = Status.SUCCEEDED
    finished_statuses = (Status.SUCCEEDED, Status.REJECTED, Status.FAILED, Status.INTERRUPTED)
    job_noun = _("import")
    failure_sentence_template = gettext_noop(
        "The import stopped with an error (%(error)s). Samples are stored once each, so "
        "importing the file again is safe; the server log has the details."
    )

    kind = models.CharField(
        max_length=10, choices=[("gpu", _("GPU telemetry")), ("requests", _("Requests"))]
    )
    format = models.CharField(max_length=20)
    source = models.CharField(max_length=12, choices=Source.choices)
    filename = models.CharField(max_length=255, blank=True)
    pool = models.ForeignKey("pools.Pool", null=True, blank=True, on_delete=models.SET_NULL)
    workload = models.ForeignKey("pools.Workload", null=True, blank=True, on_delete=models.SET_NULL)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    skip_bad_rows = models.BooleanField(default=False)
    rows_total = models.PositiveIntegerField(default=0)
    rows_accepted = models.PositiveIntegerField(default=0)
    rows_duplicate = models.PositiveIntegerField(default=0)
    rows_rejected = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True, help_text="The first rejected lines.")
    warnings = models.JSONField(
        default=list, blank=True, help_text="What was kept but needs a look, in sentences."
    )
    # ``warnings`` as sentences (apps/core/sentences.py: msgids and values), one list of
    # parts per warning, so the page says each in its reader's language; empty for runs
    # whose warnings were stored as plain text.
    warning_parts = models.JSONField(default=list, blank=True)
    # An identical file uploaded again is recognised by its digest and refused.
    content_sha256 = models.CharField(_("SHA-256 of the content"), max_length=64, blank=True)
    scraped_at = models.DateTimeField(
        null=True, blank=True, help_text="dcgm scrapes: when the scrape was taken."
    )
    # The format an upload's first bytes showed when it asked to detect it: the page says
    # "Detected: …"; empty when someone chose the format.
    detected_format = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["content_sha256"], name="import_run_content_sha256")]

    def __str__(self):
        return f"{self.get_kind_display()} import #{self.pk} ({self.get_status_display()})"

    def fail(self, message) -> None:
        """End the run after an error, with the counts the database holds: only committed
        ones (an import writes them in the transaction that stores its rows,
        ``importer.store_and_record``; an hourly pull with each chunk), where the run's own
        may count rows a rolled-back transaction never kept. A run none of whose rows were
        kept fails, accepting none; one whose rows stay stored is not failed: it ends
        succeeded, ``message`` saying what stopped it."""
        committed = ImportRun.objects.filter(pk=self.pk).values_list(
            "rows_accepted", "rows_duplicate"
        )
        self.rows_accepted, self.rows_duplicate = committed.first() or (0, 0)
        status = self.Status.SUCCEEDED if self.rows_accepted else self.Status.FAILED
        self.finish(status, message, also_save=["rows_accepted", "rows_duplicate"])

    def errors_in_language(self) -> list[dict]:
        """The rejected lines kept with the run, each said in the active language."""
        return [
            {**error, "message": translated_data(error.get("message_parts"), error["message"])}
            for error in self.errors
        ]

    def warnings_in_language(self) -> list[str]:
        """The run's warnings, each said in the active language (as stored when it was
        kept without its sentence)."""
        parts = self.warning_parts or []
        return [
            translated_data(parts[index] if index < len(parts) else None, warning)
            for index, warning in enumerate(self.warnings)
        ]


class PurgeRun(Job):
    """One run of the raw-sample retention (``telemetry.purge_raw_samples``, daily): the
    day partitions it dropped, with their rows as PostgreSQL estimates them, and the rows
    it deleted, said in a sentence (``describe``)."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Waiting")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        INTERRUPTED = "interrupted", _("Interrupted")

    job_noun = _("retention purge")
    failure_sentence_template = gettext_noop(
        "The retention purge stopped with an error (%(error)s). Each partition is dropped and "
        "each range deleted in a transaction of its own, so nothing is half-deleted; the next "
        "daily purge carries on, and the server log has the details."
    )

    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    horizon = models.DateTimeField(
        null=True, blank=True, help_text="Samples before this hour are removed."
    )
    # [{"name": …, "day": "2026-11-16", "rows_estimate": …, "size_bytes": …}, …]
    partitions_dropped = models.JSONField(default=list, blank=True)
    # Whole days whose lock was not granted: their rows are deleted instead, or they are
    # dropped by the next run.
    partitions_postponed = models.JSONField(default=list, blank=True)
    rows_dropped_estimate = models.BigIntegerField(default=0)
    rows_deleted = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"Retention purge #{self.pk} ({self.get_status_display()})"

    def describe(self) -> str:
        """What the run removed, in the active language: "Dropped 2 daily partitions
        (2026-11-15 to 2026-11-16, about 115,200,000 rows, 12.4 GB) and deleted 4,800
        rows before 2026-11-17 09:00 UTC." """
        horizon = f"{self.horizon.astimezone(UTC):%Y-%m-%d %H:%M} UTC" if self.horizon else ""
        values = {"deleted": f"{self.rows_deleted:,}", "horizon": horizon}
        if not self.partitions_dropped:
            sentence = ngettext(
                "No daily partition to drop; deleted %(deleted)s row before %(horizon)s.",
                "No daily partition to drop; deleted %(deleted)s rows before %(horizon)s.",
                self.rows_deleted,
            )
        else:
            days = [partition["day"] for partition in self.partitions_dropped]
            values |= {
                "count": len(days),
                "days": days[0] if len(days) == 1 else f"{days[0]} – {days[-1]}",
                "rows": f"{self.rows_dropped_estimate:,}",
                "size": filesizeformat(
                    sum(partition["size_bytes"] for partition in self.partitions_dropped)
                ),
            }
            sentence = ngettext(
                "Dropped %(count)s daily partition (%(days)s, about %(rows)s rows, %(size)s) "
                "and deleted %(deleted)s rows before %(horizon)s.",
                "Dropped %(count)s daily partitions (%(days)s, about %(rows)s rows, %(size)s) "
                "and deleted %(deleted)s rows before %(horizon)s.",
                len(days),
            )
        sentence %= values
        if self.partitions_postponed:
            sentence += " " + ngettext(
                "%(count)s partition was in use: its rows are removed, and the table itself "
                "is dropped by the next run.",
                "%(count)s partitions were in use: their rows are removed, and the tables "
                "themselves are dropped by the next run.",
                len(self.partitions_postponed),
            ) % {"count": len(self.partitions_postponed)}
        return sentence


class PoolHourlyUsage(models.Model):
    """One pool in one UTC hour (definitions in apps/telemetry/rollups/hourly.py)."""

    # The only record of an hour once its raw samples are purged: a pool with any is
    # archived, never deleted.
    pool = models.ForeignKey("pools.Pool", on_delete=models.PROTECT, related_name="hourly_usage")
    hour = models.DateTimeField()
    reporting_gpus = models.PositiveIntegerField()
    capacity_gpu_hours = models.FloatField()
    busy_gpu_hours = models.FloatField()
    avg_utilization_pct = models.FloatField(null=True)
    max_utilization_pct = models.FloatField(null=True)
    max_memory_used_mib = models.FloatField(null=True)
    energy_kwh = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "hour"], name="pool_hourly_usage_unique")
        ]
        # Reports read a range of hours across every pool (apps/reports/cost/pool_usage.py).
        indexes = [models.Index(fields=["hour"], name="pool_hourly_usage_hour")]
        # By the key column, not "pool": Django resolves "pool" through Pool's own
        # ordering, a join with pools_pool that stays in every GROUP BY over these rows
        # (the rollups, every report curve) although their ORDER BY is dropped: ~25 % of a
        # year's hour-of-day curve (bench/README.md). The rollup models all do the same.
        ordering = ["pool_id", "hour"]

    def __str__(self):
        return f"{self.pool_id} {self.hour:%Y-%m-%d %H:00}"


class PoolHourFlag(models.Model):
    """Something in one pool-hour's telemetry that a reader must know before trusting it.

    The rollup (apps/telemetry/rollups/hourly.py) rewrites the kinds it derives from samples with
    every recompute of the hour; an import writes the kinds only it can see (clock skew).
    """

    class Kind(models.TextChoices):
        OVER_REPORTED = "over_reported", _("More GPUs reporting than the pool declares")
        MIG_CONFLICT = "mig_conflict", _("Whole-GPU line and MIG slices both reported")
        OVER_BUSY = "over_busy", _("A GPU's slices add up to more than 100 %")
        MIG_UNMEASURABLE = "mig_unmeasurable", _("MIG mode: nvidia-smi cannot measure utilisation")
        OUTSIDE_SERVICE = "outside_service", _("Samples outside the pool's service period")
        CLOCK_SKEW = "clock_skew", _("Samples dated ahead of the time they arrived")

    ROLLUP_KINDS = (
        Kind.OVER_REPORTED,
        Kind.MIG_CONFLICT,
        Kind.OVER_BUSY,
        Kind.MIG_UNMEASURABLE,
        Kind.OUTSIDE_SERVICE,
    )

    pool = models.ForeignKey("pools.Pool", on_delete=models.CASCADE, related_name="hour_flags")
    hour = models.DateTimeField()
    kind = models.CharField(max_length=20, choices=Kind.choices)
    gpus = models.PositiveIntegerField(default=0, help_text="GPUs or slices concerned.")
    samples = models.PositiveIntegerField(default=0, help_text="Samples concerned.")
    detail = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "hour", "kind"], name="pool_hour_flag_unique")
        ]
        indexes = [models.Index(fields=["hour"], name="pool_hour_flag_hour")]
        ordering = ["pool_id", "hour", "kind"]

    def __str__(self):
        return f"{self.pool_id} {self.hour:%Y-%m-%d %H:00} {self.kind}"

    @classmethod
    def detail_for(cls, kind: str, **values) -> str:
        """The stored sentence of a flag, in English: stored text reads the same to every
        reader, and ``detail_sentence`` words it again in the reader's language."""
        singular, plural = FLAG_DETAILS[kind]
        template = plural if plural and values.get("count", 1) != 1 else singular
        return template % {name: value for name, value in values.items() if name != "count"}

    @property
    def detail_sentence(self) -> str:
        """``detail`` in the active language: its numbers are read back out of the stored
        English sentence and put into the translated one (unknown text is shown as is)."""
        for template in FLAG_DETAILS.get(self.kind, ()):
            if not template:
                continue
            match = _template_pattern(template).fullmatch(self.detail)
            if match:
                return gettext(template) % match.groupdict()
        return self.detail


# The sentence of each flag kind (singular, plural or None), with its numbers as named
# placeholders so the stored English can be read back and translated on the page.
FLAG_DETAILS = {
    PoolHourFlag.Kind.OVER_REPORTED: (
        gettext_noop(
            "%(reporting)s GPUs reported in a pool of %(declared)s: %(measured)s busy GPU-h "
            "measured, %(counted)s counted (at most the capacity). Assign the extra GPUs to "
            "their own pool or raise the pool's GPU count."
        ),
        None,
    ),
    PoolHourFlag.Kind.MIG_CONFLICT: (
        gettext_noop(
            "%(gpus)s GPU(s) reported a whole-GPU utilisation and MIG slices: the slices are "
            "counted, the whole-GPU line is not added again."
        ),
        None,
    ),
    PoolHourFlag.Kind.OVER_BUSY: (
        gettext_noop(
            "%(gpus)s GPU(s) whose slices add up to %(share)s %% of the GPU: counted as 100 %%. "
            "Check the GPU model's MIG compute slices in the catalog and the slices' profiles."
        ),
        None,
    ),
    PoolHourFlag.Kind.MIG_UNMEASURABLE: (
        gettext_noop(
            "%(gpus)s GPU(s) in MIG mode: nvidia-smi cannot measure their utilisation, so they "
            "are not counted as reporting (never as 0 %% busy). Scrape dcgm-exporter for "
            "per-slice activity."
        ),
        None,
    ),
    PoolHourFlag.Kind.OUTSIDE_SERVICE: (
        gettext_noop(
            "%(samples)s sample(s) of %(gpus)s GPU(s) outside the pool's service period: kept, "
            "not counted. Change the pool's service period to count them."
        ),
        None,
    ),
    PoolHourFlag.Kind.CLOCK_SKEW: (
        gettext_noop("%(samples)s sample up to %(lead)s min ahead of their arrival at %(arrival)s"),
        gettext_noop(
            "%(samples)s samples up to %(lead)s min ahead of their arrival at %(arrival)s"
        ),
    ),
}

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_PATTERNS: dict[str, re.Pattern] = {}


def _template_pattern(template: str) -> re.Pattern:
    pattern = _PATTERNS.get(template)
    if pattern is None:
        parts = _PLACEHOLDER.split(template.replace("%%", "%"))
        regex = "".join(
            f"(?P<{part}>.+?)" if index % 2 else re.escape(part) for index, part in enumerate(parts)
        )
        pattern = _PATTERNS[template] = re.compile(regex, re.DOTALL)
    return pattern


class PendingRollup(models.Model):
    """A pool-hour whose samples changed and whose rollup waits for the drain
    (``telemetry.rollup_pending``: apps/telemetry/rollups/hourly.py, ``rollup_pending``).

    Every channel queues here: an upload, the API and the command line ask for a drain
    right after their commit; the pull channels leave it to beat's tick every minute, since
    a 1,000-GPU fleet scraped every 15 s is 500 scrapes a minute but only a few pool-hours
    (bench/README.md, finding 3). A row is written in the import's own transaction, so a
    committed sample always has its pool-hour queued.
    """

    pool = models.ForeignKey("pools.Pool", on_delete=models.CASCADE, related_name="+")
    hour = models.DateTimeField()
    # Replaced by every import that touches the pool-hour again. The drain deletes only
    # the rows whose token it read before rolling up, so samples committed while it runs
    # keep their pool-hour queued for the next drain.
    token = models.UUIDField(default=uuid.uuid4)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "hour"], name="pending_rollup_unique")
        ]

    def __str__(self):
        return f"{self.pool_id} {self.hour:%Y-%m-%d %H:00}"


class PendingWorkloadRollup(models.Model):
    """A workload-hour whose request samples changed, queued for the same drain as
    ``PendingRollup`` and unqueued by token the same way."""

    workload = models.ForeignKey("pools.Workload", on_delete=models.CASCADE, related_name="+")
    hour = models.DateTimeField()
    token = models.UUIDField(default=uuid.uuid4)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "hour"], name="pending_workload_rollup_unique"
            )
        ]

    def __str__(self):
        return f"{self.workload_id} {self.hour:%Y-%m-%d %H:00}"


class WorkloadHourlyRequests(models.Model):
    workload = models.ForeignKey(
        "pools.Workload", on_delete=models.PROTECT, related_name="hourly_requests"
    )
    hour = models.DateTimeField()
    requests = models.PositiveIntegerField()
    input_tokens = models.PositiveBigIntegerField()
    output_tokens = models.PositiveBigIntegerField()
    errors = models.PositiveIntegerField()
    p95_latency_ms = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "hour"], name="workload_hourly_requests_unique"
            )
        ]
        indexes = [models.Index(fields=["hour"], name="workload_hourly_requests_hour")]
        ordering = ["workload_id", "hour"]

    def __str__(self):
        return f"{self.workload_id} {self.hour:%Y-%m-%d %H:00}"


# The tick of the beat task that enqueues due pulls (pull_tasks.pull_due_sources_task).
MIN_PULL_INTERVAL_SECONDS = 15


class PullSource(models.Model):
    """Where Celery beat pulls telemetry from: a dcgm-exporter ``/metrics`` endpoint, a
    Prometheus server's ``query_range`` API holding DCGM metrics (raw samples), or any
    Prometheus-compatible TSDB asked for hourly aggregates (``GpuDeviceHour`` rows, no
    raw samples: apps/telemetry/pull/tsdb.py)."""

    class Kind(models.TextChoices):
        DCGM_EXPORTER = "dcgm_exporter", _("dcgm-exporter endpoint")
        PROMETHEUS = "prometheus", _("Prometheus server")
        PROMETHEUS_HOURLY = (
            "prometheus_hourly",
            _("Prometheus-compatible TSDB, hourly aggregates"),
        )

    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(
        _("slug"), max_length=100, unique=True, help_text=_("Stable id used by the API.")
    )
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices)
    url = models.URLField(
        _("URL"),
        max_length=500,
        help_text=_(
            "dcgm-exporter: http://node:9400/metrics. Prometheus or VictoriaMetrics: "
            "http://prom:9090"
        ),
    )
    pool = models.ForeignKey(
        "pools.Pool",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        verbose_name=_("pool"),
        help_text=_("Devices first seen through this source join this pool."),
    )
    # Blank: saved without one, it joins the ``default`` cluster (``save``). No field
    # default, which would ask the database each time an unsaved one is built.
    cluster = models.ForeignKey(
        "clusters.Cluster",
        on_delete=models.PROTECT,
        blank=True,
        related_name="pull_sources",
        verbose_name=_("cluster"),
    )
    # PromQL label matchers added to every selector of an hourly pull, e.g.
    # cluster="a",namespace=~"ml-.*" (checked by apps/telemetry/pull/promql.py).
    label_filters = models.CharField(
        _("label filters"),
        max_length=1000,
        blank=True,
        help_text=_('PromQL label matchers, e.g. cluster="a",namespace=~"ml-.*"'),
    )
    # Sent with every request of its pulls (apps/telemetry/pull/base.py, ``source_headers``):
    # HTTP basic authentication, or a bearer token, which wins when both are set. Kept as
    # typed, since the server must be sent them as they are; no page shows them again and
    # the API never returns them.
    username = models.CharField(_("user name"), max_length=200, blank=True)
    password = models.CharField(_("password"), max_length=500, blank=True)
    bearer_token = models.CharField(_("bearer token"), max_length=4000, blank=True)
    interval_seconds = models.PositiveIntegerField(
        _("interval (s)"),
        default=60,
        # Beat looks for due sources every 15 s (settings: "pull-telemetry-sources"), so a
        # shorter interval would silently be pulled every 15 s anyway.
        validators=[MinValueValidator(MIN_PULL_INTERVAL_SECONDS)],
        help_text=f"At least {MIN_PULL_INTERVAL_SECONDS} s, the pull schedule's tick.",
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    last_pulled_at = models.DateTimeField(null=True, blank=True)
    # Prometheus: the end of the last range fetched, so the next pull continues there.
    # Hourly aggregates: the end of the last complete hour written, so a restart resumes
    # at the first hour not yet complete.
    pulled_until = models.DateTimeField(null=True, blank=True)
    last_status = models.CharField(max_length=20, blank=True)
    last_message = models.TextField(blank=True)
    # ``last_message`` as sentences (apps/core/sentences.py: msgids and values), so the
    # pull-sources page says it in its reader's language; empty where it was stored as
    # plain text. The API keeps ``last_message``, in English.
    last_message_parts = models.JSONField(default=list, blank=True)
    # The scope of whoever last saved the source (apps/accounts/scope.py, its cache key):
    # a pull stores only the GPUs that person could import by hand, so a source pointed
    # at another team's exporter cannot write into that team's pools.
    pull_scope_key = models.CharField(max_length=500, default="all", editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def save(self, *args, **kwargs):
        if self.cluster_id is None:
            self.cluster_id = default_cluster_pk()
        super().save(*args, **kwargs)

    @property
    def pull_scope(self) -> Scope:
        return Scope.from_cache_key(self.pull_scope_key)

    def set_last_message(self, message, parts: list[dict] | None = None) -> None:
        """``message``: plain text, a ``Sentence`` or a list of them read one after the
        other, kept with their msgids; ``parts``, when given, are its stored sentences
        (a run's ``message_parts``)."""
        if isinstance(message, Sentence):
            message = [message]
        if isinstance(message, list):
            self.last_message, self.last_message_parts = "".join(message), to_data(message)
        else:
            self.last_message, self.last_message_parts = message, parts or []

    def last_message_in_language(self) -> str:
        """The last pull's outcome in the active language."""
        return translated_data(self.last_message_parts, self.last_message)


class GpuDeviceHour(models.Model):
    """One device (a GPU or a MIG slice) in one UTC hour [hour, hour + 1 h) for one pod,
    as a Prometheus-compatible TSDB aggregated it (apps/telemetry/pull/tsdb.py): the
    device-hour the rollup otherwise computes from raw samples (apps/telemetry/rollups/hourly.py,
    ``GPU_HOURS_SQL``), stored so that no raw sample is copied.

    Pod fields are blank for a GPU no pod uses. Kept forever, like the hourly rollups:
    the raw retention never deletes them, so their pool-hours are always rebuildable
    (apps/telemetry/rollups/retention.py). A re-pull of an hour replaces its rows by key.
    """

    device = models.ForeignKey(GpuDevice, on_delete=models.CASCADE, related_name="hours")
    hour = models.DateTimeField()
    namespace = models.CharField(max_length=255, blank=True)
    pod = models.CharField(max_length=255, blank=True)
    container = models.CharField(max_length=255, blank=True)
    # Utilisation samples in the hour (count_over_time): the weight of this row in the
    # device-hour's mean and in the workload attribution.
    samples = models.PositiveIntegerField()
    utilization_pct = models.FloatField(null=True)
    max_memory_used_mib = models.FloatField(null=True)
    # From the energy counter's increase; NULL where only power is known (power_w).
    energy_kwh = models.FloatField(null=True)
    power_w = models.FloatField(null=True, help_text="Mean power in the hour, W.")
    source = models.ForeignKey(
        PullSource, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    pulled_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["device", "hour", "namespace", "pod", "container"],
                name="gpu_device_hour_unique",
            )
        ]
        # The rollups read a pool's device-hours device by device through the key (its
        # first column is the device): no index on the hour alone, which the planner
        # would pick for the newest hour its statistics have not seen yet and scan the
        # whole fleet's hour for every pool (bench/README.md). A re-pull replaces a
        # source's hours.
        indexes = [models.Index(fields=["source", "hour"], name="gpu_device_hour_source")]
        ordering = ["device_id", "hour"]

    def __str__(self):
        return f"{self.device_id} {self.hour:%Y-%m-%d %H:00} {self.namespace}/{self.pod}"


class PoolDailyUsage(models.Model):
    """Daily sums of a pool's hourly rollups, so a report over a year reads 365 rows per
    pool, not 8,760; kept in step with the hourly rows by the rollup pipeline
    (apps/telemetry/rollups/days.py). Days are UTC days. The table keeps the name it was created
    with in the reports app."""

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
        db_table = "reports_pooldailyusage"

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
        db_table = "reports_workloaddailyrequests"

    def __str__(self):
        return f"{self.workload_id} {self.day}"


class WorkloadHourlyUsage(models.Model):
    """The GPU time a workload used in a shared pool, from the Kubernetes labels of the
    samples (dcgm-exporter's pod/namespace): a sample counts for the workload whose
    namespace and pod-name prefix it matches (the longest prefix wins).

    Per device and hour with n utilisation samples, m of them the workload's:
    ``allocated_gpu_hours`` += m ÷ n and ``busy_gpu_hours`` += Σ their utilisation ÷ 100 ÷ n,
    so a device serving one workload all hour adds exactly its pool-hour figures
    (apps/telemetry/rollups/hourly.py). Written with the pool's hourly rollup.
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
        db_table = "reports_workloadhourlyusage"

    def __str__(self):
        return f"{self.workload_id} {self.hour:%Y-%m-%d %H:00}"
