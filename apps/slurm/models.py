"""Slurm jobs as the cluster's accounting (``sacct``) printed them, and the imports that
brought them in (apps/slurm/services.py)."""

import fnmatch

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop
from simple_history.models import HistoricalRecords

from apps.core.jobs import Job
from apps.core.texts import translated_data

# GPU-hours are kept to the micro-GPU-hour: a 1-GPU job of one second is 0.000278.
GPU_HOURS_PLACES = 6


class SlurmImport(models.Model):
    """One import of ``sacct --parsable2`` text: who, when, and what became of each line."""

    class Source(models.TextChoices):
        UPLOAD = "upload", _("upload page")
        API = "api", _("API")
        COMMAND = "command", _("command")
        PULL = "pull", _("scheduled sacct pull")

    cluster = models.ForeignKey(
        "clusters.Cluster",
        on_delete=models.PROTECT,
        related_name="slurm_imports",
        verbose_name=_("cluster"),
    )
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("imported by"),
    )
    imported_at = models.DateTimeField(_("imported at"))
    source = models.CharField(_("source"), max_length=20, choices=Source.choices)
    file_name = models.CharField(_("file name"), max_length=255, blank=True)
    accepted = models.PositiveIntegerField(_("accepted"), default=0)
    duplicates = models.PositiveIntegerField(_("duplicates"), default=0)
    updated = models.PositiveIntegerField(_("updated"), default=0)
    rejected = models.PositiveIntegerField(_("rejected"), default=0)
    steps = models.PositiveIntegerField(_("step rows"), default=0)
    # [{"line": 7, "message": "…"}], in the order of the text's lines.
    errors = models.JSONField(_("errors"), default=list, blank=True)

    class Meta:
        ordering = ["-imported_at", "-pk"]
        verbose_name = _("Slurm import")
        verbose_name_plural = _("Slurm imports")

    def __str__(self):
        return f"{self.cluster} {self.imported_at:%Y-%m-%d %H:%M}"


class SlurmJobQuerySet(models.QuerySet):
    def gpu_hours_total(self):
        return self.aggregate(total=models.Sum("gpu_hours"))["total"]


class SlurmJob(models.Model):
    """A job (an array task and a heterogeneous component are jobs of their own), never
    a step: steps add no GPU-hours and are not kept."""

    cluster = models.ForeignKey(
        "clusters.Cluster",
        on_delete=models.PROTECT,
        related_name="slurm_jobs",
        verbose_name=_("cluster"),
    )
    job_id = models.CharField(_("job id"), max_length=100, help_text=_("As sacct prints JobID."))
    job_id_raw = models.CharField(_("raw job id"), max_length=100, blank=True)
    user = models.CharField(_("user"), max_length=100, blank=True)
    account = models.CharField(_("account"), max_length=100, blank=True)
    partition = models.CharField(_("partition"), max_length=200, blank=True)
    qos = models.CharField("QOS", max_length=100, blank=True)
    job_name = models.CharField(_("job name"), max_length=500, blank=True)
    state = models.CharField(_("state"), max_length=40)
    state_raw = models.CharField(_("state as printed"), max_length=100, blank=True)
    start = models.DateTimeField(_("start"), null=True, blank=True)
    end = models.DateTimeField(_("end"), null=True, blank=True, help_text=_("Empty while running."))
    elapsed_seconds = models.DecimalField(_("elapsed (s)"), max_digits=14, decimal_places=3)
    gpus = models.PositiveIntegerField(_("GPUs"), default=0)
    gpu_type = models.CharField(_("GPU type"), max_length=100, blank=True)
    gpu_hours = models.DecimalField(
        _("GPU-hours"), max_digits=18, decimal_places=GPU_HOURS_PLACES, default=0
    )
    nodes = models.PositiveIntegerField(_("nodes"), default=0)
    node_list = models.TextField(_("node list"), blank=True)
    node_names = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    alloc_tres = models.TextField("AllocTRES", blank=True)
    req_tres = models.TextField("ReqTRES", blank=True)
    billing = models.CharField(_("billing"), max_length=50, blank=True)
    tres_usage_in_tot = models.TextField("TRESUsageInTot", blank=True)
    admin_comment = models.TextField("AdminComment", blank=True)
    # Who the job's GPUs count for, as the mapping rules say (empty until a rule matches).
    workload = models.ForeignKey(
        "pools.Workload",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="slurm_jobs",
        verbose_name=_("workload"),
    )
    team = models.ForeignKey(
        "accounts.Team",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="slurm_jobs",
        verbose_name=_("team"),
    )
    # The interruption the job's ending state recorded (apps/slurm/interruptions.py):
    # kept so a re-import updates it rather than adding another.
    interruption = models.OneToOneField(
        "pools.Interruption",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="slurm_job",
        verbose_name=_("interruption"),
    )
    # The row's columns as sacct printed them: an import of the same row is a duplicate.
    fields = models.JSONField(default=dict)
    first_imported_at = models.DateTimeField(_("first imported at"))
    last_import = models.ForeignKey(
        SlurmImport,
        on_delete=models.PROTECT,
        related_name="jobs",
        verbose_name=_("last import"),
    )

    objects = SlurmJobQuerySet.as_manager()

    class Meta:
        ordering = ["-start", "job_id"]
        verbose_name = _("Slurm job")
        verbose_name_plural = _("Slurm jobs")
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "job_id"], name="slurm_job_unique_per_cluster"
            )
        ]
        indexes = [
            models.Index(fields=["cluster", "start"], name="slurm_job_cluster_start"),
            models.Index(fields=["user"], name="slurm_job_user"),
            models.Index(fields=["account"], name="slurm_job_account"),
        ]

    def __str__(self):
        return f"{self.job_id} ({self.cluster})"

    @property
    def is_running(self) -> bool:
        return self.end is None and self.start is not None


class SlurmMappingRule(models.Model):
    """Jobs whose account, partition, QOS, user or job name matches ``pattern`` count for
    the rule's workload and team. Rules are tried by priority (lower first, then the
    oldest); the first that matches a job maps it (apps/slurm/mapping.py)."""

    class Field(models.TextChoices):
        ACCOUNT = "account", _("account")
        PARTITION = "partition", _("partition")
        QOS = "qos", "QOS"
        USER = "user", _("user")
        JOB_NAME = "job_name", _("job name")

    cluster = models.ForeignKey(
        "clusters.Cluster",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="slurm_rules",
        verbose_name=_("cluster"),
        help_text=_("Blank: the jobs of every cluster."),
    )
    field = models.CharField(_("job field"), max_length=20, choices=Field.choices)
    pattern = models.CharField(
        _("pattern"),
        max_length=255,
        help_text=_(
            "Shell-style: proj-* matches proj-llm; gpu? matches gpu1; without * ? or [ ] "
            "the value must be equal. Letter case counts."
        ),
    )
    workload = models.ForeignKey(
        "pools.Workload",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="slurm_rules",
        verbose_name=_("workload"),
    )
    team = models.ForeignKey(
        "accounts.Team",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="slurm_rules",
        verbose_name=_("team"),
        help_text=_("Blank: the workload's team (its own, else its pool's)."),
    )
    priority = models.PositiveIntegerField(
        _("priority"),
        default=100,
        help_text=_("Lower numbers are tried first; the first matching rule wins."),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["priority", "id"]
        verbose_name = _("Slurm mapping rule")
        verbose_name_plural = _("Slurm mapping rules")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(workload__isnull=False) | models.Q(team__isnull=False),
                name="slurm_rule_maps_to_something",
            )
        ]

    def __str__(self):
        return f"{self.get_field_display()} {self.pattern}"

    def get_absolute_url(self):
        return reverse("slurm:rule_edit", kwargs={"pk": self.pk})

    @property
    def name(self) -> str:
        """What confirmation pages call it."""
        return str(self)

    def matches(self, job) -> bool:
        if self.cluster_id is not None and self.cluster_id != job.cluster_id:
            return False
        value = getattr(job, self.field) or ""
        return bool(value) and fnmatch.fnmatchcase(value, self.pattern)


class SlurmPull(models.Model):
    """One run of ``sacct`` for a cluster (apps/slurm/pull.py): the window it asked for,
    how it ended, and the import it made. A failed run says why in a sentence a person
    can act on; the next run asks again from the last successful one's end."""

    class Status(models.TextChoices):
        RUNNING = "running", _("running")
        SUCCEEDED = "succeeded", _("succeeded")
        FAILED = "failed", _("failed")

    cluster = models.ForeignKey(
        "clusters.Cluster",
        on_delete=models.CASCADE,
        related_name="slurm_pulls",
        verbose_name=_("cluster"),
    )
    started_at = models.DateTimeField(_("started at"))
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    status = models.CharField(
        _("status"), max_length=10, choices=Status.choices, default=Status.RUNNING
    )
    since = models.DateTimeField(_("jobs since"))
    until = models.DateTimeField(_("jobs until"))
    command = models.TextField(_("command"), blank=True)
    exit_code = models.IntegerField(_("exit code"), null=True, blank=True)
    stderr = models.TextField(_("standard error"), blank=True)
    error = models.TextField(_("error"), blank=True)
    error_parts = models.JSONField(default=list, blank=True)
    slurm_import = models.OneToOneField(
        SlurmImport,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="pull",
        verbose_name=_("import"),
    )

    class Meta:
        ordering = ["-started_at", "-pk"]
        verbose_name = _("Slurm pull")
        verbose_name_plural = _("Slurm pulls")
        indexes = [models.Index(fields=["cluster", "status", "started_at"], name="slurm_pull_last")]

    def __str__(self):
        return f"{self.cluster} {self.started_at:%Y-%m-%d %H:%M} {self.status}"

    @property
    def error_in_language(self) -> str:
        """Why it failed, in the active language."""
        return translated_data(self.error_parts, self.error)


class SlurmRemap(Job):
    """Mapping every stored job again by the rules as they are (apps/slurm/remap.py),
    after a rule was added, changed or deleted: inline when the jobs are few, else on a
    worker, with its progress for the rules page."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Done")
        FAILED = "failed", _("Failed")
        INTERRUPTED = "interrupted", _("Interrupted")

    not_started_status = Status.QUEUED
    succeeded_status = Status.SUCCEEDED
    finished_statuses = (Status.SUCCEEDED, Status.FAILED, Status.INTERRUPTED)
    job_noun = _("re-map")
    # A re-map is one transaction: a failed one leaves every job as it was.
    failure_sentence_template = gettext_noop(
        "The re-map stopped with an error (%(error)s); the jobs keep their earlier mapping. "
        "Re-map them again from this page; the server log has the details."
    )

    status = models.CharField(
        _("status"), max_length=12, choices=Status.choices, default=Status.QUEUED
    )
    jobs_total = models.PositiveIntegerField(_("jobs read"), default=0)
    jobs_changed = models.PositiveIntegerField(_("jobs re-mapped"), default=0)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("requested by"),
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("Slurm re-map")
        verbose_name_plural = _("Slurm re-maps")

    def __str__(self):
        return f"re-map {self.pk} {self.status}"
