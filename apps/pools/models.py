"""GPU pools and the workloads placed on them.

The foundation keeps the fields every later feature relies on; the pools/catalog issue
adds GPU and model catalogs, cost inputs and the fit engine.
"""

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.urls import reverse

from apps.pools.querysets import PoolQuerySet, WorkloadQuerySet


class Purpose(models.TextChoices):
    TRAINING = "training", "Training"
    INFERENCE = "inference", "Inference"
    MIXED = "mixed", "Mixed"


class Deployment(models.TextChoices):
    CLOUD_ON_DEMAND = "cloud_on_demand", "Cloud on-demand"
    CLOUD_RESERVED = "cloud_reserved", "Cloud reserved"
    BARE_METAL = "bare_metal", "Bare-metal / physical"
    ON_PREMISES = "on_premises", "On-premises"


class Pool(models.Model):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True, help_text="Stable id used by the API.")
    purpose = models.CharField(max_length=20, choices=Purpose.choices)
    deployment = models.CharField(max_length=20, choices=Deployment.choices)
    provider = models.CharField(max_length=100, blank=True)
    region = models.CharField(max_length=100, blank=True)
    gpu_model_name = models.CharField("GPU model", max_length=100)
    gpu_count = models.PositiveIntegerField("GPUs", validators=[MinValueValidator(1)])
    gpus_per_node = models.PositiveIntegerField(
        "GPUs per node", default=8, validators=[MinValueValidator(1)]
    )
    price_per_gpu_hour_usd = models.DecimalField(
        "Price per GPU-hour (USD)",
        max_digits=10,
        decimal_places=4,
        validators=[MinValueValidator(Decimal("0"))],
        help_text="Effective price of one GPU for one hour, in US dollars.",
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="owned_pools",
    )
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PoolQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("pools:pool_detail", kwargs={"slug": self.slug})

    @property
    def price_per_hour_usd(self) -> Decimal:
        """What the whole pool costs per wall-clock hour."""
        return self.price_per_gpu_hour_usd * self.gpu_count


class WorkloadKind(models.TextChoices):
    PRE_TRAINING = "pre_training", "Pre-training"
    FULL_FINE_TUNE = "full_fine_tune", "Full fine-tune"
    LORA_FINE_TUNE = "lora_fine_tune", "LoRA fine-tune"
    MULTIMODAL_TRAINING = "multimodal_training", "Multimodal training"
    ONLINE_INFERENCE = "online_inference", "Online inference"
    API_SERVICE = "api_service", "API service"
    BATCH_INFERENCE = "batch_inference", "Batch inference"
    EDGE_INFERENCE = "edge_inference", "Edge inference"


TRAINING_KINDS = frozenset(
    {
        WorkloadKind.PRE_TRAINING,
        WorkloadKind.FULL_FINE_TUNE,
        WorkloadKind.LORA_FINE_TUNE,
        WorkloadKind.MULTIMODAL_TRAINING,
    }
)


class WorkloadStatus(models.TextChoices):
    PLANNED = "planned", "Planned"
    RUNNING = "running", "Running"
    PAUSED = "paused", "Paused"
    FINISHED = "finished", "Finished"


class Workload(models.Model):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True, help_text="Stable id used by the API.")
    kind = models.CharField(max_length=30, choices=WorkloadKind.choices)
    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="workloads")
    gpu_count = models.PositiveIntegerField(
        "GPUs used", default=1, validators=[MinValueValidator(1)]
    )
    status = models.CharField(
        max_length=20, choices=WorkloadStatus.choices, default=WorkloadStatus.PLANNED
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="owned_workloads",
    )
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = WorkloadQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("pools:workload_detail", kwargs={"slug": self.slug})

    @property
    def is_training(self) -> bool:
        return self.kind in TRAINING_KINDS
