"""GPU pools and the workloads placed on them.

The foundation keeps the fields every later feature relies on; the pools/catalog issue
adds GPU and model catalogs, cost inputs and the fit engine.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone as django_timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from apps.clusters.models import default_cluster_pk
from apps.core import money
from apps.currencies.codes import USD, currency_symbol, validate_currency
from apps.pools import costing
from apps.pools.choices import (  # noqa: F401 (the models' choices, read with them)
    ONLINE_INFERENCE_KINDS,
    OWNED_DEPLOYMENTS,
    TRAINING_KINDS,
    ZONES_NEEDING_ICP_FILING,
    ComplianceZone,
    Deployment,
    InferencePrecision,
    Interconnect,
    InterruptionCause,
    Optimizer,
    Purpose,
    Recompute,
    TrainingPrecision,
    WorkloadKind,
    WorkloadStatus,
)
from apps.pools.hours import ceil_hour, floor_hour
from apps.pools.querysets import PoolQuerySet, WorkloadQuerySet
from apps.pools.validators import validate_hour_ranges, validate_timezone

# Places of the stored fixed price per GPU-hour and price per GPU kWh (their fields').
STORED_PRICE_PLACES = 6


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


# Telemetry dated before this is refused (a node whose clock was never set reports 1970).
EARLIEST_SERVICE_START = datetime(2000, 1, 1, tzinfo=UTC)


def service_period_problem(start, end) -> str | None:
    """Why [start, end) is not a usable service period, or None."""
    if start is not None and start < EARLIEST_SERVICE_START:
        return gettext("The service period cannot start before %(date)s.") % {
            "date": f"{EARLIEST_SERVICE_START:%Y-%m-%d}"
        }
    if start is not None and end is not None and end <= start:
        return gettext("In service until (%(end)s) must be after in service from (%(start)s).") % {
            "end": f"{end:%Y-%m-%d %H:%M}",
            "start": f"{start:%Y-%m-%d %H:%M}",
        }
    return None


class Pool(models.Model):
    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(
        _("slug"), max_length=100, unique=True, help_text=_("Stable id used by the API.")
    )
    # Blank: saved without one, it joins the ``default`` cluster (``save``). No field
    # default, which would ask the database each time an unsaved one is built.
    cluster = models.ForeignKey(
        "clusters.Cluster",
        on_delete=models.PROTECT,
        blank=True,
        related_name="pools",
        verbose_name=_("cluster"),
    )
    purpose = models.CharField(_("purpose"), max_length=20, choices=Purpose.choices)
    deployment = models.CharField(_("deployment"), max_length=20, choices=Deployment.choices)
    provider = models.CharField(_("provider"), max_length=100, blank=True)
    region = models.CharField(_("region"), max_length=100, blank=True)
    compliance_zone = models.CharField(
        _("compliance zone"),
        max_length=20,
        choices=ComplianceZone.choices,
        default=ComplianceZone.OTHER,
    )
    gpu_model = models.ForeignKey(
        "catalog.GpuModel",
        on_delete=models.PROTECT,
        related_name="pools",
        verbose_name=_("GPU model"),
    )
    gpu_count = models.PositiveIntegerField(_("GPUs"), validators=[MinValueValidator(1)])
    gpus_per_node = models.PositiveIntegerField(
        _("GPUs per node"), default=8, validators=[MinValueValidator(1)]
    )
    interconnect = models.CharField(
        _("interconnect"),
        max_length=20,
        choices=Interconnect.choices,
        default=Interconnect.NVLINK_INFINIBAND,
    )
    driver_version = models.CharField(
        _("driver version"), max_length=50, blank=True, help_text=_("e.g. 550.54.15")
    )
    cuda_version = models.CharField(
        _("CUDA version"), max_length=50, blank=True, help_text=_("e.g. 12.4")
    )
    framework_versions = models.CharField(
        _("framework versions"),
        max_length=200,
        blank=True,
        help_text=_("e.g. torch 2.4.1, vLLM 0.6.3"),
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="owned_pools",
        verbose_name=_("owner"),
    )
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="pools",
        verbose_name=_("team"),
        help_text=_("The team that owns and pays for the pool; none: shared by every team."),
    )
    description = models.TextField(_("description"), blank=True)

    # Cost inputs: cloud pools fill a price, owned pools their purchase and running costs,
    # in the pool's currency (the fields' "_usd" names are kept for the API's sake).
    # The currency of the pool's prices (each price period keeps the one it was typed in:
    # a change of currency is a change of prices, in force from the hour it names).
    currency = models.CharField(
        _("currency"),
        max_length=3,
        default="USD",
        validators=[validate_currency],
        help_text=_("ISO 4217 code of the pool's prices, e.g. USD or CNY."),
    )
    on_demand_price_per_gpu_hour_usd = _money(_("On-demand price per GPU-hour (USD)"))
    reserved_price_per_gpu_hour_usd = _money(_("Reserved price per GPU-hour (USD)"))
    reserved_term_months = models.PositiveIntegerField(
        _("Reservation term (months)"), null=True, blank=True
    )
    purchase_price_per_gpu_usd = _money(
        _("Purchase price per GPU (USD)"),
        help_text=_("Server share included: server price ÷ GPUs."),
    )
    amortisation_months = models.PositiveIntegerField(
        _("Amortisation (months)"), null=True, blank=True, validators=[MinValueValidator(1)]
    )
    power_price_per_kwh_usd = _money(_("Power price per kWh (USD)"))
    pue = models.DecimalField(
        "PUE",
        max_digits=4,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("1.00"))],
        help_text=_("Facility power ÷ IT power; 1.1–1.6 is typical."),
    )
    operations_per_month_usd = _money(_("Operations per month (USD)"), help_text=_("Whole pool."))
    colocation_per_month_usd = _money(_("Colocation per month (USD)"), help_text=_("Whole pool."))
    # Reports: the hour-of-day curve and peak/off-peak split are drawn in the pool's zone.
    timezone = models.CharField(
        _("Time zone"),
        max_length=64,
        default="UTC",
        validators=[validate_timezone],
        help_text=_("IANA name, e.g. Asia/Shanghai; used for the hour-of-day curves."),
    )
    peak_hours = models.CharField(
        _("Peak hours"),
        max_length=100,
        blank=True,
        validators=[validate_hour_ranges],
        help_text=_(
            "Local hours of the day, e.g. 9-18 or 8,9,20-22 (an hour range includes both "
            "ends). Blank: the hours whose mean demand is above the daily mean."
        ),
    )
    # Derived from the inputs above by refresh_effective_price(); stored so lists, totals
    # and reports can sum it in SQL.
    effective_price_per_gpu_hour_usd = models.DecimalField(
        _("Effective price per GPU-hour (USD)"),
        max_digits=12,
        decimal_places=4,
        editable=False,
        default=Decimal("0"),
    )
    # The same price split for the cost reports (apps/reports/cost/costmodel.py): what every
    # GPU-hour pays whatever the load, and what each kWh of GPU energy pays at the facility.
    fixed_price_per_gpu_hour_usd = models.DecimalField(
        _("Fixed price per GPU-hour (USD)"),
        max_digits=12,
        decimal_places=6,
        editable=False,
        default=Decimal("0"),
        help_text=_("Cloud price, or amortisation + operations + colocation."),
    )
    price_per_gpu_kwh_usd = models.DecimalField(
        _("Price per GPU kWh (USD)"),
        max_digits=12,
        decimal_places=6,
        editable=False,
        default=Decimal("0"),
        help_text=_("PUE × power price; 0 for cloud pools, whose price includes power."),
    )
    # Hours are paid only inside the service period: reports count capacity, cost, idle
    # and unmeasured hours from the first hour it covers, not from the first sample.
    in_service_from = models.DateTimeField(
        _("In service from"),
        default=django_timezone.now,
        help_text=_("When the pool's GPUs started to be paid for; a past date backfills history."),
    )
    in_service_until = models.DateTimeField(
        _("In service until"),
        null=True,
        blank=True,
        help_text=_("When they stopped being paid for; blank while the pool is in service."),
    )
    archived_at = models.DateTimeField(
        _("Archived at"),
        null=True,
        blank=True,
        help_text=_("Retired: hidden from lists, kept with its history in every report."),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PoolQuerySet.as_manager()

    # The price split is derived from the inputs above; the effective price records it.
    history = HistoricalRecords(
        excluded_fields=["updated_at", "fixed_price_per_gpu_hour_usd", "price_per_gpu_kwh_usd"]
    )

    class Meta:
        ordering = ["name"]
        verbose_name = _("pool")
        verbose_name_plural = _("pools")

    def __str__(self):
        return self.name

    def save(self, *args, **kwargs):
        if self.cluster_id is None:
            self.cluster_id = default_cluster_pk()
        super().save(*args, **kwargs)

    def get_absolute_url(self):
        return reverse("pools:pool_detail", kwargs={"slug": self.slug})

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None

    def usage_history(self) -> list[tuple[str, int]]:
        """(what, how many) of the records that make up the pool's history, those it has:
        hourly rollups are the only record of hours whose raw samples are purged, so a
        pool with any is archived, never deleted."""
        counts = [
            (gettext("hourly usage rows"), self.hourly_usage.count()),
            (gettext("daily usage rows"), self.daily_usage.count()),
            # Through the devices' reverse relation: pools do not import telemetry.
            (
                gettext("raw GPU samples"),
                self.devices.aggregate(count=models.Count("samples"))["count"],
            ),
        ]
        return [(label, count) for label, count in counts if count]

    @property
    def service_period(self) -> tuple:
        """(in service from, until): what the rollups' in-service hours depend on."""
        return self.in_service_from, self.in_service_until

    def service_hours(self) -> tuple[datetime, datetime | None]:
        """[first, end) whole UTC hours of the service period (end None: still in service).

        An hour that the period overlaps is paid whole, as the rollups count it: from the
        hour ``in_service_from`` falls in, up to the hour ``in_service_until`` ends in."""
        until = self.in_service_until
        return floor_hour(self.in_service_from), ceil_hour(until) if until else None

    @property
    def is_owned(self) -> bool:
        return self.deployment in OWNED_DEPLOYMENTS

    @property
    def needs_icp_filing(self) -> bool:
        return self.compliance_zone in ZONES_NEEDING_ICP_FILING

    @property
    def software_pinned(self) -> bool:
        return bool(self.driver_version and self.cuda_version and self.framework_versions)

    @property
    def node_count(self) -> int:
        return -(-self.gpu_count // self.gpus_per_node)

    def price_breakdown(self) -> costing.PriceBreakdown | None:
        """The effective price's lines, or None while the deployment's inputs are missing;
        the formulas write the amounts with the pool's currency."""
        code = self.currency or USD
        symbol = currency_symbol(code)
        sign = f"{code} " if symbol == code else symbol
        if self.deployment == Deployment.CLOUD_ON_DEMAND:
            if self.on_demand_price_per_gpu_hour_usd is None:
                return None
            return costing.cloud_price_breakdown(
                price_per_gpu_hour_usd=money.as_decimal(self.on_demand_price_per_gpu_hour_usd),
                label=gettext("On-demand price"),
                sign=sign,
            )
        if self.deployment == Deployment.CLOUD_RESERVED:
            if self.reserved_price_per_gpu_hour_usd is None:
                return None
            label = (
                gettext("Reserved price (%(months)s-month term)")
                % {"months": self.reserved_term_months}
                if self.reserved_term_months
                else gettext("Reserved price")
            )
            return costing.cloud_price_breakdown(
                price_per_gpu_hour_usd=money.as_decimal(self.reserved_price_per_gpu_hour_usd),
                label=label,
                sign=sign,
            )
        required = (
            self.purchase_price_per_gpu_usd,
            self.amortisation_months,
            self.pue,
            self.power_price_per_kwh_usd,
        )
        if any(value is None for value in required):
            return None
        return costing.owned_price_breakdown(
            purchase_price_per_gpu_usd=money.as_decimal(self.purchase_price_per_gpu_usd),
            amortisation_months=self.amortisation_months,
            tdp_watts=self.gpu_model.tdp_watts,
            pue=money.as_decimal(self.pue),
            power_price_per_kwh_usd=money.as_decimal(self.power_price_per_kwh_usd),
            operations_per_month_usd=money.as_decimal(self.operations_per_month_usd or 0),
            colocation_per_month_usd=money.as_decimal(self.colocation_per_month_usd or 0),
            gpu_count=self.gpu_count,
            sign=sign,
        )

    def refresh_effective_price(self):
        """Recompute the stored effective price from the cost inputs (call before save): in
        Decimal from the stored prices, rounded half up once, to the stored places."""
        breakdown = self.price_breakdown()
        usd = money.as_decimal(breakdown.usd_per_gpu_hour) if breakdown else Decimal(0)
        self.effective_price_per_gpu_hour_usd = money.to_unit_price(usd)
        power_usd_per_kwh = Decimal(0)
        if breakdown and self.is_owned:
            power_usd_per_kwh = money.as_decimal(self.pue) * money.as_decimal(
                self.power_price_per_kwh_usd
            )
        power_at_tdp_usd = power_usd_per_kwh * self.gpu_model.tdp_watts / 1000
        self.price_per_gpu_kwh_usd = money.rounded(power_usd_per_kwh, STORED_PRICE_PLACES)
        self.fixed_price_per_gpu_hour_usd = money.rounded(
            usd - power_at_tdp_usd, STORED_PRICE_PLACES
        )

    @property
    def price_per_hour_usd(self) -> Decimal:
        """What the whole pool costs per wall-clock hour."""
        return self.effective_price_per_gpu_hour_usd * self.gpu_count


# The cost inputs a price period records (the pool's deployment decides which count).
PRICE_INPUT_FIELDS = (
    "currency",
    "deployment",
    "on_demand_price_per_gpu_hour_usd",
    "reserved_price_per_gpu_hour_usd",
    "reserved_term_months",
    "purchase_price_per_gpu_usd",
    "amortisation_months",
    "power_price_per_kwh_usd",
    "pue",
    "operations_per_month_usd",
    "colocation_per_month_usd",
)
# What refresh_effective_price() derives from them.
DERIVED_PRICE_FIELDS = (
    "effective_price_per_gpu_hour_usd",
    "fixed_price_per_gpu_hour_usd",
    "price_per_gpu_kwh_usd",
)


class PoolPricePeriod(models.Model):
    """The pool's prices in force from ``effective_from`` (a whole UTC hour) until the
    next period's start: an hour costs what was in force then, so a price edited today
    leaves the cost of past hours as it was (apps/pools/prices.py writes them)."""

    pool = models.ForeignKey(
        Pool, on_delete=models.CASCADE, related_name="price_periods", verbose_name=_("pool")
    )
    effective_from = models.DateTimeField(_("Prices in force from"))
    deployment = models.CharField(_("deployment"), max_length=20, choices=Deployment.choices)
    # The currency the period's prices are in: it governs the hours the period prices.
    currency = models.CharField(
        _("currency"),
        max_length=3,
        default="USD",
        validators=[validate_currency],
        help_text=_("ISO 4217 code of the pool's prices, e.g. USD or CNY."),
    )
    on_demand_price_per_gpu_hour_usd = _money(_("On-demand price per GPU-hour (USD)"))
    reserved_price_per_gpu_hour_usd = _money(_("Reserved price per GPU-hour (USD)"))
    reserved_term_months = models.PositiveIntegerField(
        _("Reservation term (months)"), null=True, blank=True
    )
    purchase_price_per_gpu_usd = _money(_("Purchase price per GPU (USD)"))
    amortisation_months = models.PositiveIntegerField(
        _("Amortisation (months)"), null=True, blank=True
    )
    power_price_per_kwh_usd = _money(_("Power price per kWh (USD)"))
    pue = models.DecimalField("PUE", max_digits=4, decimal_places=2, null=True, blank=True)
    operations_per_month_usd = _money(_("Operations per month (USD)"))
    colocation_per_month_usd = _money(_("Colocation per month (USD)"))
    effective_price_per_gpu_hour_usd = models.DecimalField(
        _("Effective price per GPU-hour (USD)"), max_digits=12, decimal_places=4
    )
    fixed_price_per_gpu_hour_usd = models.DecimalField(
        _("Fixed price per GPU-hour (USD)"), max_digits=12, decimal_places=6
    )
    price_per_gpu_kwh_usd = models.DecimalField(
        _("Price per GPU kWh (USD)"), max_digits=12, decimal_places=6
    )
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("changed by"),
    )
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool", "effective_from"]
        verbose_name = _("price period")
        verbose_name_plural = _("price periods")
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "effective_from"], name="one_price_period_per_pool_and_start"
            )
        ]

    def __str__(self):
        return f"{self.pool} from {self.effective_from:%Y-%m-%d %H:%M}"


def _positive(label, default, **kwargs):
    return models.PositiveIntegerField(
        label, default=default, validators=[MinValueValidator(1)], **kwargs
    )


def workload_team_problem(team, pool) -> str | None:
    """Why a workload of ``team`` cannot run on ``pool``, or None: a team's pool runs
    that team's workloads and those of no team. One rule for the form and the API."""
    if team is None or pool is None or pool.team_id in (None, team.pk):
        return None
    return gettext(
        "The pool belongs to team %(team)s: a workload on it is that team's or has no team."
    ) % {"team": pool.team}


class Workload(models.Model):
    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(
        _("slug"), max_length=100, unique=True, help_text=_("Stable id used by the API.")
    )
    kind = models.CharField(_("kind"), max_length=30, choices=WorkloadKind.choices)
    model_architecture = models.ForeignKey(
        "catalog.ModelArchitecture",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="workloads",
        verbose_name=_("model architecture"),
    )
    pool = models.ForeignKey(
        Pool, on_delete=models.PROTECT, related_name="workloads", verbose_name=_("pool")
    )
    gpu_count = models.PositiveIntegerField(
        _("GPUs used"),
        default=1,
        validators=[MinValueValidator(1)],
        help_text=_("Training: data × tensor × pipeline parallel. Inference: all replicas."),
    )
    status = models.CharField(
        _("status"), max_length=20, choices=WorkloadStatus.choices, default=WorkloadStatus.PLANNED
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="owned_workloads",
        verbose_name=_("owner"),
    )
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="workloads",
        verbose_name=_("team"),
        help_text=_("The team that runs it; none: the pool's team."),
    )
    description = models.TextField(_("description"), blank=True)

    # Training settings
    precision = models.CharField(
        _("precision"),
        max_length=10,
        choices=TrainingPrecision.choices,
        default=TrainingPrecision.BF16,
    )
    optimizer = models.CharField(
        _("optimizer"), max_length=20, choices=Optimizer.choices, default=Optimizer.ADAMW
    )
    zero_stage = models.PositiveSmallIntegerField(
        _("ZeRO stage"), default=0, validators=[MaxValueValidator(3)]
    )
    data_parallel = _positive(_("Data-parallel degree"), 1)
    tensor_parallel = _positive(_("Tensor-parallel degree"), 1)
    pipeline_parallel = _positive(_("Pipeline-parallel degree"), 1)
    sequence_parallel = models.BooleanField(_("sequence parallel"), default=False)
    recompute = models.CharField(
        _("Activation recompute"), max_length=10, choices=Recompute.choices, default=Recompute.NONE
    )
    micro_batch_size = _positive(_("Micro-batch size (sequences)"), 1)
    seq_len = _positive(_("Sequence length (tokens)"), 4096)
    tokens_to_train = models.PositiveBigIntegerField(
        _("Tokens to train"), null=True, blank=True, help_text=_("D in 6·N·D.")
    )
    expected_mfu = models.DecimalField(
        _("Expected MFU"),
        max_digits=4,
        decimal_places=3,
        default=Decimal("0.400"),
        validators=[MinValueValidator(Decimal("0.001")), MaxValueValidator(Decimal("1"))],
        help_text=_("Model FLOPs utilisation, 0–1; 0.35–0.45 is typical for large dense models."),
    )
    checkpoint_interval_minutes = models.PositiveIntegerField(
        _("Checkpoint interval (minutes)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("How often the job writes a checkpoint; interruptions lose the work since."),
    )
    checkpoint_write_seconds = models.PositiveIntegerField(
        _("Checkpoint write time (seconds)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("C in Young's and Daly's formulas: how long the job pauses to write one."),
    )
    reference_step_seconds = models.DecimalField(
        _("Reference step time (seconds)"),
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.000001"))],
        help_text=_(
            "The ideal time of one training step, measured without checkpointing; "
            "measured goodput counts the steps kept × this time as effective."
        ),
    )

    # Telemetry attribution: samples whose Kubernetes labels match count for this workload.
    k8s_namespace = models.CharField(
        _("Kubernetes namespace"),
        max_length=255,
        blank=True,
        help_text=_("From dcgm's pod labels."),
    )
    pod_name_prefix = models.CharField(
        _("Pod name prefix"),
        max_length=255,
        blank=True,
        help_text=_("e.g. llama-serve- ; blank with a namespace set: every pod in the namespace."),
    )

    # Inference settings
    weight_precision = models.CharField(
        _("weight precision"),
        max_length=10,
        choices=InferencePrecision.choices,
        default=InferencePrecision.BF16,
    )
    kv_cache_precision = models.CharField(
        _("KV-cache precision"),
        max_length=10,
        choices=InferencePrecision.choices,
        default=InferencePrecision.BF16,
    )
    context_length = _positive(_("Context length (tokens)"), 4096)
    concurrent_sequences = _positive(_("Concurrent sequences per replica"), 8)
    inference_tensor_parallel = _positive(_("Tensor-parallel degree (per replica)"), 1)
    target_ttft_ms = models.PositiveIntegerField(
        _("Target time to first token (ms)"), null=True, blank=True
    )
    target_p95_latency_ms = models.PositiveIntegerField(
        _("Target p95 latency (ms)"), null=True, blank=True
    )
    expected_peak_requests_per_second = models.DecimalField(
        _("Expected peak requests per second"),
        max_digits=10,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
    )
    quantization_validated = models.BooleanField(
        _("Quantized variant validated"),
        default=False,
        help_text=_("An accuracy validation on an evaluation set is on record."),
    )

    archived_at = models.DateTimeField(
        _("Archived at"),
        null=True,
        blank=True,
        help_text=_("Retired: hidden from lists, kept with its history in every report."),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = WorkloadQuerySet.as_manager()

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["name"]
        verbose_name = _("workload")
        verbose_name_plural = _("workloads")

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("pools:workload_detail", kwargs={"slug": self.slug})

    @property
    def effective_team_id(self) -> int | None:
        """The team that runs the workload: its own, or its pool's (None: shared)."""
        return self.team_id or (self.pool.team_id if self.pool_id else None)

    def clean(self):
        super().clean()
        problem = workload_team_problem(self.team, self.pool if self.pool_id else None)
        if problem:
            raise ValidationError({"team": problem})

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None

    def usage_history(self) -> list[tuple[str, int]]:
        """(what, how many) of the records that make up the workload's history, those it
        has; a workload with any is archived, never deleted. The history tables, backups
        included, reference it with PROTECT, so no other delete path removes them."""
        policy = getattr(self, "backup_policy", None)
        counts = [
            (gettext("hourly request rows"), self.hourly_requests.count()),
            (gettext("daily request rows"), self.daily_requests.count()),
            (gettext("attributed GPU-hour rows"), self.attributed_usage.count()),
            (gettext("raw request samples"), self.request_samples.count()),
            (gettext("interruptions"), self.interruptions.count()),
            (gettext("backup versions"), self.backup_versions.count()),
            (gettext("backup policies"), int(policy is not None)),
            (gettext("restore drills"), policy.drills.count() if policy is not None else 0),
        ]
        return [(label, count) for label, count in counts if count]

    @property
    def is_training(self) -> bool:
        return self.kind in TRAINING_KINDS

    @property
    def is_online_inference(self) -> bool:
        return self.kind in ONLINE_INFERENCE_KINDS

    @property
    def replicas(self) -> int:
        """Inference replicas of ``inference_tensor_parallel`` GPUs each."""
        return max(1, self.gpu_count // self.inference_tensor_parallel)


class Interruption(models.Model):
    """A training job stopped unexpectedly: the work since its last checkpoint is lost.

    Lost time = (interruption − last checkpoint) + restart. When the last checkpoint's time
    is not recorded, half the checkpoint interval is used: the expected loss when failures
    fall uniformly between checkpoints (Young, "A first order approximation to the optimum
    checkpoint interval", CACM 17(9), 1974).

    Lost GPU-hours = lost time × the GPUs that lost it: ``gpus`` when recorded (a Slurm
    job's own), else the workload's.
    """

    # History: a workload with interruptions is archived, never deleted.
    workload = models.ForeignKey(
        Workload,
        on_delete=models.PROTECT,
        related_name="interruptions",
        verbose_name=_("workload"),
    )
    occurred_at = models.DateTimeField(_("Interrupted at"))
    cause = models.CharField(_("cause"), max_length=20, choices=InterruptionCause.choices)
    restart_minutes = models.PositiveIntegerField(
        _("Restart (minutes)"), help_text=_("From the failure until training ran again.")
    )
    last_checkpoint_at = models.DateTimeField(
        _("Last checkpoint before it"),
        null=True,
        blank=True,
        help_text=_("Blank: half the workload's checkpoint interval is counted as lost."),
    )
    # A Slurm job knows how many GPUs it held (apps/slurm/interruptions.py); a workload
    # spread over several jobs loses only the stopped job's share.
    gpus = models.PositiveIntegerField(
        _("GPUs"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("GPUs that lost the work; blank: the workload's GPUs."),
    )
    notes = models.TextField(_("notes"), blank=True)
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("recorded by"),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["-occurred_at"]
        verbose_name = _("interruption")
        verbose_name_plural = _("interruptions")
        indexes = [models.Index(fields=["workload", "occurred_at"])]

    def __str__(self):
        return gettext("%(workload)s %(cause)s at %(time)s") % {
            "workload": self.workload,
            "cause": self.get_cause_display().lower(),
            "time": f"{self.occurred_at:%Y-%m-%d %H:%M}",
        }

    def get_absolute_url(self):
        return reverse("reports:interruption_detail", kwargs={"pk": self.pk})

    @property
    def name(self) -> str:
        """What confirmation pages call it."""
        return str(self)

    @staticmethod
    def rule_errors(occurred_at, last_checkpoint_at, workload, now) -> dict[str, str]:
        """What the form and the API refuse, by field: a checkpoint after the failure, a
        failure in the future (5 minutes of clock skew allowed), a non-training job."""
        errors = {}
        if occurred_at and last_checkpoint_at and last_checkpoint_at > occurred_at:
            errors["last_checkpoint_at"] = gettext(
                "The last checkpoint must be before the interruption."
            )
        if occurred_at and occurred_at > now + timedelta(minutes=5):
            errors["occurred_at"] = gettext("An interruption cannot be in the future.")
        if workload is not None and not workload.is_training:
            errors["workload"] = gettext("Interruptions are recorded for training workloads only.")
        return errors

    @property
    def lost_minutes(self) -> float | None:
        """Work lost plus the restart, in wall-clock minutes; None when it cannot be known."""
        if self.last_checkpoint_at is not None:
            since_checkpoint = (self.occurred_at - self.last_checkpoint_at).total_seconds() / 60
        elif self.workload.checkpoint_interval_minutes:
            since_checkpoint = self.workload.checkpoint_interval_minutes / 2
        else:
            return None
        return max(since_checkpoint, 0) + self.restart_minutes

    @property
    def lost_gpus(self) -> int:
        """The GPUs whose work was lost: the interruption's own count, else the workload's."""
        return self.gpus if self.gpus is not None else self.workload.gpu_count

    @property
    def lost_gpu_hours(self) -> float | None:
        lost = self.lost_minutes
        return None if lost is None else lost / 60 * self.lost_gpus
