"""``manage.py seed_demo``: a small, believable GPU fleet and one demo user per role.

Idempotent (objects are matched by slug or username and updated in place) and
deterministic (no clock or randomness decides what is created). Cloud prices are the
Lambda on-demand list prices in SkyPilot's catalog (tests/data/gpu-specs/), per GPU;
owned pools carry an effective price until the cost model arrives.
"""

from decimal import Decimal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from apps.core.roles import OPS, PROCUREMENT, TECHNICAL_LEAD
from apps.pools.models import Deployment, Pool, Purpose, Workload, WorkloadKind, WorkloadStatus

DEMO_PASSWORD = "gpufleet-demo"  # noqa: S105 - printed for the demo on purpose
DEMO_USERS = (
    # username, full name, role (None = superuser)
    ("lead", "Lena Lead", TECHNICAL_LEAD.name),
    ("ops", "Oskar Ops", OPS.name),
    ("procurement", "Priya Procurement", PROCUREMENT.name),
    ("admin", "Ada Admin", None),
)

DEMO_POOLS = (
    {
        "slug": "train-h100-sh",
        "name": "Training · H100 SXM · Shanghai",
        "purpose": Purpose.TRAINING,
        "deployment": Deployment.BARE_METAL,
        "provider": "Own racks (colocation)",
        "region": "cn-shanghai",
        "gpu_model_name": "H100 SXM",
        "gpu_count": 64,
        "gpus_per_node": 8,
        "price_per_gpu_hour_usd": Decimal("1.85"),
        "description": "Pre-training and full fine-tunes. NVLink within nodes, InfiniBand across.",
    },
    {
        "slug": "train-burst-h100-us",
        "name": "Training burst · H100 SXM · US East",
        "purpose": Purpose.TRAINING,
        "deployment": Deployment.CLOUD_ON_DEMAND,
        "provider": "Lambda",
        "region": "us-east-1",
        "gpu_model_name": "H100 SXM",
        "gpu_count": 16,
        "gpus_per_node": 8,
        # gpu_8x_h100_sxm5 at $23.92/h ÷ 8 GPUs
        "price_per_gpu_hour_usd": Decimal("2.99"),
        "description": "On-demand capacity for deadline bursts; released between projects.",
    },
    {
        "slug": "infer-l40s-hk",
        "name": "Inference · L40S · Hong Kong",
        "purpose": Purpose.INFERENCE,
        "deployment": Deployment.CLOUD_RESERVED,
        "provider": "Regional cloud",
        "region": "ap-east-1 (Hong Kong)",
        "gpu_model_name": "L40S",
        "gpu_count": 24,
        "gpus_per_node": 4,
        "price_per_gpu_hour_usd": Decimal("1.10"),
        "description": "Online chat API for Asia; 1-year reservation.",
    },
    {
        "slug": "infer-a10-eu",
        "name": "Inference · A10 · EU",
        "purpose": Purpose.INFERENCE,
        "deployment": Deployment.CLOUD_ON_DEMAND,
        "provider": "Lambda",
        "region": "europe-central-1",
        "gpu_model_name": "A10",
        "gpu_count": 8,
        "gpus_per_node": 1,
        # gpu_1x_a10 at $0.75/h
        "price_per_gpu_hour_usd": Decimal("0.75"),
        "description": "Embedding and small-model endpoints, scaled with traffic.",
    },
    {
        "slug": "mixed-a100-onprem",
        "name": "Mixed · A100 80GB · on-prem",
        "purpose": Purpose.MIXED,
        "deployment": Deployment.ON_PREMISES,
        "provider": "Own data centre",
        "region": "cn-beijing",
        "gpu_model_name": "A100 SXM 80GB",
        "gpu_count": 32,
        "gpus_per_node": 8,
        "price_per_gpu_hour_usd": Decimal("1.05"),
        "description": "Shared research cluster: fine-tunes by day, batch inference by night.",
    },
    {
        "slug": "edge-t4",
        "name": "Edge · T4 · stores",
        "purpose": Purpose.INFERENCE,
        "deployment": Deployment.ON_PREMISES,
        "provider": "Store servers",
        "region": "on-site",
        "gpu_model_name": "T4",
        "gpu_count": 8,
        "gpus_per_node": 1,
        "price_per_gpu_hour_usd": Decimal("0.18"),
        "description": "Quantized vision and speech models at the edge.",
    },
)

DEMO_WORKLOADS = (
    (
        "llama3-70b-pretrain",
        "Llama-3-70B continued pre-training",
        WorkloadKind.PRE_TRAINING,
        "train-h100-sh",
        64,
        WorkloadStatus.RUNNING,
    ),
    (
        "qwen25-72b-sft",
        "Qwen2.5-72B full fine-tune",
        WorkloadKind.FULL_FINE_TUNE,
        "train-burst-h100-us",
        16,
        WorkloadStatus.PLANNED,
    ),
    (
        "mistral-7b-lora-support",
        "Mistral-7B LoRA (support tickets)",
        WorkloadKind.LORA_FINE_TUNE,
        "mixed-a100-onprem",
        8,
        WorkloadStatus.RUNNING,
    ),
    (
        "chat-api-asia",
        "Chat API · Asia",
        WorkloadKind.ONLINE_INFERENCE,
        "infer-l40s-hk",
        24,
        WorkloadStatus.RUNNING,
    ),
    (
        "embeddings-eu",
        "Embeddings service · EU",
        WorkloadKind.API_SERVICE,
        "infer-a10-eu",
        4,
        WorkloadStatus.RUNNING,
    ),
    (
        "nightly-batch-summaries",
        "Nightly batch summaries",
        WorkloadKind.BATCH_INFERENCE,
        "mixed-a100-onprem",
        16,
        WorkloadStatus.RUNNING,
    ),
    (
        "search-rerank-online",
        "Search re-ranker (online)",
        WorkloadKind.ONLINE_INFERENCE,
        "mixed-a100-onprem",
        8,
        WorkloadStatus.RUNNING,
    ),
    (
        "store-vision-int8",
        "Store shelf vision (INT8)",
        WorkloadKind.EDGE_INFERENCE,
        "edge-t4",
        8,
        WorkloadStatus.RUNNING,
    ),
)


class Command(BaseCommand):
    help = "Load the demo fleet and one demo user per role (safe to run repeatedly)."

    def handle(self, *args, **options):
        with transaction.atomic():
            users = self.seed_users()
            self.seed_fleet(owner=users["lead"])
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

    def seed_fleet(self, *, owner):
        pools = {}
        for spec in DEMO_POOLS:
            spec = dict(spec)
            pool, _ = Pool.objects.update_or_create(
                slug=spec.pop("slug"), defaults={**spec, "owner": owner}
            )
            pools[pool.slug] = pool
        for slug, name, kind, pool_slug, gpu_count, status in DEMO_WORKLOADS:
            Workload.objects.update_or_create(
                slug=slug,
                defaults={
                    "name": name,
                    "kind": kind,
                    "pool": pools[pool_slug],
                    "gpu_count": gpu_count,
                    "status": status,
                    "owner": owner,
                },
            )
