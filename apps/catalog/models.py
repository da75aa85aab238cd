"""The GPU and model-architecture catalogs: seeded from published datasheets and model
configs (apps/catalog/data/, with sources), editable by technical leads."""

from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from apps.catalog.architecture import ArchitectureShape, parameter_counts

# Vendors quote memory in GB (10^9 bytes); the fit engine compares bytes with this.
BYTES_PER_VENDOR_GB = 10**9


class GpuModel(models.Model):
    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(_("slug"), max_length=100, unique=True)
    vendor = models.CharField(_("vendor"), max_length=50)
    memory_gb = models.DecimalField(
        _("Memory (GB)"),
        max_digits=8,
        decimal_places=2,
        validators=[MinValueValidator(Decimal("0.01"))],
        help_text=_("Vendor's nominal figure, in GB (10⁹ bytes)."),
    )
    memory_type = models.CharField(_("memory type"), max_length=30, blank=True)
    memory_bandwidth_gb_per_second = models.DecimalField(
        _("Memory bandwidth (GB/s)"),
        max_digits=10,
        decimal_places=1,
        validators=[MinValueValidator(Decimal("0.1"))],
    )
    bf16_dense_tflops = models.DecimalField(
        _("BF16 dense (TFLOP/s)"), max_digits=10, decimal_places=1, null=True, blank=True
    )
    fp16_dense_tflops = models.DecimalField(
        _("FP16 dense (TFLOP/s)"), max_digits=10, decimal_places=1, null=True, blank=True
    )
    fp8_dense_tflops = models.DecimalField(
        _("FP8 dense (TFLOP/s)"), max_digits=10, decimal_places=1, null=True, blank=True
    )
    int8_dense_tops = models.DecimalField(
        _("INT8 dense (TOPS)"), max_digits=10, decimal_places=1, null=True, blank=True
    )
    tdp_watts = models.PositiveIntegerField(_("TDP (W)"))
    interconnect = models.CharField(_("interconnect"), max_length=100, blank=True)
    interconnect_gb_per_second = models.DecimalField(
        _("Interconnect bandwidth (GB/s)"), max_digits=10, decimal_places=1, null=True, blank=True
    )
    mig_support = models.BooleanField(_("MIG support"), default=False)
    # A MIG slice's share of its GPU is the compute slices its profile names ("3g.40gb"
    # holds 3) over this count (NVIDIA Multi-Instance GPU user guide, "Supported MIG
    # profiles": 7 on A100/H100/H200, 4 on A30).
    mig_compute_slices = models.PositiveSmallIntegerField(
        _("MIG compute slices"),
        null=True,
        blank=True,
        help_text=_("Compute slices of a MIG-partitioned GPU: 7 on A100/H100/H200, 4 on A30."),
    )
    reference_price_per_gpu_hour_usd = models.DecimalField(
        _("Reference price per GPU-hour (USD)"),
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text=_("A public on-demand price, used to rank recommendations."),
    )
    source_note = models.TextField(
        _("source note"),
        blank=True,
        help_text=_("Where the figures come from and how far to trust them."),
    )

    history = HistoricalRecords()

    class Meta:
        ordering = ["vendor", "name"]
        verbose_name = _("GPU model")
        verbose_name_plural = _("GPU models")

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("catalog:gpu_model_detail", kwargs={"slug": self.slug})

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gb * BYTES_PER_VENDOR_GB)

    @property
    def memory_bandwidth_bytes_per_second(self) -> float:
        return float(self.memory_bandwidth_gb_per_second) * 1e9

    def dense_peak_flops(self, precision: str) -> float | None:
        """Dense (never 2:4-sparse) peak FLOP/s for a training or inference precision."""
        tflops = {
            "bf16": self.bf16_dense_tflops,
            "fp16": self.fp16_dense_tflops,
            "fp8": self.fp8_dense_tflops or self.bf16_dense_tflops,
            "int8": self.int8_dense_tops,
        }.get(precision, self.bf16_dense_tflops or self.fp16_dense_tflops)
        tflops = tflops or self.fp16_dense_tflops
        return float(tflops) * 1e12 if tflops else None


class ModelArchitecture(models.Model):
    """A transformer's shape; parameter counts follow from it (see architecture.py)."""

    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(_("slug"), max_length=100, unique=True)
    family = models.CharField(_("family"), max_length=50, blank=True)
    layers = models.PositiveIntegerField(_("layers"), validators=[MinValueValidator(1)])
    hidden_size = models.PositiveIntegerField(_("hidden size"), validators=[MinValueValidator(1)])
    intermediate_size = models.PositiveIntegerField(
        _("intermediate size"),
        help_text=_("Feed-forward width (per expert for mixture-of-experts)."),
        validators=[MinValueValidator(1)],
    )
    attention_heads = models.PositiveIntegerField(
        _("attention heads"), validators=[MinValueValidator(1)]
    )
    kv_heads = models.PositiveIntegerField(
        _("KV heads"),
        validators=[MinValueValidator(1)],
        help_text=_("Equal to attention heads without grouped-query attention."),
    )
    head_dim = models.PositiveIntegerField(_("head dim"), validators=[MinValueValidator(1)])
    vocab_size = models.PositiveIntegerField(_("vocab size"), validators=[MinValueValidator(1)])
    max_context = models.PositiveIntegerField(
        _("Max context (tokens)"), validators=[MinValueValidator(1)]
    )
    experts = models.PositiveIntegerField(
        _("experts"),
        default=1,
        validators=[MinValueValidator(1)],
        help_text=_("1 for a dense model."),
    )
    experts_per_token = models.PositiveIntegerField(
        _("experts per token"), default=1, validators=[MinValueValidator(1)]
    )
    tied_embeddings = models.BooleanField(
        _("tied embeddings"),
        default=False,
        help_text=_("Input embedding and output head share one matrix."),
    )
    qkv_bias = models.BooleanField(_("Bias on Q/K/V projections"), default=False)
    published_params = models.BigIntegerField(
        _("published params"),
        null=True,
        blank=True,
        help_text=_("The parameter count the model card states."),
    )
    source_note = models.TextField(_("source note"), blank=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["family", "name"]
        verbose_name = _("model architecture")
        verbose_name_plural = _("model architectures")

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("catalog:architecture_detail", kwargs={"slug": self.slug})

    @property
    def shape(self) -> ArchitectureShape:
        return ArchitectureShape(
            layers=self.layers,
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            attention_heads=self.attention_heads,
            kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            vocab_size=self.vocab_size,
            experts=self.experts,
            experts_per_token=self.experts_per_token,
            tied_embeddings=self.tied_embeddings,
            qkv_bias=self.qkv_bias,
        )

    @property
    def total_params(self) -> int:
        return parameter_counts(self.shape).total

    @property
    def active_params(self) -> int:
        return parameter_counts(self.shape).active

    @property
    def is_mixture_of_experts(self) -> bool:
        return self.experts > 1
