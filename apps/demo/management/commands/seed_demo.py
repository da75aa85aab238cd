"""``manage.py seed_demo``: a small, believable GPU fleet and one demo user per role.

It writes only the demo's own objects. Each object it makes is marked (DemoObject,
apps/demo/registry.py) under the demo's key for it; later runs refresh the marked objects
in place and nothing else, so pools, devices, telemetry, workloads, teams, budgets and
users the user made beside the demo are never written to. A user's object that holds a
slug, name or username the demo wants keeps it, and the demo's object is named apart
("train-h100-sh-demo", "Training · H100 SXM · Shanghai (demo)"); the command says so.

Idempotent and deterministic: no randomness decides what is created, and the clock only
how far the demo usage reaches (up to the current hour; each run extends it, a second run
within the hour adds nothing). Demo pools are in service from the start of their usage
history. Cloud prices are the Lambda on-demand list prices in SkyPilot's catalog
(tests/data/gpu-specs/), per GPU; owned pools carry purchase and running costs from which
the effective price follows.
"""

import argparse
from datetime import datetime
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Team
from apps.backups.demo import seed_backups_demo
from apps.catalog.models import GpuModel, ModelArchitecture
from apps.catalog.seed import load_gpu_models, load_model_architectures
from apps.core.roles import FINANCE, OPS, PROCUREMENT, TECHNICAL_LEAD
from apps.demo.registry import APART_NAME, APART_SLUG, DemoRegistry
from apps.demo.training import DEMO_WORKLOAD as TRAINING_DEMO_WORKLOAD
from apps.demo.training import seed_training_demo
from apps.pilots.demo import DEMO_WORKLOAD as PILOT_DEMO_WORKLOAD
from apps.pilots.demo import seed_pilots_demo
from apps.pools.hours import floor_hour
from apps.pools.models import (
    ComplianceZone,
    Deployment,
    Interconnect,
    Pool,
    PoolPricePeriod,
    Purpose,
    Workload,
    WorkloadKind,
    WorkloadStatus,
)
from apps.pools.prices import PERIOD_FIELDS, ensure_first_period
from apps.pools.services import save_pool
from apps.procurement.demo import SCENARIO_NAME, SCENARIO_SLUG, seed_procurement_demo
from apps.procurement.models import Scenario
from apps.reports.demo import demo_history_start, seed_usage_demo
from apps.reports.models import ClosedMonth
from apps.showback.demo import BUDGET_NOTE, TEAMS, seed_showback_demo, size_budgets
from apps.showback.models import Budget
from apps.showback.months import last_complete_month
from apps.showback.periods import close_month

DEMO_PASSWORD = "gpufleet-demo"  # noqa: S105 - printed for the demo on purpose
# The demo's closed month's key in its registry.
DEMO_CLOSED_MONTH = "closed-month"

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
# The demo's price cut: the on-demand burst pool's price before and after (USD per
# GPU-hour), illustrative of the cuts cloud providers make (AWS cut P5 on-demand prices by
# 44 % from 1 June 2025); the price after is the list price above.
PRICE_CUT_POOL = "train-burst-h100-us"
PRICE_CUT_USD = (Decimal("3.29"), Decimal("2.99"))
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
    help = (
        "Load the demo fleet and one demo user per role, or refresh the demo's own objects "
        "(safe to run repeatedly: nothing the user made is written to)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--without-teams",
            action="store_true",
            help="Leave every pool and workload shared: no teams, no budgets.",
        )
        parser.add_argument(
            "--now",
            type=_instant,
            help="Seed as of this instant (ISO 8601 with its UTC offset, e.g. "
            "2026-11-20T10:30:00+00:00) instead of the clock's: the usage reaches its hour.",
        )

    def handle(self, *args, **options):
        now = options.get("now") or timezone.now()
        # Everything or nothing: a demo half seeded is worse than none.
        with transaction.atomic():
            registry = DemoRegistry.load()
            if registry.is_empty:
                _adopt_earlier_demo(registry)
            fresh = registry.is_empty
            users = self.seed_users(registry)
            history_start = demo_history_start(registry.all_of(Pool).values(), now)
            pools, workloads = self.seed_fleet(
                registry, owner=users["lead"], in_service_from=history_start, now=now
            )
            pool_hours, workload_hours = seed_usage_demo(pools=pools, workloads=workloads, now=now)
            seed_backups_demo(workloads=workloads, ops=users["ops"], now=now)
            seed_training_demo(workloads.get(TRAINING_DEMO_WORKLOAD))
            seed_pilots_demo(workloads.get(PILOT_DEMO_WORKLOAD), user=users["lead"])
            scenario = registry.get(Scenario, SCENARIO_SLUG)
            scenario = seed_procurement_demo(
                workload=workloads.get("chat-api-asia"),
                l40s_pool=pools.get("infer-l40s-hk"),
                h100_pool=pools.get("infer-h100-bj"),
                scenario=scenario,
                **({} if scenario else _identity(registry, Scenario, SCENARIO_SLUG, SCENARIO_NAME)),
            )
            if scenario is not None:
                registry.mark(scenario, SCENARIO_SLUG)
            budgets = {}
            if not options.get("without_teams"):
                budgets = self.seed_teams(registry, users, pools, workloads, now)
            closed = self.seed_closed_month(registry, users["finance"], now)
        untouched = _user_objects(registry)
        self.stdout.write(
            f"Demo {'loaded' if fresh else 'refreshed'}: {len(pools)} pools, "
            f"{len(workloads)} workloads, {len(users)} users"
            + (f", {len(budgets)} budgets" if budgets else "")
            + (f", {closed.month:%Y-%m} closed" if closed else "")
            + f"; {pool_hours:,} pool-hours and {workload_hours:,} workload-hours of usage "
            f"added (from {history_start:%Y-%m-%d %H:%M} UTC up to this hour). "
            + (
                f"Left as they are: {untouched}, not the demo's."
                if untouched
                else "No pools, workloads, teams or users of anyone else's beside it."
            )
        )
        apart = ", ".join(f"{noun} {key} → {name}" for noun, key, name in registry.named_apart)
        self.stdout.write(
            f"Demo logins (password {DEMO_PASSWORD}): "
            + ", ".join(
                f"{users[username].username} ({role or 'superuser'})"
                for username, _, role in DEMO_USERS
            )
            + "."
            + (f" Named apart from yours, which keep their names: {apart}." if apart else "")
        )

    def seed_users(self, registry):
        user_model = get_user_model()
        users = {}
        for username, full_name, role in DEMO_USERS:
            first_name, last_name = full_name.split(" ", 1)
            user = registry.get(user_model, username)
            if user is None:
                name = registry.free_value(user_model, "username", username, APART_SLUG, 150)
                if name != username:
                    registry.named_apart.append(("user", username, name))
                user = user_model(
                    username=name,
                    first_name=first_name,
                    last_name=last_name,
                    email=f"{username}@example.com",
                )
                user.set_password(DEMO_PASSWORD)
                user.save()
                registry.mark(user, username)
            if user.is_superuser != (role is None) or user.is_staff != (role is None):
                user.is_superuser = user.is_staff = role is None
                user.save()
            if role is not None:
                user.groups.set([Group.objects.get(name=role)])
            users[username] = user
        return users

    def seed_fleet(self, registry, *, owner, in_service_from, now):
        """The demo's pools and workloads, made or refreshed; (key → pool, key → workload)."""
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
            pools[spec["slug"]] = _save_demo_object(registry, Pool, values, save=save_pool)
        if (pool := pools.get(PRICE_CUT_POOL)) is not None:
            seed_price_cut(pool, in_service_from, now)
        workloads = {}
        for spec in DEMO_WORKLOADS:
            values = {**spec, "pool": pools[spec["pool"]], "owner": owner}
            values["model_architecture"] = architectures[values.pop("model")]
            workloads[spec["slug"]] = _save_demo_object(registry, Workload, values)
        _date_back_first_records(workloads.values(), in_service_from)
        return pools, workloads

    def seed_closed_month(self, registry, finance, now):
        """The previous full month, closed by the demo's Finance user: once, and only over
        a fleet of the demo's own (closing freezes every pool's figures). A month the
        user closed or reopened since is left as it is."""
        month = last_complete_month(now).date()
        earlier = registry.get(ClosedMonth, DEMO_CLOSED_MONTH)
        if earlier is not None:
            return earlier
        existing = ClosedMonth.objects.filter(month=month).first()
        if existing is not None:
            # Closed by the demo's Finance user: an earlier seed's, which marked nothing.
            if existing.closed_by_id == finance.pk:
                registry.mark(existing, DEMO_CLOSED_MONTH)
                return existing
            return None
        demo_pools = list(registry.ids.get(Pool, {}).values())
        if Pool.objects.exclude(pk__in=demo_pools).exists():
            return None
        closed = close_month(month, finance, now=now)
        registry.mark(closed, DEMO_CLOSED_MONTH)
        return closed

    def seed_teams(self, registry, users, pools, workloads, now):
        teams = {}
        for key, name, description, *_owned in TEAMS:
            teams[key] = _save_demo_object(
                registry, Team, {"slug": key, "name": name, "description": description}
            )
        earlier = {
            key: budget
            for key in ("team:" + key for key, *_ in TEAMS)
            if (budget := registry.get(Budget, key)) is not None
        }
        earlier |= {
            key: budget
            for key in ("pool:" + key for key in pools)
            if (budget := registry.get(Budget, key)) is not None
        }
        # Budgets an earlier seed_demo sized from its first days' spend, never edited since:
        # sized again, once, as new ones are.
        size_budgets({key: earlier[key] for key in registry.to_resize if key in earlier}, now)
        made = seed_showback_demo(
            teams=teams, pools=pools, workloads=workloads, users=users, budgets=earlier, now=now
        )
        for key, budget in made.items():
            registry.mark(budget, key)
        return earlier | made


def seed_price_cut(pool: Pool, history_start: datetime, now: datetime) -> None:
    """Give the on-demand burst pool the price cut of ``PRICE_CUT_USD`` halfway through
    its history, so reports that span it price each hour at the price in force then.

    Only on a pool without price periods: a period once recorded, by this or by a user,
    is history and stays as it is."""
    if pool.price_periods.exists():
        return
    current_usd = pool.on_demand_price_per_gpu_hour_usd
    before_usd, after_usd = PRICE_CUT_USD
    if current_usd != after_usd:
        return  # someone priced the demo pool otherwise: no cut of theirs to invent
    pool.on_demand_price_per_gpu_hour_usd = before_usd
    pool.refresh_effective_price()
    ensure_first_period(pool)
    # Back to the stored prices, unsaved: the pool's own row and its history are those
    # of a pool that has paid the list price since the cut.
    pool.on_demand_price_per_gpu_hour_usd = current_usd
    pool.refresh_effective_price()
    cut_at = floor_hour(history_start + (floor_hour(now) - history_start) / 2)
    PoolPricePeriod.objects.create(
        pool=pool,
        effective_from=max(cut_at, floor_hour(history_start)),
        **{name: getattr(pool, name) for name in PERIOD_FIELDS},
    )


def _date_back_first_records(workloads, since: datetime) -> None:
    """The demo's workloads are as first seeded since its history starts: the cost report
    charges a workload for the hours its status history shows it running
    (apps/pools/running.py), so a running one carries its share of every demo hour and a
    planned or paused one none. A first record already at or before ``since`` stays."""
    history = Workload.history.model
    for workload in workloads:
        first = history.objects.filter(id=workload.id).order_by("history_date").first()
        if first is not None and first.history_date > since:
            history.objects.filter(pk=first.pk).update(history_date=since)


def _instant(text: str) -> datetime:
    try:
        instant = datetime.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 date and time, e.g. 2026-11-20T10:30:00+00:00."
        ) from error
    if instant.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no UTC offset: add one, e.g. {text}+00:00.")
    return instant


def _identity(registry, model, slug, name) -> dict:
    """The slug and name a new demo object of ``model`` takes: the demo's own, or, when a
    user's object holds either, both named apart, so the demo's reads as the demo's in
    every list."""
    if registry.free_value(model, "slug", slug, APART_SLUG, 100) == slug and (
        registry.free_value(model, "name", name, APART_NAME, 100) == name
    ):
        return {"slug": slug, "name": name}
    apart = {
        "slug": registry.free_value(model, "slug", slug, APART_SLUG, 100, apart=True),
        "name": registry.free_value(model, "name", name, APART_NAME, 100, apart=True),
    }
    registry.named_apart.append((model._meta.verbose_name, slug, apart["slug"]))
    return apart


def _save_demo_object(registry, model, values, *, save=None):
    """Refresh the demo's object under ``values["slug"]`` (its slug and name stay as they
    are), or make it, named apart from a user's object that holds the slug or name; saved
    (by ``save(instance)``, the model's service, when it has one) only when something
    differs, so running the command again adds no entries to the objects' change
    history."""
    key = values["slug"]
    instance = registry.get(model, key)
    fields = {name: value for name, value in values.items() if name not in ("slug", "name")}
    if instance is None:
        instance = model(**_identity(registry, model, key, values["name"]))
    for name, value in fields.items():
        setattr(instance, name, value)
    save = save or model.save
    if instance.pk is None:
        save(instance)
        registry.mark(instance, key)
    elif _differs_from_stored(instance):
        save(instance)
    return instance


def _differs_from_stored(instance) -> bool:
    stored = type(instance).objects.get(pk=instance.pk)
    return any(
        getattr(stored, field.attname) != getattr(instance, field.attname)
        for field in instance._meta.concrete_fields
        if field.name not in ("created_at", "updated_at")
    )


def _user_objects(registry) -> str:
    """What of the user's the database holds beside the demo, in words ("3 pools, 2
    workloads, 1 user"), or an empty string."""
    counts = []
    for model, noun in ((Pool, "pool"), (Workload, "workload"), (Team, "team")):
        mine = model.objects.exclude(pk__in=list(registry.ids.get(model, {}).values())).count()
        if mine:
            counts.append(f"{mine} {noun}{'s' if mine != 1 else ''}")
    user_model = get_user_model()
    users = user_model.objects.exclude(
        pk__in=list(registry.ids.get(user_model, {}).values())
    ).count()
    if users:
        counts.append(f"{users} user{'s' if users != 1 else ''}")
    return ", ".join(counts)


def _adopt_earlier_demo(registry) -> None:
    """Mark what a seed_demo from before the marks made, so a database seeded then is
    refreshed rather than given a second fleet. Runs only while nothing is marked, and
    takes an object only when it is the demo's spec to the letter: a user with its
    username, full name and example.com address; a pool with its slug, name and
    description; a workload with its slug and name on such a pool; a team with its slug,
    name and description; the scenario with its slug and name; a budget the demo noted
    as its own on such a team or pool (sized again when nobody edited it: the earlier
    seed_demo sized budgets from the month's first days, which forecast several times
    their amount)."""
    user_model = get_user_model()
    for username, full_name, _role in DEMO_USERS:
        first_name, last_name = full_name.split(" ", 1)
        user = user_model.objects.filter(
            username=username,
            first_name=first_name,
            last_name=last_name,
            email=f"{username}@example.com",
        ).first()
        if user is not None:
            registry.mark(user, username)
    for spec in DEMO_POOLS:
        pool = Pool.objects.filter(
            slug=spec["slug"], name=spec["name"], description=spec["description"]
        ).first()
        if pool is not None:
            registry.mark(pool, spec["slug"])
    pools = registry.all_of(Pool)
    for spec in DEMO_WORKLOADS:
        if spec["pool"] not in pools:
            continue
        workload = Workload.objects.filter(
            slug=spec["slug"], name=spec["name"], pool=pools[spec["pool"]]
        ).first()
        if workload is not None:
            registry.mark(workload, spec["slug"])
    for key, name, description, *_owned in TEAMS:
        team = Team.objects.filter(slug=key, name=name, description=description).first()
        if team is not None:
            registry.mark(team, key)
    scenario = Scenario.objects.filter(slug=SCENARIO_SLUG, name=SCENARIO_NAME).first()
    if scenario is not None:
        registry.mark(scenario, SCENARIO_SLUG)
    owners = [("team", key, team) for key, team in registry.all_of(Team).items()]
    owners += [("pool", key, pool) for key, pool in pools.items()]
    for kind, key, owner in owners:
        budget = Budget.objects.filter(note=BUDGET_NOTE, **{kind: owner}).first()
        if budget is not None:
            registry.mark(budget, f"{kind}:{key}")
            if budget.history.count() == 1:
                registry.to_resize.append(f"{kind}:{key}")
