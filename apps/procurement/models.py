"""Procurement scenarios: a demand, the options that could serve it, and the exports of
their comparison. The maths lives in comparison/maths.py; comparison/services.py joins the two."""

from decimal import Decimal

from django.conf import settings
from django.core.validators import (
    MaxValueValidator,
    MinValueValidator,
    RegexValidator,
)
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import cached_property
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from apps.core.jobs import Job
from apps.currencies.codes import USD
from apps.currencies.models import ExchangeRate
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
    MEASURED_POOL = "measured_pool", _("Measured: a pool's busy GPUs")
    MEASURED_WORKLOAD = "measured_workload", _("Measured: a workload's curve")
    ENTERED = "entered", _("Entered: GPU-hours per month and a 24-hour profile")
    TRAINING_JOB = "training_job", _("Training job: 6·N·D")


class ComputePrecision(models.TextChoices):
    BF16 = "bf16", "BF16"
    FP16 = "fp16", "FP16"
    FP8 = "fp8", "FP8"
    INT8 = "int8", "INT8"


class Scenario(models.Model):
    name = models.CharField(_("name"), max_length=120, unique=True)
    slug = models.SlugField(
        _("slug"), max_length=120, unique=True, help_text=_("Stable id used by the API.")
    )
    description = models.TextField(_("description"), blank=True)
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="scenarios",
        verbose_name=_("team"),
        help_text=_("The team that weighs this purchase; none: shared by every team."),
    )
    horizon_months = models.PositiveIntegerField(
        _("Horizon (months)"),
        default=36,
        validators=[MinValueValidator(1), MaxValueValidator(120)],
        help_text=_("How long the comparison runs; every cost is a total over it."),
    )
    currency = models.CharField(
        _("currency"),
        max_length=3,
        default="USD",
        validators=[
            RegexValidator(r"^[A-Z]{3}$", _("Use a three-letter ISO 4217 code, e.g. USD."))
        ],
        help_text=_("Every typed price is in this currency."),
    )
    # Blank: the exchange rates page's rate of the currency for the current month (or
    # the latest month before it that has one); a typed rate overrides it.
    usd_exchange_rate = models.DecimalField(
        _("Exchange rate (currency per USD)"),
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        default=None,
        validators=[MinValueValidator(Decimal("0.000001"))],
        help_text=_(
            "Converts pool and SkyPilot prices (USD) into the scenario's currency; blank: the "
            "month's rate from the exchange rates."
        ),
    )

    demand_source = models.CharField(
        _("demand source"),
        max_length=20,
        choices=DemandSource.choices,
        default=DemandSource.MEASURED_WORKLOAD,
    )
    demand_pool = models.ForeignKey(
        "pools.Pool",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("Pool measured"),
    )
    demand_workload = models.ForeignKey(
        "pools.Workload",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("Workload measured"),
    )
    window_days = models.PositiveIntegerField(
        _("Measured window (days)"),
        default=14,
        validators=[MinValueValidator(1), MaxValueValidator(366)],
        help_text=_("The hourly rollups of the last N days of telemetry."),
    )
    entered_gpu_hours_per_month = models.DecimalField(
        _("GPU-hours per month"),
        max_digits=14,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text=_(
            "Entered demand, in reference GPU-hours; also the fallback while a "
            "measured source has no rollups."
        ),
    )
    entered_hourly_profile = models.CharField(
        _("24-hour profile"),
        max_length=400,
        blank=True,
        help_text=_("24 comma-separated weights, hour 0 to 23 (e.g. 2,2,1,…); blank: flat."),
    )
    reference_gpu_model = models.ForeignKey(
        "catalog.GpuModel",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("Reference GPU"),
        help_text=_("The GPU demand is counted in. Measured sources use their pool's GPU."),
    )
    reference_efficiency = _fraction(
        _("Reference efficiency"),
        "0.400",
        _(
            "Share of the reference GPU's peak (or decode ceiling) the demand runs at; the MFU "
            "for a training job. 0–1."
        ),
    )
    compute_precision = models.CharField(
        _("compute precision"),
        max_length=10,
        choices=ComputePrecision.choices,
        default=ComputePrecision.BF16,
        help_text=_("Which dense peak compares GPU models."),
    )
    model_architecture = models.ForeignKey(
        "catalog.ModelArchitecture",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("model architecture"),
        help_text=_("Training job: N. Decode-ceiling options: the model served."),
    )
    training_tokens = models.PositiveBigIntegerField(
        _("Training tokens"), null=True, blank=True, help_text=_("D in 6·N·D.")
    )
    training_gpus = models.PositiveIntegerField(
        _("Training GPUs"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("Reference GPUs the job runs on at once."),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    min_ddos_protection_gbps = models.DecimalField(
        _("Minimum DDoS protection (Gbps)"),
        max_digits=8,
        decimal_places=1,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text=_("Blank: no requirement."),
    )
    accepted_line_types = models.JSONField(
        _("Line types accepted"),
        default=list,
        blank=True,
        help_text=_("None ticked: any line type."),
    )
    no_icp_filing = models.BooleanField(
        _("No ICP filing (备案)"),
        default=False,
        help_text=_("Ticked: an option whose region needs an ICP filing misses."),
    )
    min_ip_address_count = models.PositiveIntegerField(
        _("Minimum IP addresses"), null=True, blank=True, help_text=_("Blank: no requirement.")
    )

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["name"]
        verbose_name = _("scenario")

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("procurement:scenario_detail", kwargs={"slug": self.slug})

    @cached_property
    def rate_in_use(self) -> tuple[Decimal | None, str]:
        """(units of the scenario's currency per USD, where it comes from): the typed
        rate, 1 for USD, or the exchange rates' latest month up to the current one; None
        when there is none (the comparison then says so rather than assume 1)."""
        if self.usd_exchange_rate is not None:
            return Decimal(self.usd_exchange_rate), gettext("typed on the scenario")
        if self.currency == USD:
            return Decimal(1), gettext("USD needs no rate")
        today = timezone.now().date()
        found = (
            ExchangeRate.objects.filter(currency=self.currency, month__lte=today)
            .order_by("-month")
            .first()
        )
        if found is None:
            return None, gettext("no exchange rate recorded for %(currency)s") % {
                "currency": self.currency
            }
        return found.units_per_usd, gettext("exchange rates, %(currency)s %(month)s") % {
            "currency": self.currency,
            "month": f"{found.month:%Y-%m}",
        }

    @property
    def exchange_rate(self) -> Decimal | None:
        return self.rate_in_use[0]

    @property
    def exchange_rate_source(self) -> str:
        return self.rate_in_use[1]

    @property
    def horizon_hours(self) -> int:
        from apps.procurement.comparison.maths import HOURS_PER_MONTH

        return self.horizon_months * HOURS_PER_MONTH

    def hourly_profile_weights(self) -> list[float] | None:
        """The 24 weights, or None for a flat day (validated by the form)."""
        if not self.entered_hourly_profile.strip():
            return None
        return [float(part) for part in self.entered_hourly_profile.split(",")]


class LineType(models.TextChoices):
    """The network line an option's region is reached over, as Chinese hosting offers
    name them (BGP multi-carrier, China Telecom's CN2 GIA and CN2 GT, plain transit)."""

    BGP = "bgp", _("BGP (multi-carrier)")
    CN2_GIA = "cn2_gia", _("CN2 GIA")
    CN2_GT = "cn2_gt", _("CN2 GT")
    INTERNATIONAL = "international", _("International transit")
    OTHER = "other", _("Other")


class OptionKind(models.TextChoices):
    ON_DEMAND = "on_demand", _("Cloud on-demand")
    RESERVED = "reserved", _("Cloud reserved")
    OWNED = "owned", _("Owned / bare-metal")
    HYBRID = "hybrid", _("Hybrid: baseline + on-demand burst")


class HybridBaseline(models.TextChoices):
    RESERVED = "reserved", _("Reserved")
    OWNED = "owned", _("Owned")


class ThroughputBasis(models.TextChoices):
    DENSE_PEAK = "dense_peak", _("Dense peak FLOP/s × efficiency")
    DECODE_CEILING = "decode_ceiling", _("Decode ceiling (memory bandwidth) × efficiency")


class ScenarioOption(models.Model):
    """One option line. Blank prices come from ``source_pool`` (converted from USD)."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="options")
    position = models.PositiveSmallIntegerField(
        _("position"), default=0, help_text=_("Order in the table.")
    )
    name = models.CharField(_("name"), max_length=120)
    kind = models.CharField(_("kind"), max_length=20, choices=OptionKind.choices)
    provider = models.CharField(_("provider"), max_length=100, blank=True)
    region = models.CharField(_("region"), max_length=100, blank=True)
    compliance_zone = models.CharField(
        _("compliance zone"),
        max_length=20,
        choices=ComplianceZone.choices,
        default=ComplianceZone.OTHER,
    )
    gpu_model = models.ForeignKey(
        "catalog.GpuModel", on_delete=models.PROTECT, related_name="+", verbose_name=_("GPU model")
    )
    source_pool = models.ForeignKey(
        "pools.Pool",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("Prices from pool"),
        help_text=_("Blank price fields take this pool's prices."),
    )
    price_note = models.CharField(
        _("price note"), max_length=300, blank=True, help_text=_("Where the prices come from.")
    )

    on_demand_price_per_gpu_hour = _money(
        _("On-demand price per GPU-hour"),
        help_text=_(
            "Hybrid: the burst price. Reserved or owned: "
            "the price their break-even is measured against."
        ),
    )
    reserved_price_per_gpu_hour = _money(_("Reserved price per GPU-hour"))
    reserved_upfront_per_gpu = _money(
        _("Reserved upfront per GPU"), help_text=_("Paid once per term; spread over its hours.")
    )
    reserved_term_months = models.PositiveIntegerField(
        _("Reservation term (months)"), null=True, blank=True, validators=[MinValueValidator(1)]
    )
    purchase_price_per_gpu = _money(
        _("Purchase price per GPU"), help_text=_("Server share included: server price ÷ GPUs.")
    )
    amortisation_months = models.PositiveIntegerField(
        _("Amortisation (months)"), null=True, blank=True, validators=[MinValueValidator(1)]
    )
    power_price_per_kwh = _money(_("Power price per kWh"))
    pue = models.DecimalField(
        _("PUE"),
        max_digits=4,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("1.00"))],
        help_text=_("Facility power ÷ IT power; 1.1–1.6 is typical."),
    )
    colocation_per_gpu_month = _money(_("Colocation per GPU-month"))
    operations_per_month = _money(
        _("Operations staff per month"), help_text=_("Whole option: people, support contracts.")
    )
    storage_per_month = _money(
        _("Checkpoint storage per month"),
        help_text=_("Typed for now; will come from the backup policy once backups land."),
    )
    network_per_month = _money(
        _("Network per month"), help_text=_("Egress, interconnect, transit.")
    )

    hybrid_baseline = models.CharField(
        _("Hybrid baseline"),
        max_length=10,
        choices=HybridBaseline.choices,
        default=HybridBaseline.RESERVED,
    )
    baseline_gpus = models.PositiveIntegerField(
        _("Baseline GPUs"),
        null=True,
        blank=True,
        help_text=_("Hybrid only; blank: the newsvendor optimum."),
    )
    ddos_protection_gbps = models.DecimalField(
        _("DDoS protection (Gbps)"),
        max_digits=8,
        decimal_places=1,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text=_("The attack traffic the provider absorbs; blank: not stated."),
    )
    line_type = models.CharField(
        _("line type"),
        max_length=20,
        choices=LineType.choices,
        blank=True,
        help_text=_("Blank: not stated."),
    )
    ip_address_count = models.PositiveIntegerField(
        _("IP addresses"), null=True, blank=True, help_text=_("Blank: not stated.")
    )
    throughput_basis = models.CharField(
        _("throughput basis"),
        max_length=20,
        choices=ThroughputBasis.choices,
        default=ThroughputBasis.DENSE_PEAK,
    )
    efficiency = _fraction(
        _("Efficiency"),
        "0.400",
        _(
            "Share of this GPU's peak (or decode ceiling) achieved; equal to the reference "
            "efficiency on the same GPU means equal work per GPU. 0–1."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["scenario", "position", "pk"]
        verbose_name = _("option")

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return self.scenario.get_absolute_url()

    @property
    def needs_icp_filing(self) -> bool:
        return self.compliance_zone in ZONES_NEEDING_ICP_FILING

    @property
    def icp_filing_known(self) -> bool | None:
        """Whether the region needs an ICP filing, or None where the compliance zone
        ("Other") does not say."""
        if self.compliance_zone == ComplianceZone.OTHER:
            return None
        return self.needs_icp_filing

    @property
    def baseline_kind(self) -> str | None:
        """ "reserved" or "owned": which prices the paid-every-hour GPUs take."""
        if self.kind == OptionKind.HYBRID:
            return self.hybrid_baseline
        if self.kind in (OptionKind.RESERVED, OptionKind.OWNED):
            return self.kind
        return None


class UserRegion(models.Model):
    """Where a scenario's users are (e.g. "Shanghai users") and the round-trip time they
    accept. Per scenario: its options are per scenario too, so a region, its limit and the
    options' times travel and are scoped together."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="user_regions")
    name = models.CharField(_("name"), max_length=80)
    max_rtt_ms = models.DecimalField(
        _("Maximum RTT (ms)"),
        max_digits=7,
        decimal_places=1,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text=_("Blank: the times are shown but not required."),
    )

    class Meta:
        ordering = ["scenario", "name"]
        verbose_name = _("user region")
        constraints = [
            models.UniqueConstraint(fields=["scenario", "name"], name="user_region_unique_name")
        ]

    def __str__(self):
        return self.name


class OptionRegionRtt(models.Model):
    """The round-trip time from one user region to one option, typed or read from ping or
    mtr output."""

    option = models.ForeignKey(ScenarioOption, on_delete=models.CASCADE, related_name="rtts")
    region = models.ForeignKey(UserRegion, on_delete=models.CASCADE, related_name="rtts")
    rtt_ms = models.DecimalField(
        _("RTT (ms)"),
        max_digits=7,
        decimal_places=1,
        validators=[MinValueValidator(Decimal("0"))],
    )

    class Meta:
        ordering = ["option", "region__name"]
        verbose_name = _("round-trip time")
        constraints = [
            models.UniqueConstraint(fields=["option", "region"], name="option_region_rtt_unique")
        ]

    def __str__(self):
        return f"{self.option} ← {self.region}: {self.rtt_ms} ms"


class ComparisonExport(Job):
    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        XLSX = "xlsx", _("Excel (XLSX)")
        PDF = "pdf", "PDF"

    class Status(models.TextChoices):
        PENDING = "pending", _("Waiting")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Ready")
        FAILED = "failed", _("Failed")
        INTERRUPTED = "interrupted", _("Interrupted")

    not_started_status = Status.PENDING
    succeeded_status = Status.SUCCEEDED
    finished_statuses = (Status.SUCCEEDED, Status.FAILED, Status.INTERRUPTED)
    job_noun = _("export")
    DEFAULT_LANGUAGE = "en"
    failure_sentence_template = gettext_noop(
        "The export stopped with an error (%(error)s). Ask for it again; the server log has "
        "the details."
    )

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="exports")
    format = models.CharField(max_length=10, choices=Format.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    file = models.FileField(upload_to="procurement/exports/%Y/%m/", blank=True)
    what_if = models.JSONField(
        _("What-if inputs"),
        default=dict,
        blank=True,
        help_text=_(
            "The unsaved inputs the page showed when the export was asked for "
            "(name → value); empty: the scenario as saved."
        ),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    language = models.CharField(
        _("language"),
        max_length=16,
        default=DEFAULT_LANGUAGE,
        help_text=_("The interface language it was asked in: its headers and titles are in it."),
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("comparison export")

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
