"""Backup policies, versions and drills for the demo fleet (``manage.py seed_demo``).

Policies of every kind of coverage — complete, "weights only", never drilled — with
versions (a checkpoint of an older data version, a purged rollback target), and drills
that passed, failed and are overdue, on the demo's own workloads only (the caller passes
them). Idempotent: a policy, version or drill that exists is left as it is, so running it
twice changes nothing. Times are relative to the first
run, so the demo's drills are recent when it is first loaded.
"""

import hashlib
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from apps.backups import services
from apps.backups.coverage import INFERENCE, TRAINING, items_for
from apps.backups.models import (
    BackupPolicy,
    BackupVersion,
    DrillOutcome,
    RestoreDrill,
    Tier,
    VersionChecksum,
    VersionKind,
)

TRAINING_ALL = [item.key for item in items_for(TRAINING)]
INFERENCE_ALL = [item.key for item in items_for(INFERENCE)]
S3_PRICES = {"hot": Decimal("0.0230"), "warm": Decimal("0.0125"), "cold": Decimal("0.0036")}


def _tiers(prefix, hot=(3, None), warm=(10, 30), cold=(None, 365)):
    values = {}
    for tier, (count, days) in (("hot", hot), ("warm", warm), ("cold", cold)):
        values[f"{tier}_location"] = f"{prefix}/{tier}/"
        values[f"{tier}_retention_count"] = count
        values[f"{tier}_retention_days"] = days
        values[f"{tier}_price_per_gb_month_usd"] = S3_PRICES[tier]
    return values


# workload slug → (policy values, days since the policy was made)
POLICIES = {
    "llama3-70b-pretrain": (
        {
            "covered_items": TRAINING_ALL,
            "current_data_version": "corpus-2024q3-v2",
            **_tiers("s3://gpufleet-ckpt/llama3-70b", hot=(4, 2)),
            "rpo_minutes": 120,
            "rto_minutes": 60,
            "drill_frequency_days": 30,
            "checkpoint_size_gb": Decimal("1130.00"),
        },
        120,
    ),
    "llama31-8b-sft-eu": (
        {
            "covered_items": ["checkpoint_weights", "container_image", "runtime_pins"],
            "current_data_version": "support-tickets-2024-09",
            **_tiers("s3://eu-ckpt/llama31-8b", hot=(2, None)),
            "rpo_minutes": 90,
            "rto_minutes": 30,
            "drill_frequency_days": 30,
            "mtbf_hours": Decimal("72.00"),
        },
        60,
    ),
    "mistral-7b-lora-support": (
        {
            "covered_items": [
                "checkpoint_weights",
                "optimizer_state",
                "lr_scheduler_state",
                "data_version",
                "training_config",
                "container_image",
            ],
            "current_data_version": "tickets-v7",
            **_tiers("nfs://store01/ckpt/mistral-lora", hot=(5, None)),
            "rpo_minutes": 60,
            "rto_minutes": 45,
            "drill_frequency_days": 30,
        },
        90,
    ),
    "llama3-8b-domain-adapt": (
        {
            "covered_items": ["checkpoint_weights", "optimizer_state", "training_config"],
            "current_data_version": "domain-corpus-v1",
            **_tiers("s3://hk-ckpt/llama3-8b-da", hot=(3, None)),
            "rpo_minutes": 60,
            "rto_minutes": 60,
            "drill_frequency_days": 14,
        },
        40,
    ),
    "chat-api-asia": (
        {
            "covered_items": INFERENCE_ALL,
            **_tiers("s3://hk-releases/chat-api-asia", hot=(1, None), warm=(3, None)),
            "rpo_minutes": 7 * 24 * 60,
            "rto_minutes": 20,
            "drill_frequency_days": 30,
        },
        100,
    ),
    "chat-api-cn": (
        {
            "covered_items": ["model_artifact", "container_images"],
            **_tiers("oss://bj-releases/chat-api-cn", hot=(1, None), warm=(2, None)),
            "rpo_minutes": 7 * 24 * 60,
            "rto_minutes": 15,
            "drill_frequency_days": 30,
        },
        80,
    ),
    "embeddings-eu": (
        {
            "covered_items": [
                "model_artifact",
                "tokenizer_config",
                "service_config",
                "container_images",
                "runtime_pins",
                "release_records",
            ],
            **_tiers("s3://eu-releases/embeddings", hot=(1, None), warm=(1, None)),
            "rpo_minutes": 14 * 24 * 60,
            "rto_minutes": 30,
            "drill_frequency_days": 30,
        },
        150,
    ),
    "store-assistant-int8": (
        {
            "covered_items": ["model_artifact", "service_config", "container_images"],
            **_tiers("s3://edge-releases/store-assistant", hot=(1, None), warm=(2, None)),
            "rpo_minutes": 30 * 24 * 60,
            "rto_minutes": 120,
            "drill_frequency_days": 60,
        },
        10,
    ),
    "search-rerank-online": (
        {
            "covered_items": [key for key in INFERENCE_ALL if key != "quantization_params"],
            **_tiers("s3://releases/search-rerank", hot=(1, None), warm=(3, None)),
            "rpo_minutes": 7 * 24 * 60,
            "rto_minutes": 10,
            "drill_frequency_days": 30,
        },
        70,
    ),
}

GB = 10**9
# workload slug → versions: (key, values, days ago, nodes, stable)
VERSIONS = {
    "llama3-70b-pretrain": [
        (
            "old",
            {
                "kind": VersionKind.TRAINING_CHECKPOINT,
                "model_name": "llama-3-70b",
                "precision": "bf16",
                "data_version": "corpus-2024q2-v1",
                "step": 18000,
                "tier": Tier.COLD,
                "size_bytes": 1130 * GB,
            },
            60,
            8,
            False,
        ),
        (
            "warm",
            {
                "kind": VersionKind.TRAINING_CHECKPOINT,
                "model_name": "llama-3-70b",
                "precision": "bf16",
                "data_version": "corpus-2024q3-v2",
                "step": 41000,
                "tier": Tier.WARM,
                "size_bytes": 1130 * GB,
            },
            12,
            8,
            False,
        ),
        (
            "hot",
            {
                "kind": VersionKind.TRAINING_CHECKPOINT,
                "model_name": "llama-3-70b",
                "precision": "bf16",
                "data_version": "corpus-2024q3-v2",
                "step": 42000,
                "tier": Tier.HOT,
                "size_bytes": 1130 * GB,
            },
            0.05,
            8,
            False,
        ),
    ],
    "llama31-8b-sft-eu": [
        (
            "hot",
            {
                "kind": VersionKind.TRAINING_CHECKPOINT,
                "model_name": "llama-3.1-8b",
                "precision": "bf16",
                "data_version": "support-tickets-2024-09",
                "step": 3000,
                "tier": Tier.HOT,
                "size_bytes": 16 * GB,
            },
            25,
            2,
            False,
        ),
    ],
    "mistral-7b-lora-support": [
        (
            "hot",
            {
                "kind": VersionKind.TRAINING_CHECKPOINT,
                "model_name": "mistral-7b-lora",
                "precision": "bf16",
                "data_version": "tickets-v7",
                "step": 900,
                "tier": Tier.HOT,
                "size_bytes": 2 * GB,
            },
            55,
            1,
            False,
        ),
    ],
    "chat-api-asia": [
        (
            "v1",
            {
                "kind": VersionKind.QUANTIZED_VARIANT,
                "model_name": "llama-3-70b-instruct",
                "precision": "fp8",
                "tag": "r2024-08",
                "tier": Tier.WARM,
                "size_bytes": 72 * GB,
                "gray_ratio_percent": Decimal("10"),
                "validation_results": "MMLU 79.2 (BF16 baseline 79.6)",
                "rollback_steps": "Point the gateway's upstream back to pool chat-v1.",
                "release_owner": "Oskar Ops",
            },
            60,
            4,
            True,
        ),
        (
            "v2",
            {
                "kind": VersionKind.QUANTIZED_VARIANT,
                "model_name": "llama-3-70b-instruct",
                "precision": "fp8",
                "tag": "r2024-10",
                "tier": Tier.HOT,
                "size_bytes": 72 * GB,
                "gray_ratio_percent": Decimal("5"),
                "validation_results": "MMLU 79.4 (BF16 baseline 79.6)",
                "rollback_steps": "Shift gray ratio to 0 %, then restore v1's service config.",
                "release_owner": "Oskar Ops",
            },
            20,
            4,
            True,
        ),
    ],
    "chat-api-cn": [
        (
            "v1",
            {
                "kind": VersionKind.INFERENCE_RELEASE,
                "model_name": "qwen2.5-32b-instruct",
                "precision": "bf16",
                "tag": "r3",
                "tier": Tier.HOT,
                "size_bytes": 66 * GB,
                "release_owner": "Lena Lead",
            },
            35,
            8,
            True,
        ),
    ],
    "embeddings-eu": [
        (
            "r1",
            {
                "kind": VersionKind.INFERENCE_RELEASE,
                "model_name": "e5-mistral-7b",
                "precision": "bf16",
                "tag": "r1",
                "tier": Tier.WARM,
                "size_bytes": 15 * GB,
            },
            140,
            4,
            True,
        ),
        (
            "r2",
            {
                "kind": VersionKind.INFERENCE_RELEASE,
                "model_name": "e5-mistral-7b",
                "precision": "bf16",
                "tag": "r2",
                "tier": Tier.HOT,
                "size_bytes": 15 * GB,
            },
            70,
            4,
            True,
        ),
    ],
    "search-rerank-online": [
        (
            "r5",
            {
                "kind": VersionKind.INFERENCE_RELEASE,
                "model_name": "qwen2.5-7b-rerank",
                "precision": "bf16",
                "tag": "r5",
                "tier": Tier.WARM,
                "size_bytes": 15 * GB,
            },
            45,
            8,
            True,
        ),
        (
            "r6",
            {
                "kind": VersionKind.INFERENCE_RELEASE,
                "model_name": "qwen2.5-7b-rerank",
                "precision": "bf16",
                "tag": "r6",
                "tier": Tier.HOT,
                "size_bytes": 15 * GB,
            },
            9,
            8,
            True,
        ),
    ],
    "store-assistant-int8": [
        (
            "v3",
            {
                "kind": VersionKind.QUANTIZED_VARIANT,
                "model_name": "llama-3.1-8b-store",
                "precision": "int8",
                "tag": "v3",
                "tier": Tier.HOT,
                "size_bytes": 9 * GB,
            },
            8,
            8,
            False,
        ),
    ],
}
PURGED = {("embeddings-eu", "r1")}


def _drill(
    version,
    days_ago,
    minutes,
    *,
    age_minutes,
    notes,
    resumed=True,
    outcome="restored",
    bad_nodes=(),
    unrecorded_nodes=0,
):
    """A drill ``days_ago`` that took ``minutes`` and restored ``version`` as it was
    ``age_minutes`` after it was made (its RPO age at the played failure); the last
    ``unrecorded_nodes`` nodes' checksums were not recorded after the restore."""
    return {
        "version": version,
        "days_ago": days_ago,
        "minutes": minutes,
        "age_minutes": age_minutes,
        "notes": notes,
        "resumed": resumed,
        "outcome": outcome,
        "bad_nodes": set(bad_nodes),
        "unrecorded_nodes": unrecorded_nodes,
    }


DRILLS = {
    "llama3-70b-pretrain": [
        _drill("warm", 9, 48, age_minutes=70, notes="Resumed step 41000; loss curve continuous.")
    ],
    "llama31-8b-sft-eu": [
        _drill(
            "hot",
            20,
            95,
            age_minutes=30,
            resumed=False,
            outcome=DrillOutcome.FAILED,
            notes="Weights loaded but no optimizer or LR-scheduler state: the run could not "
            "resume where it stopped.",
        )
    ],
    "mistral-7b-lora-support": [
        _drill(
            "hot",
            50,
            25,
            age_minutes=40,
            unrecorded_nodes=1,
            notes="Restored from NFS; the node was recycled before its checksum was taken.",
        )
    ],
    "chat-api-asia": [
        _drill(
            "v1",
            12,
            14,
            age_minutes=3 * 1440,
            notes="Rolled back to v1 in staging; answers matched the monitoring baseline.",
        )
    ],
    "chat-api-cn": [
        _drill(
            "v1",
            6,
            41,
            age_minutes=2 * 1440,
            outcome=DrillOutcome.RESTORED_WITH_ISSUES,
            bad_nodes=["replica-3"],
            notes="replica-3 served a different tokenizer; the service config had to be "
            "rebuilt by hand.",
        )
    ],
    "embeddings-eu": [
        _drill("r2", 45, 12, age_minutes=10 * 1440, notes="Restored from the hot tier.")
    ],
    "search-rerank-online": [
        _drill("r5", 3, 6, age_minutes=5 * 1440, notes="Rollback to r5 within the RTO.")
    ],
}


def _checksum(name: str, node: str, corrupted=False) -> str:
    return hashlib.sha256(f"{name}:{node}:{'bad' if corrupted else 'ok'}".encode()).hexdigest()


def _nodes(kind: str, count: int) -> list[str]:
    if kind == VersionKind.TRAINING_CHECKPOINT:
        return [f"node-{index:02d}" for index in range(count)]
    return [f"replica-{index}" for index in range(count)]


@transaction.atomic
def seed_backups_demo(*, workloads: dict, ops=None, now=None) -> dict:
    """Create what is missing of the demo's backups on the demo's ``workloads`` (demo key,
    its spec's slug → workload), recorded by the demo's ``ops`` user; returns counts of
    what was created."""
    now = now or timezone.now()
    created = {"policies": 0, "versions": 0, "drills": 0}
    policies = {}
    for slug, (values, age_days) in POLICIES.items():
        workload = workloads.get(slug)
        if workload is None:
            continue
        policy = BackupPolicy.objects.filter(workload=workload).first()
        if policy is None:
            policy = BackupPolicy(
                workload=workload, created_at=now - timedelta(days=age_days), **values
            )
            services.save_policy(policy)
            created["policies"] += 1
        policies[slug] = policy

    versions = {}
    for slug, specs in VERSIONS.items():
        workload = workloads.get(slug)
        if workload is None:
            continue
        for key, values, days_ago, node_count, stable in specs:
            config_hash = hashlib.sha256(f"{slug}:{key}:config".encode()).hexdigest()[:12]
            version = BackupVersion(
                workload=workload,
                config_hash=config_hash,
                location=f"{_location(policies.get(slug), values['tier'])}{key}/",
                created_at=now - timedelta(days=days_ago),
                **values,
            )
            version.refresh_name()
            existing = BackupVersion.objects.filter(workload=workload, name=version.name).first()
            if existing is None:
                if (slug, key) in PURGED:
                    version.purged_at = now - timedelta(days=30)
                services.save_version(
                    version,
                    checksums=[
                        (node, _checksum(version.name, node))
                        for node in _nodes(version.kind, node_count)
                    ],
                    user=ops,
                )
                if stable:
                    BackupVersion.objects.filter(pk=version.pk).update(
                        stable_since=version.created_at + timedelta(days=1)
                    )
                created["versions"] += 1
                existing = version
            versions[(slug, key)] = existing

    for slug, specs in DRILLS.items():
        policy = policies.get(slug)
        if policy is None:
            continue
        for spec in specs:
            version = versions.get((slug, spec["version"]))
            if version is None or policy.drills.filter(version=version).exists():
                continue
            started = now - timedelta(days=spec["days_ago"])
            rows = list(VersionChecksum.objects.filter(version=version))
            recorded = rows[: max(0, len(rows) - spec["unrecorded_nodes"])]
            observed = [
                (row.node, _checksum(version.name, row.node, row.node in spec["bad_nodes"]))
                for row in recorded
            ]
            drill = RestoreDrill(
                policy=policy,
                version=version,
                restored_from_tier=version.tier,
                performed_by=ops,
                started_at=started,
                finished_at=started + timedelta(minutes=spec["minutes"]),
                reference_time=version.created_at + timedelta(minutes=spec["age_minutes"]),
                resumed=spec["resumed"],
                outcome=spec["outcome"],
                observed_checksums="\n".join(f"{node} {checksum}" for node, checksum in observed),
                notes=spec["notes"],
            )
            services.record_drill(drill, observed_pairs=observed)
            created["drills"] += 1
    # The demo's policies only: a user's policy is rescheduled by the daily task, not here.
    services.refresh_drill_schedules(
        BackupPolicy.objects.filter(pk__in=[policy.pk for policy in policies.values()]), now=now
    )
    return created


def _location(policy, tier) -> str:
    if policy is None:
        return "s3://unknown/"
    return getattr(policy, f"{tier}_location") or "s3://unknown/"
