"""Backup objects for tests, built through the same services the views use."""

from datetime import timedelta
from decimal import Decimal

from django.core.files.base import ContentFile
from django.utils import timezone

from apps.backups import services
from apps.backups.models import BackupPolicy, BackupVersion, RestoreDrill, VersionKind

SHA_A = "a" * 64
SHA_B = "b" * 64


def make_policy(workload, **values) -> BackupPolicy:
    policy = BackupPolicy.objects.filter(workload=workload).first()
    if policy is not None:
        return policy
    defaults = {
        "covered_items": ["checkpoint_weights", "optimizer_state"],
        "current_data_version": "corpus-v2",
        "hot_location": "s3://ckpt/hot/",
        "hot_retention_count": 3,
        "hot_price_per_gb_month_usd": Decimal("0.023"),
        "rpo_minutes": 120,
        "rto_minutes": 60,
        "drill_frequency_days": 30,
    }
    return services.save_policy(BackupPolicy(workload=workload, **{**defaults, **values}))


def make_version(workload, *, checksums=(("node-0", SHA_A), ("node-1", SHA_A)), **values):
    training = workload.is_training
    defaults = {
        "kind": VersionKind.TRAINING_CHECKPOINT if training else VersionKind.INFERENCE_RELEASE,
        "model_name": "llama-3-8b",
        "precision": "bf16",
        "data_version": "corpus-v2" if training else "",
        "config_hash": "3f9a1c2b7d4e",
        "step": 1000 if training else None,
        "tier": "hot",
        "location": "s3://ckpt/hot/step1000/",
        "size_bytes": 16 * 10**9,
        "created_at": timezone.now() - timedelta(hours=1),
    }
    version = BackupVersion(workload=workload, **{**defaults, **values})
    return services.save_version(version, checksums=list(checksums))


def make_drill(policy, version, *, evidence=None, observed=None, **values) -> RestoreDrill:
    started = timezone.now() - timedelta(minutes=50)
    defaults = {
        "restored_from_tier": version.tier,
        "started_at": started,
        "finished_at": started + timedelta(minutes=30),
        "resumed": True,
        "outcome": "restored",
    }
    drill = RestoreDrill(policy=policy, version=version, **{**defaults, **values})
    if evidence is not None:
        drill.evidence.save("drill-log.txt", ContentFile(evidence), save=False)
    pairs = (
        observed
        if observed is not None
        else list(version.checksums.values_list("node", "checksum"))
    )
    return services.record_drill(drill, observed_pairs=pairs)
