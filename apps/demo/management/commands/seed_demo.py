"""``manage.py seed_demo``: a small, believable GPU fleet and one demo user per role.

Idempotent (objects are matched by slug or username and updated in place) and
deterministic: no randomness decides what is created, and the clock only how far the demo
usage reaches (up to the current hour; each run extends it, a second run within the hour
adds nothing). Demo pools are in service from the start of their usage history. Cloud prices are the
Lambda on-demand list prices in SkyPilot's catalog (tests/data/gpu-specs/), per GPU;
owned pools carry purchase and running costs from which the effective price follows.
"""

from decimal import Decimal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from apps.backups.demo import seed_backups_demo
from apps.catalog.models import GpuModel, ModelArchitecture
from apps.catalog.seed import load_gpu_models, load_model_architectures
from apps.core.roles import FINANCE, OPS, PROCUREMENT, TECHNICAL_LEAD
from apps.demo.training import seed_training_demo
from apps.pilots.demo import seed_pilots_demo
from apps.pools.models import (
    ComplianceZone,
    Deployment,
    Interconnect,
    Pool,
    Purpose,
    Workload,
    WorkloadKind,
    WorkloadStatus,
)
from apps.procurement.demo import seed_procurement_demo
from apps.reports.demo import demo_history_start, seed_usage_demo
from apps.showback.demo import seed_showback_demo

DEMO_PASSWORD = "gpufleet-demo"  # noqa: S105 - printed for the demo on purpose
DEMO_USERS = (
    # username, full name, role (None = superuser)
    ("lead", "Lena Lead", TECHNICAL_LEAD.name),
    ("ops", "Oskar Ops", OPS.name),
    ("procurement", "Priya Procurement", PROCUREMENT.name),
    ("finance", "Fiona Finance", FINANCE.name),
    ("lead-serving", "Sam Serving", TECHNICAL_LEAD.name),
    ("admin", "Ada Admin", None),
)

PINNED_H100 = {
    "driver_version": "550.54.15",
    "cuda_version": "12.4",
    "framework_versions": "torch 2.4.1, Megatron-Core 0.8.0",
}
PINNED_SERVING = {
    "driver_version": "550.90.07",
    "cuda_version": "12.4",
    "framework_versions": "vLLM 0.6.3, torch 2.4.0",
}
OWNED_DEFAULTS = {"amortisation_months": 48, "pue": Decimal("1.30")}

# Pools of every purpose and deployment. Cloud prices: Lambda's list prices in SkyPilot's
# catalog (apps/catalog/data/) where it has the GPU, else a plausible regional price.
DEMO_POOLS = (
    {
        "slug": "train-h100-sh",
        "timezone": "Asia/Shanghai",
        "name": "Training · H100 SXM · Shanghai",
        "purpose": Purpose.TRAINING,
        "deployment": Deployment.BARE_METAL,
        "provider": "Own racks (colocation)",
        "region": "cn-shanghai",
        "compliance_zone": ComplianceZone.MAINLAND_CHINA,
        "gpu_model": "h100-sxm",
        "gpu_count": 64,
        "gpus_per_node": 8,
        "interconnect": Interconnect.NVLINK_INFINIBAND,
        **PINNED_H100,
        **OWNED_DEFAULTS,
        "purchase_price_per_gpu_usd": Decimal("30000"),
        "power_price_per_kwh_usd": Decimal("0.0900"),
        "operations_per_month_usd": Decimal("40000"),
        "colocation_per_month_usd": Decimal("25000"),
        "description": "Pre-training and full fine-tunes. NVLink within nodes, InfiniBand across.",
    },
    {
        "slug": "train-burst-h100-us",
        "timezone": "America/Los_Angeles",
        "name": "Training burst · H100 SXM · US East",
        "purpose": Purpose.TRAINING,
        "deployment": Deployment.CLOUD_ON_DEMAND,
        "provider": "Lambda",
        "region": "us-east-1",
        "compliance_zone": ComplianceZone.UNITED_STATES,
        "gpu_model": "h100-sxm",
        "gpu_count": 16,
        "gpus_per_node": 8,
        "interconnect": Interconnect.NVLINK_INFINIBAND,
        **PINNED_H100,
        # gpu_8x_h100_sxm5 at $23.92/h ÷ 8 GPUs
        "on_demand_price_per_gpu_hour_usd": Decimal("2.99"),
        "description": "On-demand capacity for deadline bursts; released between projects.",
    },
    {
        "slug": "train-a100-eu",
        "timezone": "Europe/Amsterdam",
        "name": "Training · A100 80GB · EU reserved",
        "purpose": Purpose.TRAINING,
        "deployment": Deployment.CLOUD_RESERVED,
        "provider": "European cloud",
        "region": "eu-central",
        "compliance_zone": ComplianceZone.EUROPEAN_UNION,
        "gpu_model": "a100-sxm-80gb",
        "gpu_count": 32,
        "gpus_per_node": 8,
        "interconnect": Interconnect.NVLINK_INFINIBAND,
        "driver_version": "535.183.01",
        "cuda_version": "12.2",
        "framework_versions": "",
        "reserved_price_per_gpu_hour_usd": Decimal("1.45"),
        "reserved_term_months": 12,
        "description": "Fine-tunes on EU customer data; data stays in the EU.",
    },
    {
        "slug": "infer-l40s-hk",
        "timezone": "Asia/Hong_Kong",
        "name": "Inference · L40S · Hong Kong",
        "purpose": Purpose.INFERENCE,
        "deployment": Deployment.CLOUD_RESERVED,
        "provider": "Regional cloud",
        "region": "ap-east-1 (Hong Kong)",
        "compliance_zone": ComplianceZone.HONG_KONG,
        "gpu_model": "l40s",
        "gpu_count": 24,
        "gpus_per_node": 4,
        "interconnect": Interconnect.PCIE,
        **PINNED_SERVING,
        "reserved_price_per_gpu_hour_usd": Decimal("1.10"),
        "reserved_term_months": 12,
        "description": "Online chat API for Asia; 1-year reservation.",
    },
    {
        "slug": "infer-h100-bj",
        "timezone": "Asia/Shanghai",
        "name": "Inference · H100 PCIe · Beijing",
        "purpose": Purpose.INFERENCE,
        "deployment": Deployment.ON_PREMISES,
        "provider": "Own data centre",
        "region": "cn-beijing",
        "compliance_zone": ComplianceZone.MAINLAND_CHINA,
        "gpu_model": "h100-pcie",
        "gpu_count": 16,
        "gpus_per_node": 8,
        "interconnect": Interconnect.PCIE,
        **PINNED_SERVING,
        **OWNED_DEFAULTS,
        "purchase_price_per_gpu_usd": Decimal("25000"),
        "power_price_per_kwh_usd": Decimal("0.0800"),
        "pue": Decimal("1.40"),
        "operations_per_month_usd": Decimal("8000"),
        "colocation_per_month_usd": Decimal("6000"),
        "description": "Public chat service for mainland users (ICP filing on record).",
    },
    {
        "slug": "infer-a10-eu",
        "timezone": "Europe/Amsterdam",
        "name": "Inference · A10 · EU",
        "purpose": Purpose.INFERENCE,
        "deployment": Deployment.CLOUD_ON_DEMAND,
        "provider": "Lambda",
        "region": "europe-central-1",
        "compliance_zone": ComplianceZone.EUROPEAN_UNION,
        "gpu_model": "a10",
        "gpu_count": 8,
        "gpus_per_node": 1,
        "interconnect": Interconnect.PCIE,
        **PINNED_SERVING,
        # gpu_1x_a10 at $0.75/h
        "on_demand_price_per_gpu_hour_usd": Decimal("0.75"),
        "description": "Embedding and small-model endpoints, scaled with traffic.",
    },
    {
        "slug": "mixed-a100-onprem",
        "timezone": "Asia/Shanghai",
        "name": "Mixed · A100 80GB · on-prem",
        "purpose": Purpose.MIXED,
        "deployment": Deployment.ON_PREMISES,
        "provider": "Own data centre",
        "region": "cn-hangzhou",
        "compliance_zone": ComplianceZone.MAINLAND_CHINA,
        "gpu_model": "a100-sxm-80gb",
        "gpu_count": 32,
        "gpus_per_node": 8,
        "interconnect": Interconnect.NVLINK,
        **PINNED_H100,
        **OWNED_DEFAULTS,
        "purchase_price_per_gpu_usd": Decimal("15000"),
        "power_price_per_kwh_usd": Decimal("0.1000"),
        "pue": Decimal("1.50"),
        "operations_per_month_usd": Decimal("12000"),
        "colocation_per_month_usd": Decimal("9000"),
        "description": "Shared research cluster: fine-tunes by day, batch inference by night.",
    },
    {
        "slug": "edge-t4",
        "timezone": "Asia/Shanghai",
        "name": "Edge · T4 · stores",
        "purpose": Purpose.INFERENCE,
        "deployment": Deployment.ON_PREMISES,
        "provider": "Store servers",
        "region": "on-site",
        "compliance_zone": ComplianceZone.OTHER,
        "gpu_model": "t4",
        "gpu_count": 8,
        "gpus_per_node": 1,
        "interconnect": Interconnect.PCIE,
        "amortisation_months": 36,
        "pue": Decimal("1.60"),
        "purchase_price_per_gpu_usd": Decimal("2000"),
        "power_price_per_kwh_usd": Decimal("0.1500"),
        "operations_per_month_usd": Decimal("2000"),
        "colocation_per_month_usd": Decimal("0"),
        "description": "Quantized assistants in stores; versions drift from store to store.",
    },
)

TRAINING = {"precision": "bf16", "optimizer": "adamw", "micro_batch_size": 1}
# Each workload shows something a lead must see: fits, does not fit, wrong pool…
DEMO_WORKLOADS = (
    {
        "slug": "llama3-70b-pretrain",
        "checkpoint_interval_minutes": 60,
        "checkpoint_write_seconds": 180,
        # 1,000 steps between the demo's checkpoints of steps 41,000 and 42,000 (12 days).
        "reference_step_seconds": Decimal("780"),
        "name": "Llama-3-70B continued pre-training",
        "kind": WorkloadKind.PRE_TRAINING,
        "model": "llama-3-70b",
        "pool": "train-h100-sh",
        "gpu_count": 64,
        "status": WorkloadStatus.RUNNING,
        **TRAINING,
        "zero_stage": 1,
        "data_parallel": 4,
        "tensor_parallel": 8,
        "pipeline_parallel": 2,
        "sequence_parallel": True,
        "recompute": "selective",
        "seq_len": 8192,
        "tokens_to_train": 200_000_000_000,
        "expected_mfu": Decimal("0.400"),
    },
    {
        "slug": "qwen25-72b-sft",
        "checkpoint_interval_minutes": 30,
        "checkpoint_write_seconds": 90,
        "name": "Qwen2.5-72B full fine-tune",
        "kind": WorkloadKind.FULL_FINE_TUNE,
        "model": "qwen2-5-72b",
        "pool": "train-burst-h100-us",
        "gpu_count": 16,
        "status": WorkloadStatus.PLANNED,
        **TRAINING,
        "zero_stage": 0,
        "data_parallel": 2,
        "tensor_parallel": 8,
        "pipeline_parallel": 1,
        "seq_len": 4096,
        "tokens_to_train": 2_000_000_000,
        "expected_mfu": Decimal("0.350"),
    },
    {
        "slug": "llama31-8b-sft-eu",
        "checkpoint_interval_minutes": 45,
        "checkpoint_write_seconds": 40,
        "name": "Llama-3.1-8B support fine-tune (EU)",
        "kind": WorkloadKind.FULL_FINE_TUNE,
        "model": "llama-3-1-8b",
        "pool": "train-a100-eu",
        "gpu_count": 16,
        "status": WorkloadStatus.RUNNING,
        **TRAINING,
        "zero_stage": 2,
        "data_parallel": 16,
        "seq_len": 8192,
        "recompute": "selective",
        "tokens_to_train": 5_000_000_000,
        "expected_mfu": Decimal("0.450"),
    },
    {
        "slug": "eval-sweeps-70b",
        "name": "Llama-3.1-70B eval sweeps",
        "kind": WorkloadKind.BATCH_INFERENCE,
        "model": "llama-3-1-70b",
        "pool": "train-a100-eu",
        "gpu_count": 8,
        "status": WorkloadStatus.RUNNING,
        "weight_precision": "bf16",
        "kv_cache_precision": "bf16",
        "context_length": 8192,
        "concurrent_sequences": 16,
        "inference_tensor_parallel": 4,
    },
    {
        "slug": "llama3-8b-domain-adapt",
        "checkpoint_interval_minutes": 30,
        "checkpoint_write_seconds": 40,
        "name": "Llama-3-8B domain adaptation",
        "kind": WorkloadKind.FULL_FINE_TUNE,
        "model": "llama-3-8b",
        "pool": "infer-l40s-hk",
        "gpu_count": 8,
        "status": WorkloadStatus.PAUSED,
        **TRAINING,
        "zero_stage": 3,
        "data_parallel": 8,
        "seq_len": 4096,
        "recompute": "full",
        "tokens_to_train": 1_000_000_000,
        "expected_mfu": Decimal("0.300"),
    },
    {
        "slug": "chat-api-asia",
        "name": "Chat API · Asia",
        "kind": WorkloadKind.ONLINE_INFERENCE,
        "model": "llama-3-70b",
        "pool": "infer-l40s-hk",
        "gpu_count": 16,
        "status": WorkloadStatus.RUNNING,
        "weight_precision": "fp8",
        "kv_cache_precision": "fp8",
        "context_length": 8192,
        "concurrent_sequences": 16,
        "inference_tensor_parallel": 4,
        "quantization_validated": True,
        "target_ttft_ms": 800,
        "target_p95_latency_ms": 4000,
        "expected_peak_requests_per_second": Decimal("12.00"),
    },
    {
        "slug": "chat-api-cn",
        "name": "Chat API · mainland",
        "kind": WorkloadKind.API_SERVICE,
        "model": "qwen2-5-32b",
        "pool": "infer-h100-bj",
        "gpu_count": 16,
        "status": WorkloadStatus.RUNNING,
        "weight_precision": "bf16",
        "kv_cache_precision": "bf16",
        "context_length": 8192,
        "concurrent_sequences": 16,
        "inference_tensor_parallel": 2,
        "target_ttft_ms": 600,
        "target_p95_latency_ms": 3000,
        "expected_peak_requests_per_second": Decimal("20.00"),
    },
    {
        "slug": "embeddings-eu",
        "name": "Embeddings service · EU",
        "kind": WorkloadKind.API_SERVICE,
        "model": "mistral-7b-v0-1",
        "pool": "infer-a10-eu",
        "gpu_count": 4,
        "status": WorkloadStatus.RUNNING,
        "weight_precision": "bf16",
        "kv_cache_precision": "bf16",
        "context_length": 8192,
        "concurrent_sequences": 4,
        "inference_tensor_parallel": 1,
    },
    {
        "slug": "mistral-7b-lora-support",
        "checkpoint_interval_minutes": 20,
        "checkpoint_write_seconds": 10,
        "name": "Mistral-7B LoRA (support tickets)",
        "kind": WorkloadKind.LORA_FINE_TUNE,
        "model": "mistral-7b-v0-1",
        "pool": "mixed-a100-onprem",
        "gpu_count": 8,
        "status": WorkloadStatus.RUNNING,
        **TRAINING,
        "zero_stage": 2,
        "data_parallel": 8,
        "seq_len": 4096,
        "recompute": "selective",
        "tokens_to_train": 300_000_000,
        "expected_mfu": Decimal("0.350"),
    },
    {
        "slug": "nightly-batch-summaries",
        "name": "Nightly batch summaries",
        "kind": WorkloadKind.BATCH_INFERENCE,
        "model": "qwen2-5-72b",
        "pool": "mixed-a100-onprem",
        "gpu_count": 16,
        "status": WorkloadStatus.RUNNING,
        "weight_precision": "bf16",
        "kv_cache_precision": "bf16",
        "context_length": 16384,
        "concurrent_sequences": 32,
        "inference_tensor_parallel": 4,
    },
    {
        "slug": "search-rerank-online",
        "name": "Search re-ranker (online)",
        "kind": WorkloadKind.ONLINE_INFERENCE,
        "model": "qwen2-5-7b",
        "pool": "mixed-a100-onprem",
        "gpu_count": 8,
        "status": WorkloadStatus.RUNNING,
        "weight_precision": "bf16",
        "kv_cache_precision": "bf16",
        "context_length": 4096,
        "concurrent_sequences": 8,
        "inference_tensor_parallel": 1,
        "target_p95_latency_ms": 300,
    },
    {
        "slug": "store-assistant-int8",
        "name": "Store assistant (INT8)",
        "kind": WorkloadKind.EDGE_INFERENCE,
        "model": "llama-3-1-8b",
        "pool": "edge-t4",
        "gpu_count": 8,
        "status": WorkloadStatus.RUNNING,
        "weight_precision": "int8",
        "kv_cache_precision": "fp16",
        "context_length": 4096,
        "concurrent_sequences": 2,
        "inference_tensor_parallel": 1,
        "quantization_validated": False,
    },
)


class Command(BaseCommand):
    help = "Load the demo fleet and one demo user per role (safe to run repeatedly)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--without-teams",
            action="store_true",
            help="Leave every pool and workload shared: no teams, no budgets.",
        )

    def handle(self, *args, **options):
        now = timezone.now()
        # Everything or nothing: a demo half seeded is worse than none.
        with transaction.atomic():
            users = self.seed_users()
            history_start = demo_history_start(now)
            self.seed_fleet(owner=users["lead"], in_service_from=history_start)
            pool_hours, workload_hours = seed_usage_demo(now=now)
            seed_backups_demo()
            seed_training_demo()
            seed_pilots_demo(user=users["lead"])
            seed_procurement_demo()
            if not options.get("without_teams"):
                seed_showback_demo(users=users, now=now)
        self.stdout.write(
            f"Usage: {pool_hours:,} pool-hours and {workload_hours:,} workload-hours of demo "
            f"telemetry added (history from {history_start:%Y-%m-%d %H:%M} UTC up to this "
            "hour, curve from the Alibaba GenAI trace)."
        )
        self.stdout.write(self.style.SUCCESS("Demo data ready."))
        self.stdout.write(f"Demo logins (password for all: {DEMO_PASSWORD}):")
        for username, _, role in DEMO_USERS:
            self.stdout.write(f"  {username:<12} {role or 'Administrator (superuser)'}")

    def seed_users(self):
        user_model = get_user_model()
        users = {}
        for username, full_name, role in DEMO_USERS:
            first_name, last_name = full_name.split(" ", 1)
            user, created = user_model.objects.get_or_create(
                username=username,
                defaults={
                    "first_name": first_name,
                    "last_name": last_name,
                    "email": f"{username}@example.com",
                },
            )
            if created:
                user.set_password(DEMO_PASSWORD)
            user.is_superuser = user.is_staff = role is None
            user.save()
            if role is not None:
                user.groups.set([Group.objects.get(name=role)])
            users[username] = user
        return users

    def seed_fleet(self, *, owner, in_service_from):
        # The catalog arrives with its data migration; restore rows missing since (e.g.
        # deleted by hand, or flushed by a test) without touching edited ones.
        load_gpu_models(GpuModel, overwrite=False)
        load_model_architectures(ModelArchitecture, overwrite=False)
        gpu_models = {gpu.slug: gpu for gpu in GpuModel.objects.all()}
        architectures = {model.slug: model for model in ModelArchitecture.objects.all()}
        pools = {}
        for spec in DEMO_POOLS:
            values = {
                **spec,
                "gpu_model": gpu_models[spec["gpu_model"]],
                "owner": owner,
                # Charged from the first demo hour on, not from when the command ran.
                "in_service_from": in_service_from,
            }
            pools[spec["slug"]] = _save_if_changed(Pool, values, Pool.refresh_effective_price)
        for spec in DEMO_WORKLOADS:
            values = {**spec, "pool": pools[spec["pool"]], "owner": owner}
            values["model_architecture"] = architectures[values.pop("model")]
            _save_if_changed(Workload, values)


def _save_if_changed(model, values, prepare=None):
    """Create or update by slug, saving only when something differs, so running the
    command again adds no entries to the objects' change history."""
    instance = model.objects.filter(slug=values["slug"]).first() or model()
    for name, value in values.items():
        setattr(instance, name, value)
    if prepare is not None:
        prepare(instance)
    if instance.pk is None or _differs_from_stored(instance):
        instance.save()
    return instance


def _differs_from_stored(instance) -> bool:
    stored = type(instance).objects.get(pk=instance.pk)
    return any(
        getattr(stored, field.attname) != getattr(instance, field.attname)
        for field in instance._meta.concrete_fields
        if field.name not in ("created_at", "updated_at")
    )
