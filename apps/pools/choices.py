"""The choices of pools, workloads and interruptions: what a pool is for and where it
runs, what a workload does, and why a job stopped. Kept apart from the models so that
forms, parsers of imported files and the maths read them without the models' weight."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class Purpose(models.TextChoices):
    TRAINING = "training", _("Training")
    INFERENCE = "inference", _("Inference")
    MIXED = "mixed", _("Mixed")


class Deployment(models.TextChoices):
    CLOUD_ON_DEMAND = "cloud_on_demand", _("Cloud on-demand")
    CLOUD_RESERVED = "cloud_reserved", _("Cloud reserved")
    BARE_METAL = "bare_metal", _("Bare-metal / physical")
    ON_PREMISES = "on_premises", _("On-premises")


class ComplianceZone(models.TextChoices):
    MAINLAND_CHINA = "mainland_china", _("Mainland China (ICP filing required)")
    HONG_KONG = "hong_kong", _("Hong Kong")
    UNITED_STATES = "united_states", _("United States")
    EUROPEAN_UNION = "european_union", _("European Union")
    OTHER = "other", _("Other")


# Serving a public site from a mainland-China node needs an ICP filing; Hong Kong, US
# and EU nodes do not (PRODUCT.md, "Region and compliance").
ZONES_NEEDING_ICP_FILING = frozenset({ComplianceZone.MAINLAND_CHINA})


class Interconnect(models.TextChoices):
    NVLINK_INFINIBAND = "nvlink_infiniband", _("NVLink in nodes + InfiniBand/RoCE across")
    NVLINK = "nvlink", _("NVLink in nodes, Ethernet across")
    PCIE = "pcie", _("PCIe only")


OWNED_DEPLOYMENTS = frozenset({Deployment.BARE_METAL, Deployment.ON_PREMISES})


class WorkloadKind(models.TextChoices):
    PRE_TRAINING = "pre_training", _("Pre-training")
    FULL_FINE_TUNE = "full_fine_tune", _("Full fine-tune")
    LORA_FINE_TUNE = "lora_fine_tune", _("LoRA fine-tune")
    MULTIMODAL_TRAINING = "multimodal_training", _("Multimodal training")
    ONLINE_INFERENCE = "online_inference", _("Online inference")
    API_SERVICE = "api_service", _("API service")
    BATCH_INFERENCE = "batch_inference", _("Batch inference")
    EDGE_INFERENCE = "edge_inference", _("Edge inference")


TRAINING_KINDS = frozenset(
    {
        WorkloadKind.PRE_TRAINING,
        WorkloadKind.FULL_FINE_TUNE,
        WorkloadKind.LORA_FINE_TUNE,
        WorkloadKind.MULTIMODAL_TRAINING,
    }
)


class WorkloadStatus(models.TextChoices):
    PLANNED = "planned", _("Planned")
    RUNNING = "running", _("Running")
    PAUSED = "paused", _("Paused")
    FINISHED = "finished", _("Finished")


class TrainingPrecision(models.TextChoices):
    FP32 = "fp32", "FP32"
    TF32 = "tf32", "TF32"
    BF16 = "bf16", _("BF16 mixed precision")
    FP16 = "fp16", _("FP16 mixed precision")
    FP8 = "fp8", _("FP8 mixed precision")


class Optimizer(models.TextChoices):
    ADAMW = "adamw", "AdamW"
    ADAMW_8BIT = "adamw_8bit", _("8-bit AdamW")
    SGD_MOMENTUM = "sgd_momentum", _("SGD with momentum")


class Recompute(models.TextChoices):
    NONE = "none", _("None (attention scores stored)")
    # FlashAttention never materialises the s×s attention scores, which is what
    # Korthikanti et al.'s selective recompute saves too: the two cost the same memory.
    SELECTIVE = "selective", _("Selective, or FlashAttention")
    FULL = "full", _("Full (layer inputs only)")


class InferencePrecision(models.TextChoices):
    FP32 = "fp32", "FP32"
    FP16 = "fp16", "FP16"
    BF16 = "bf16", "BF16"
    FP8 = "fp8", "FP8"
    INT8 = "int8", "INT8"
    INT4 = "int4", "INT4"


ONLINE_INFERENCE_KINDS = frozenset({WorkloadKind.ONLINE_INFERENCE, WorkloadKind.API_SERVICE})


class InterruptionCause(models.TextChoices):
    HARDWARE = "hardware", _("Hardware")
    SOFTWARE = "software", _("Software")
    DATA_STALL = "data_stall", _("Data stall")
    PREEMPTION = "preemption", _("Preemption")
