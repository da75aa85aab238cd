"""Procurement scenarios: a demand, the options that could serve it, and the exports of
their comparison. The maths lives in comparison.py; services.py joins the two."""

from decimal import Decimal

from django.conf import settings
from django.core.validators import (
    MaxValueValidator,
    MinValueValidator,
    RegexValidator,
)
from django.db import models
from django.urls import reverse
from simple_history.models import HistoricalRecords

from apps.core.jobs import Job
from apps.pools.models import ZONES_NEEDING_ICP_FILING, ComplianceZone


def _money(label, **kwargs):
    return models.DecimalField(
        label,
        max_digits=14,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        **kwargs,
    )


def _fraction(label, default, help_text):
    return models.DecimalField(
        label,
        max_digits=4,
        decimal_places=3,
        default=Decimal(default),
        validators=[MinValueValidator(Decimal("0.01")), MaxValueValidator(Decimal("1"))],
        help_text=help_text,
    )


class DemandSource(models.TextChoices):
    MEASURED_POOL = "measured_pool", "Measured: a pool's busy GPUs"
    MEASURED_WORKLOAD = "measured_workload", "Measured: a workload's curve"
    ENTERED = "entered", "Entered: GPU-hours per month and a 24-hour profile"
    TRAINING_JOB = "training_job", "Training job: 6·N·D"


class ComputePrecision(models.TextChoices):
    BF16 = "bf16", "BF16"
    FP16 = "fp16", "FP16"
    FP8 = "fp8", "FP8"
    INT8 = "int8", "INT8"


class Scenario(models.Model):
    name = models.CharField(max_length=120, unique=True)
    slug = models.SlugField(max_length=120, unique=True, help_text="Stable id used by the API.")
    description = models.TextField(blank=True)
    horizon_months = models.PositiveIntegerField(
        "Horizon (months)",
        default=36,
        validators=[MinValueValidator(1), MaxValueValidator(120)],
        help_text="How long the comparison runs; every cost is a total over it.",
    )
    currency = models.CharField(
        max_length=3,
        default="USD",
        validators=[RegexValidator(r"^[A-Z]{3}$", "Use a three-letter ISO 4217 code, e.g. USD.")],
        help_text="Every typed price is in this currency.",
    )
    usd_exchange_rate = models.DecimalField(
        "Exchange rate (currency per USD)",
        max_digits=12,
        decimal_places=6,
        default=Decimal("1"),
        validators=[MinValueValidator(Decimal("0.000001"))],
        help_text="Converts pool and SkyPilot prices (USD) into the scenario's currency.",
    )

    demand_source = models.CharField(
        max_length=20, choices=DemandSource.choices, default=DemandSource.MEASURED_WORKLOAD
    )
    demand_pool = models.ForeignKey(
        "pools.Pool",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name="Pool measured",
    )
    demand_workload = models.ForeignKey(
        "pools.Workload",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name="Workload measured",
    )
    window_days = models.PositiveIntegerField(
        "Measured window (days)",
        default=14,
        validators=[MinValueValidator(1), MaxValueValidator(366)],
        help_text="The hourly rollups of the last N days of telemetry.",
    )
    entered_gpu_hours_per_month = models.DecimalField(
        "GPU-hours per month",
        max_digits=14,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text="Entered demand, in reference GPU-hours; also the fallback while a "
        "measured source has no rollups.",
    )
    entered_hourly_profile = models.CharField(
        "24-hour profile",
        max_length=400,
        blank=True,
        help_text="24 comma-separated weights, hour 0 to 23 (e.g. 2,2,1,…); blank: flat.",
    )
    reference_gpu_model = models.ForeignKey(
        "catalog.GpuModel",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name="Reference GPU",
        help_text="The GPU demand is counted in. Measured sources use their pool's GPU.",
    )
    reference_efficiency = _fraction(
        "Reference efficiency",
        "0.400",
        "Share of the reference GPU's peak (or decode ceiling) the demand runs at; the MFU "
        "for a training job. 0–1.",
    )
    compute_precision = models.CharField(
        max_length=10,
        choices=ComputePrecision.choices,
        default=ComputePrecision.BF16,
        help_text="Which dense peak compares GPU models.",
    )
    model_architecture = models.ForeignKey(
        "catalog.ModelArchitecture",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Training job: N. Decode-ceiling options: the model served.",
    )
    training_tokens = models.PositiveBigIntegerField(
        "Training tokens", null=True, blank=True, help_text="D in 6·N·D."
    )
    training_gpus = models.PositiveIntegerField(
        "Training GPUs",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Reference GPUs the job runs on at once.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("procurement:scenario_detail", kwargs={"slug": self.slug})

    @property
    def horizon_hours(self) -> int:
        from apps.procurement.comparison import HOURS_PER_MONTH

        return self.horizon_months * HOURS_PER_MONTH

    def hourly_profile_weights(self) -> list[float] | None:
        """The 24 weights, or None for a flat day (validated by the form)."""
        if not self.entered_hourly_profile.strip():
            return None
        return [float(part) for part in self.entered_hourly_profile.split(",")]


class OptionKind(models.TextChoices):
    ON_DEMAND = "on_demand", "Cloud on-demand"
    RESERVED = "reserved", "Cloud reserved"
    OWNED = "owned", "Owned / bare-metal"
    HYBRID = "hybrid", "Hybrid: baseline + on-demand burst"


class HybridBaseline(models.TextChoices):
    RESERVED = "reserved", "Reserved"
    OWNED = "owned", "Owned"


class ThroughputBasis(models.TextChoices):
    DENSE_PEAK = "dense_peak", "Dense peak FLOP/s × efficiency"
    DECODE_CEILING = "decode_ceiling", "Decode ceiling (memory bandwidth) × efficiency"


class ScenarioOption(models.Model):
    """One option line. Blank prices come from ``source_pool`` (converted from USD)."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="options")
    position = models.PositiveSmallIntegerField(default=0, help_text="Order in the table.")
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=20, choices=OptionKind.choices)
    provider = models.CharField(max_length=100, blank=True)
    region = models.CharField(max_length=100, blank=True)
    compliance_zone = models.CharField(
        max_length=20, choices=ComplianceZone.choices, default=ComplianceZone.OTHER
    )
    gpu_model = models.ForeignKey(
        "catalog.GpuModel", on_delete=models.PROTECT, related_name="+", verbose_name="GPU model"
    )
    source_pool = models.ForeignKey(
        "pools.Pool",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name="Prices from pool",
        help_text="Blank price fields take this pool's prices.",
    )
    price_note = models.CharField(
        max_length=300, blank=True, help_text="Where the prices come from."
    )

    on_demand_price_per_gpu_hour = _money(
        "On-demand price per GPU-hour",
        help_text="Hybrid: the burst price. Reserved or owned: "
        "the price their break-even is measured against.",
    )
    reserved_price_per_gpu_hour = _money("Reserved price per GPU-hour")
    reserved_upfront_per_gpu = _money(
        "Reserved upfront per GPU", help_text="Paid once per term; spread over its hours."
    )
    reserved_term_months = models.PositiveIntegerField(
        "Reservation term (months)", null=True, blank=True, validators=[MinValueValidator(1)]
    )
    purchase_price_per_gpu = _money(
        "Purchase price per GPU", help_text="Server share included: server price ÷ GPUs."
    )
    amortisation_months = models.PositiveIntegerField(
        "Amortisation (months)", null=True, blank=True, validators=[MinValueValidator(1)]
    )
    power_price_per_kwh = _money("Power price per kWh")
    pue = models.DecimalField(
        "PUE",
        max_digits=4,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("1.00"))],
        help_text="Facility power ÷ IT power; 1.1–1.6 is typical.",
    )
    colocation_per_gpu_month = _money("Colocation per GPU-month")
    operations_per_month = _money(
        "Operations staff per month", help_text="Whole option: people, support contracts."
    )
    storage_per_month = _money(
        "Checkpoint storage per month",
        help_text="Typed for now; will come from the backup policy once backups land.",
    )
    network_per_month = _money("Network per month", help_text="Egress, interconnect, transit.")

    hybrid_baseline = models.CharField(
        "Hybrid baseline",
        max_length=10,
        choices=HybridBaseline.choices,
        default=HybridBaseline.RESERVED,
    )
    baseline_gpus = models.PositiveIntegerField(
        "Baseline GPUs",
        null=True,
        blank=True,
        help_text="Hybrid only; blank: the newsvendor optimum.",
    )
    throughput_basis = models.CharField(
        max_length=20, choices=ThroughputBasis.choices, default=ThroughputBasis.DENSE_PEAK
    )
    efficiency = _fraction(
        "Efficiency",
        "0.400",
        "Share of this GPU's peak (or decode ceiling) achieved; equal to the reference "
        "efficiency on the same GPU means equal work per GPU. 0–1.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["scenario", "position", "pk"]
        verbose_name = "option"

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return self.scenario.get_absolute_url()

    @property
    def needs_icp_filing(self) -> bool:
        return self.compliance_zone in ZONES_NEEDING_ICP_FILING

    @property
    def baseline_kind(self) -> str | None:
        """ "reserved" or "owned": which prices the paid-every-hour GPUs take."""
        if self.kind == OptionKind.HYBRID:
            return self.hybrid_baseline
        if self.kind in (OptionKind.RESERVED, OptionKind.OWNED):
            return self.kind
        return None


class ComparisonExport(Job):
    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        XLSX = "xlsx", "Excel (XLSX)"
        PDF = "pdf", "PDF"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Ready"
        FAILED = "failed", "Failed"
        INTERRUPTED = "interrupted", "Interrupted"

    not_started_status = Status.PENDING
    succeeded_status = Status.SUCCEEDED
    finished_statuses = (Status.SUCCEEDED, Status.FAILED, Status.INTERRUPTED)
    job_noun = "export"
    failure_sentence_template = (
        "The export stopped with an error ({error}). Ask for it again; the server log has "
        "the details."
    )

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="exports")
    format = models.CharField(max_length=10, choices=Format.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    file = models.FileField(upload_to="procurement/exports/%Y/%m/", blank=True)
    what_if = models.JSONField(
        "What-if inputs",
        default=dict,
        blank=True,
        help_text="The unsaved inputs the page showed when the export was asked for "
        "(name → value); empty: the scenario as saved.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "comparison export"

    def __str__(self):
        return f"{self.scenario} · {self.get_format_display()} #{self.pk}"

    def get_absolute_url(self):
        return reverse("procurement:export_detail", kwargs={"pk": self.pk})

    @property
    def filename(self) -> str:
        return f"{self.scenario.slug}-comparison-{self.pk}.{self.format}"

    def what_if_lines(self) -> list[tuple[str, object]]:
        """(label, value) of each what-if input the export applied."""
        return [
            (Scenario._meta.get_field(name).verbose_name, value)
            for name, value in self.what_if.items()
        ]
