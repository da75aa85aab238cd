"""Backup policies (one per workload), the version registry and recorded restore drills.

A backup that exists is not a backup that restores: a policy says what is kept where and
the recovery targets; versions are what was kept; drills prove a restore was tried and
met the targets. Every change is kept in the objects' history (django-simple-history).
"""

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from apps.backups import consistency, coverage, recovery_units
from apps.backups.querysets import BackupPolicyQuerySet, BackupVersionQuerySet
from apps.backups.validators import (
    CHECKSUM_HEX_LENGTHS,
    validate_config_hash,
    validate_not_date_only,
)
from apps.pools.models import Workload
from apps.pools.placement import QUANTIZED_PRECISIONS


class Tier(models.TextChoices):
    HOT = "hot", _("Hot (latest usable)")
    WARM = "warm", _("Warm (rollback versions)")
    COLD = "cold", _("Cold (archive)")


KEPT_TIERS = frozenset({Tier.HOT, Tier.WARM})


@dataclass(frozen=True)
class TierSetting:
    tier: str
    label: str
    location: str
    retention_count: int | None
    retention_days: int | None
    price_per_gb_month_usd: Decimal | None


# One whole label per tier and part, so that each reads naturally once translated.
TIER_LABELS = {
    "Hot": {
        "location": _("Hot tier location"),
        "retention_count": _("Hot tier retention (versions)"),
        "retention_days": _("Hot tier retention (days)"),
        "price": _("Hot tier price per GB-month (USD)"),
    },
    "Warm": {
        "location": _("Warm tier location"),
        "retention_count": _("Warm tier retention (versions)"),
        "retention_days": _("Warm tier retention (days)"),
        "price": _("Warm tier price per GB-month (USD)"),
    },
    "Cold": {
        "location": _("Cold tier location"),
        "retention_count": _("Cold tier retention (versions)"),
        "retention_days": _("Cold tier retention (days)"),
        "price": _("Cold tier price per GB-month (USD)"),
    },
}


def _tier_location(tier):
    return models.CharField(
        TIER_LABELS[tier]["location"],
        max_length=300,
        blank=True,
        help_text=_("e.g. s3://ckpt-hot/llama3-70b/ or nfs://store01/ckpt"),
    )


def _tier_retention_count(tier):
    return models.PositiveIntegerField(
        TIER_LABELS[tier]["retention_count"],
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
    )


def _tier_retention_days(tier):
    return models.PositiveIntegerField(
        TIER_LABELS[tier]["retention_days"],
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
    )


def _tier_price(tier):
    return models.DecimalField(
        TIER_LABELS[tier]["price"],
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
    )


class BackupPolicy(models.Model):
    # History: a workload with a backup policy (and its drills) is archived, never deleted.
    workload = models.OneToOneField(
        Workload, on_delete=models.PROTECT, related_name="backup_policy"
    )
    covered_items = models.JSONField(
        _("What is kept"),
        default=list,
        blank=True,
        help_text=_("Keys of apps/backups/coverage.py's checklist."),
    )
    current_data_version = models.CharField(
        _("Current data version"),
        max_length=100,
        blank=True,
        help_text=_(
            "What the workload trains on now; checkpoints of another data version are "
            "flagged as not comparable."
        ),
    )
    hot_location = _tier_location("Hot")
    hot_retention_count = _tier_retention_count("Hot")
    hot_retention_days = _tier_retention_days("Hot")
    hot_price_per_gb_month_usd = _tier_price("Hot")
    warm_location = _tier_location("Warm")
    warm_retention_count = _tier_retention_count("Warm")
    warm_retention_days = _tier_retention_days("Warm")
    warm_price_per_gb_month_usd = _tier_price("Warm")
    cold_location = _tier_location("Cold")
    cold_retention_count = _tier_retention_count("Cold")
    cold_retention_days = _tier_retention_days("Cold")
    cold_price_per_gb_month_usd = _tier_price("Cold")
    rpo_minutes = models.PositiveIntegerField(
        _("RPO target (minutes)"),
        validators=[MinValueValidator(1)],
        help_text=_("The most work (or the oldest version) a restore may lose."),
    )
    rto_minutes = models.PositiveIntegerField(
        _("RTO target (minutes)"),
        validators=[MinValueValidator(1)],
        help_text=_("How long a restore may take, from start to resumed."),
    )
    drill_frequency_days = models.PositiveIntegerField(
        _("Drill every (days)"), default=30, validators=[MinValueValidator(1)]
    )
    drill_retry_interval_days = models.PositiveIntegerField(
        _("Retry a failed drill after (days)"),
        default=7,
        validators=[MinValueValidator(1)],
        help_text=_(
            "After a failed drill the next one is due this soon, not a full drill "
            "interval later: the fix needs proving."
        ),
    )
    mtbf_hours = models.DecimalField(
        _("MTBF of the job (hours)"),
        max_digits=10,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.01"))],
        help_text=_("Blank: from the pool's recorded interruptions, scaled by the job's GPUs."),
    )
    checkpoint_size_gb = models.DecimalField(
        _("Checkpoint size (GB)"),
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.01"))],
        help_text=_("Weights + optimizer state, 10⁹ bytes. Blank: the latest checkpoint's size."),
    )
    notes = models.TextField(_("Notes"), blank=True)

    # Derived: refresh_coverage() before saving; the drill schedule by services.py.
    coverage_percent = models.PositiveSmallIntegerField(
        _("Coverage score (%)"), default=0, editable=False
    )
    last_drill_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_drill_passed = models.BooleanField(null=True, blank=True, editable=False)
    drill_due_at = models.DateTimeField(null=True, blank=True, editable=False)
    overdue_since = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BackupPolicyQuerySet.as_manager()

    # The drill schedule changes with every drill and every day: drills have their own
    # history, and the schedule is recomputed from them.
    history = HistoricalRecords(
        excluded_fields=[
            "updated_at",
            "last_drill_at",
            "last_drill_passed",
            "drill_due_at",
            "overdue_since",
        ]
    )

    class Meta:
        ordering = ["workload__name"]
        verbose_name_plural = _("backup policies")

    def __str__(self):
        return f"backup policy of {self.workload}"

    def get_absolute_url(self):
        return reverse("backups:policy_detail", kwargs={"slug": self.workload.slug})

    @property
    def name(self) -> str:
        return gettext("the backup policy of %(name)s") % {"name": self.workload.name}

    @property
    def side(self) -> str:
        return coverage.TRAINING if self.workload.is_training else coverage.INFERENCE

    @property
    def quantized(self) -> bool:
        if self.workload.is_training:
            return False
        return self.workload.weight_precision in QUANTIZED_PRECISIONS

    def coverage(self) -> coverage.Coverage:
        return coverage.assess_coverage(self.side, self.covered_items, quantized=self.quantized)

    def refresh_coverage(self):
        """Recompute the stored score from the checklist (call before save)."""
        self.coverage_percent = self.coverage().score_percent

    def tiers(self) -> list[TierSetting]:
        return [
            TierSetting(
                tier=tier.value,
                label=tier.label,
                location=getattr(self, f"{tier.value}_location"),
                retention_count=getattr(self, f"{tier.value}_retention_count"),
                retention_days=getattr(self, f"{tier.value}_retention_days"),
                price_per_gb_month_usd=getattr(self, f"{tier.value}_price_per_gb_month_usd"),
            )
            for tier in Tier
        ]

    def is_overdue_at(self, now=None) -> bool:
        now = now or timezone.now()
        return self.drill_due_at is not None and self.drill_due_at < now

    @property
    def rpo_seconds(self) -> int:
        return self.rpo_minutes * 60

    @property
    def rto_seconds(self) -> int:
        return self.rto_minutes * 60

    def drill_interval_days_after(self, verdict) -> int:
        """Days from a drill with this verdict (None: never drilled, from the policy's
        creation) to the next one due. A retry never waits longer than a regular drill."""
        if verdict == DrillVerdict.FAILED:
            return min(self.drill_retry_interval_days, self.drill_frequency_days)
        return self.drill_frequency_days

    @property
    def next_drill_interval_days(self) -> int:
        return self.drill_interval_days_after(self.last_drill_verdict)

    @property
    def last_drill_verdict(self) -> str | None:
        """The latest drill's verdict (None: never drilled). ``last_drill_passed`` holds it
        for SQL: true passed, false failed, null not verified."""
        if self.last_drill_at is None:
            return None
        if self.last_drill_passed is None:
            return DrillVerdict.NOT_VERIFIED
        return DrillVerdict.PASSED if self.last_drill_passed else DrillVerdict.FAILED


class VersionKind(models.TextChoices):
    TRAINING_CHECKPOINT = "training_checkpoint", _("Training checkpoint")
    INFERENCE_RELEASE = "inference_release", _("Inference release (full precision)")
    QUANTIZED_VARIANT = "quantized_variant", _("Quantized variant")


RELEASE_KINDS = frozenset({VersionKind.INFERENCE_RELEASE, VersionKind.QUANTIZED_VARIANT})


class VersionPrecision(models.TextChoices):
    FP32 = "fp32", "FP32"
    TF32 = "tf32", "TF32"
    BF16 = "bf16", "BF16"
    FP16 = "fp16", "FP16"
    FP8 = "fp8", "FP8"
    INT8 = "int8", "INT8"
    INT4 = "int4", "INT4"


QUANTIZED_VERSION_PRECISIONS = frozenset(
    {VersionPrecision.FP8, VersionPrecision.INT8, VersionPrecision.INT4}
)


class ChecksumAlgorithm(models.TextChoices):
    SHA256 = "sha256", "SHA-256"
    SHA512 = "sha512", "SHA-512"
    SHA1 = "sha1", "SHA-1"
    MD5 = "md5", "MD5"
    BLAKE2B_256 = "blake2b-256", "BLAKE2b-256"
    XXH64 = "xxh64", "xxHash64"
    CRC32C = "crc32c", "CRC-32C"


assert set(ChecksumAlgorithm.values) == set(CHECKSUM_HEX_LENGTHS)


def version_name(*, model_name, precision, data_version, config_hash, step=None, tag="") -> str:
    """model-precision[-data<version>]-cfg<hash>[-step<n>][-tag], never just a date."""
    parts = [model_name.strip(), precision]
    if data_version:
        parts.append(f"data{data_version.strip()}")
    parts.append(f"cfg{config_hash[:12]}")
    if step is not None:
        parts.append(f"step{step}")
    if tag:
        parts.append(tag.strip())
    return "-".join(parts)


def version_rule_errors(*, workload, kind, precision, data_version) -> dict[str, str]:
    """What a version's parts break, by field: one rule for the form and the API."""
    errors = {}
    training_kind = kind == VersionKind.TRAINING_CHECKPOINT
    if workload is not None and kind and training_kind != workload.is_training:
        errors["kind"] = gettext(
            "Training workloads keep training checkpoints; inference workloads keep "
            "releases and quantized variants."
        )
    if training_kind and not data_version:
        errors["data_version"] = gettext(
            "A training checkpoint must record its data version, or nobody can tell what it "
            "was trained on."
        )
    # Quantized variants are kept apart from full-precision releases (PRODUCT.md).
    if kind == VersionKind.QUANTIZED_VARIANT and precision not in QUANTIZED_VERSION_PRECISIONS:
        errors["precision"] = gettext(
            "A quantized variant is FP8, INT8 or INT4; register full precision as a release."
        )
    elif kind == VersionKind.INFERENCE_RELEASE and precision in QUANTIZED_VERSION_PRECISIONS:
        errors["precision"] = gettext(
            "FP8, INT8 and INT4 models are quantized variants: register them as such."
        )
    return errors


def version_name_clash(workload, name, *, exclude_pk=None) -> str | None:
    """Why ``name`` cannot be used for another version of ``workload``, or None."""
    clash = BackupVersion.objects.filter(workload=workload, name=name)
    if exclude_pk is not None:
        clash = clash.exclude(pk=exclude_pk)
    if not clash.exists():
        return None
    return gettext(
        "%(workload)s already has a version named %(name)s: give a training step or a tag "
        "to tell them apart."
    ) % {"workload": workload.name, "name": name}


class BackupVersion(models.Model):
    # History: a workload with backup versions is archived, never deleted.
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="backup_versions")
    kind = models.CharField(_("Kind"), max_length=30, choices=VersionKind.choices)
    name = models.CharField(
        max_length=300,
        editable=False,
        help_text=_("Generated from model, data, precision, config."),
    )
    model_name = models.CharField(
        _("Model"),
        max_length=100,
        validators=[validate_not_date_only],
        help_text=_("What was trained or served, e.g. llama-3-70b."),
    )
    data_version = models.CharField(
        _("Data version"),
        max_length=100,
        blank=True,
        help_text=_("Required for training checkpoints, e.g. 2024q2-dedup-v3."),
    )
    precision = models.CharField(_("Precision"), max_length=10, choices=VersionPrecision.choices)
    config_hash = models.CharField(
        _("Config hash"),
        max_length=64,
        validators=[validate_config_hash],
        help_text=_("Hex digest of the training or service config (7–64 hex digits)."),
    )
    step = models.PositiveBigIntegerField(
        _("Training step"), null=True, blank=True, help_text=_("Checkpoints only.")
    )
    tag = models.SlugField(_("Tag"), max_length=40, blank=True, help_text=_("Optional, e.g. rc1."))
    tier = models.CharField(_("Tier"), max_length=10, choices=Tier.choices)
    location = models.CharField(
        _("Location"), max_length=500, help_text=_("Where it is stored (URI).")
    )
    size_bytes = models.PositiveBigIntegerField(
        _("Size (bytes)"), validators=[MinValueValidator(1)]
    )
    created_at = models.DateTimeField(
        _("Created at"),
        default=timezone.now,
        help_text=_("When the checkpoint or release was made."),
    )
    checksum_algorithm = models.CharField(
        _("Checksum algorithm"),
        max_length=20,
        choices=ChecksumAlgorithm.choices,
        default=ChecksumAlgorithm.SHA256,
    )
    # Release record (inference releases and quantized variants)
    stable_since = models.DateTimeField(null=True, blank=True, editable=False)
    gray_ratio_percent = models.DecimalField(
        _("Gray ratio (%)"),
        max_digits=5,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("100"))],
        help_text=_("Share of traffic the release served during its gray/canary phase."),
    )
    rollback_steps = models.TextField(_("Rollback steps"), blank=True)
    validation_results = models.TextField(
        _("Validation-set results"), blank=True, help_text=_("e.g. MMLU 79.1 (baseline 79.4).")
    )
    release_owner = models.CharField(_("Release owner"), max_length=150, blank=True)
    purged_at = models.DateTimeField(
        _("Purged at"), null=True, blank=True, help_text=_("Set when the stored copy was deleted.")
    )
    registered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )
    registered_at = models.DateTimeField(auto_now_add=True)

    objects = BackupVersionQuerySet.as_manager()
    history = HistoricalRecords()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "name"], name="backups_version_name_unique_per_workload"
            )
        ]
        indexes = [models.Index(fields=["workload", "kind", "-created_at"])]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("backups:version_detail", kwargs={"pk": self.pk})

    def refresh_name(self):
        """Regenerate the name from its parts (call before save)."""
        self.name = version_name(
            model_name=self.model_name,
            precision=self.precision,
            data_version=self.data_version,
            config_hash=self.config_hash,
            step=self.step,
            tag=self.tag,
        )

    @property
    def is_kept(self) -> bool:
        return self.purged_at is None

    @property
    def is_release(self) -> bool:
        return self.kind in RELEASE_KINDS

    def comparable_with(self, current_data_version: str) -> bool:
        """A checkpoint of another data version than the workload's current one cannot be
        compared with (or resumed into) the current run."""
        if self.kind != VersionKind.TRAINING_CHECKPOINT or not current_data_version:
            return True
        return self.data_version == current_data_version


class VersionChecksum(models.Model):
    """One node's or replica's checksum of a version, as the training script or CI saw it."""

    version = models.ForeignKey(BackupVersion, on_delete=models.CASCADE, related_name="checksums")
    node = models.CharField(
        _("Node or replica"), max_length=100, help_text=_("e.g. node-03/rank-24 or replica-2.")
    )
    checksum = models.CharField(_("Checksum"), max_length=128)
    recorded_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["node"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "node"], name="backups_checksum_unique_per_node"
            )
        ]

    def __str__(self):
        return f"{self.node}: {self.checksum[:12]}…"


class DrillVerdict(models.TextChoices):
    PASSED = "passed", _("Passed")
    FAILED = "failed", _("Failed")
    # Nothing failed, but some node's checksum was not recorded on one side: the restore
    # is not proven consistent, nor shown inconsistent.
    NOT_VERIFIED = "not_verified", _("Not verified")


class DrillOutcome(models.TextChoices):
    RESTORED = "restored", _("Restored and working")
    RESTORED_WITH_ISSUES = "restored_with_issues", _("Restored, with issues")
    FAILED = "failed", _("Restore failed")


def evidence_path(drill, filename):
    return f"backups/evidence/{timezone.now():%Y/%m}/{filename}"


class RestoreDrill(models.Model):
    policy = models.ForeignKey(BackupPolicy, on_delete=models.CASCADE, related_name="drills")
    version = models.ForeignKey(
        BackupVersion,
        on_delete=models.PROTECT,
        related_name="drills",
        verbose_name=_("Version restored"),
    )
    restored_from_tier = models.CharField(_("Restored from"), max_length=10, choices=Tier.choices)
    performed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("Performed by"),
    )
    started_at = models.DateTimeField(_("Started at"))
    finished_at = models.DateTimeField(
        _("Finished at"), help_text=_("When the service answered or training ran again.")
    )
    reference_time = models.DateTimeField(
        _("Reference time"),
        null=True,
        blank=True,
        help_text=_(
            "The moment the drill plays the failure; the RPO is the restored version's "
            "age then. Blank: the start."
        ),
    )
    resumed = models.BooleanField(
        _("Service or training resumed"),
        default=False,
        help_text=_("It answered or trained again."),
    )
    outcome = models.CharField(_("Result"), max_length=30, choices=DrillOutcome.choices)
    observed_checksums = models.TextField(
        _("Checksums after the restore"),
        blank=True,
        help_text=_("One line per node or replica: name, a space, the checksum."),
    )
    notes = models.TextField(_("Notes"), blank=True)
    evidence = models.FileField(
        _("Evidence"),
        upload_to=evidence_path,
        blank=True,
        max_length=300,
        help_text=_("A log, screenshot or report of the drill (stored on the server)."),
    )

    # Computed by evaluate() when the drill is recorded; targets as they were then.
    rto_target_minutes = models.PositiveIntegerField(editable=False, default=0)
    rpo_target_minutes = models.PositiveIntegerField(editable=False, default=0)
    actual_rto_seconds = models.PositiveIntegerField(editable=False, default=0)
    actual_rpo_seconds = models.PositiveBigIntegerField(editable=False, default=0)
    checksums_compared = models.PositiveIntegerField(
        editable=False, default=0, help_text=_("Nodes with a checksum on both sides.")
    )
    checksums_matched = models.PositiveIntegerField(editable=False, default=0)
    checksum_mismatches = models.JSONField(editable=False, default=list)
    checksums_unverified = models.JSONField(
        editable=False,
        default=list,
        help_text=_("Nodes whose checksum is blank on one side: neither a match nor a mismatch."),
    )
    verdict = models.CharField(
        max_length=20, choices=DrillVerdict.choices, editable=False, default=DrillVerdict.FAILED
    )
    passed = models.BooleanField(editable=False, default=False)
    failure_reasons = models.JSONField(editable=False, default=list)
    recorded_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["-finished_at", "-id"]
        indexes = [models.Index(fields=["policy", "-finished_at"])]

    def __str__(self):
        return f"drill of {self.version} on {self.finished_at:%Y-%m-%d}"

    def get_absolute_url(self):
        return reverse("backups:drill_detail", kwargs={"pk": self.pk})

    @property
    def name(self) -> str:
        return gettext("the drill of %(when)s") % {"when": f"{self.finished_at:%Y-%m-%d %H:%M}"}

    @property
    def rto_target_seconds(self) -> int:
        return self.rto_target_minutes * 60

    @property
    def rpo_target_seconds(self) -> int:
        return self.rpo_target_minutes * 60

    @property
    def rto_met(self) -> bool:
        return self.actual_rto_seconds <= self.rto_target_seconds

    @property
    def rpo_met(self) -> bool:
        return self.actual_rpo_seconds <= self.rpo_target_seconds

    @property
    def checksum_summary(self) -> str:
        return consistency.checksum_summary(
            matched=self.checksums_matched,
            mismatched_nodes=[row["node"] for row in self.checksum_mismatches],
            unverified=len(self.checksums_unverified),
        )

    @property
    def verdict_sentence(self) -> str:
        if self.verdict == DrillVerdict.NOT_VERIFIED:
            return gettext("not verified. %(summary)s.") % {"summary": self.checksum_summary}
        if self.verdict == DrillVerdict.PASSED:
            return gettext("it passed.")
        return gettext("it failed.")

    @property
    def failure_reason_sentences(self) -> list[str]:
        """The failure reasons in the reader's language. ``failure_reasons`` keeps them in
        English (the API and the history show what was stored); every reason follows from
        the drill's stored figures, so the page words them again instead of storing a
        translation."""
        if not self.failure_reasons:
            return []
        return self._reasons()

    def _reasons(self) -> list[str]:
        policy = self.policy
        reasons = []
        if self.outcome == DrillOutcome.FAILED:
            reasons.append(gettext("The restore failed."))
        if not self.resumed:
            reasons.append(
                gettext("The training did not resume.")
                if policy.workload.is_training
                else gettext("The service did not answer again.")
            )
        if not self.rto_met:
            actual, target = recovery_units.format_pair(
                self.actual_rto_seconds, self.rto_target_seconds
            )
            reasons.append(
                gettext("Took %(actual)s against an RTO of %(target)s.")
                % {"actual": actual, "target": target}
            )
        if not self.rpo_met:
            actual, target = recovery_units.format_pair(
                self.actual_rpo_seconds, self.rpo_target_seconds
            )
            reasons.append(
                gettext("The restored version was %(actual)s old against an RPO of %(target)s.")
                % {"actual": actual, "target": target}
            )
        if self.checksum_mismatches:
            reasons.append(gettext("%(summary)s.") % {"summary": self.checksum_summary})
        if self.outcome == DrillOutcome.RESTORED_WITH_ISSUES and not reasons:
            reasons.append(gettext("Restored with issues (see the notes)."))
        return reasons

    def evaluate(self, comparison: consistency.ChecksumComparison):
        """Actual RTO (start → resumed) and RPO (the version's age at the reference time)
        against the policy's targets, and the verdict with its reasons: failed when any
        reason holds, not verified when nothing failed but a node's checksums were not
        both recorded, else passed."""
        policy, version = self.policy, self.version
        self.rto_target_minutes = policy.rto_minutes
        self.rpo_target_minutes = policy.rpo_minutes
        reference = self.reference_time or self.started_at
        self.actual_rto_seconds = max(
            0, round((self.finished_at - self.started_at).total_seconds())
        )
        self.actual_rpo_seconds = max(0, round((reference - version.created_at).total_seconds()))
        self.checksums_compared = comparison.compared
        self.checksums_matched = len(comparison.matched)
        self.checksum_mismatches = list(comparison.mismatches)
        self.checksums_unverified = list(comparison.unverified)
        # Stored in English, like every other stored sentence; pages word them again.
        with translation.override("en"):
            reasons = self._reasons()
        self.failure_reasons = reasons
        if reasons:
            self.verdict = DrillVerdict.FAILED
        elif not comparison.verified:
            self.verdict = DrillVerdict.NOT_VERIFIED
        else:
            self.verdict = DrillVerdict.PASSED
        self.passed = self.verdict == DrillVerdict.PASSED
