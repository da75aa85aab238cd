"""factory_boy factories for the main models.

Defaults are the suite's usual test objects (an H100 SXM training pool of 16 GPUs at
$2.99 on demand, a Llama-3-8B full fine-tune on 8 of them); a test states only what it
cares about. Sequences keep names and slugs unique when a test builds several.

The catalog's seeded rows come from its data migration: ``seeded_gpu_model`` and
``seeded_architecture`` fetch them, and the catalog factories build new entries. Backup
objects go through ``apps.backups.services`` like every other writer, so coverage,
drill schedules and checksums are what the views would store.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile
from django.utils import timezone
from django.utils.text import slugify

from apps.accounts.models import Team
from apps.backups import services as backup_services
from apps.backups.models import BackupPolicy, BackupVersion, RestoreDrill, VersionKind
from apps.catalog.models import GpuModel, ModelArchitecture
from apps.clusters.models import Cluster
from apps.core.roles import FINANCE, OPS, PROCUREMENT, TECHNICAL_LEAD
from apps.pilots.models import PilotResult
from apps.pools.models import Deployment, Pool, Purpose, Workload, WorkloadKind
from apps.pools.services import save_pool
from apps.procurement.models import Scenario, ScenarioOption
from apps.telemetry.models import GpuDevice, HostnameRule, ImportRun, PullSource

TEST_PASSWORD = "correct-horse-battery-staple"
# The tests' telemetry is dated 2022 onwards: pools are backfilled from then on.
SERVICE_START = datetime(2022, 1, 1, tzinfo=UTC)
SHA_A = "a" * 64
SHA_B = "b" * 64

# Role key → the group the data migrations create (None: no group).
ROLE_GROUP_NAMES = {
    "lead": TECHNICAL_LEAD.name,
    "ops": OPS.name,
    "procurement": PROCUREMENT.name,
    "finance": FINANCE.name,  # reads every team's objects, closes months, keeps exchange rates
    "reader": None,  # signed in, no role: reads everything, changes nothing
    "admin": None,  # superuser
}


def seeded_gpu_model(slug="h100-sxm") -> GpuModel:
    return GpuModel.objects.get(slug=slug)


def seeded_architecture(slug="llama-3-8b") -> ModelArchitecture:
    return ModelArchitecture.objects.get(slug=slug)


# --- Users ------------------------------------------------------------------------------


class UserFactory(factory.django.DjangoModelFactory):
    """A user holding a role, one of ROLE_GROUP_NAMES' keys: ``UserFactory(role="ops")``.
    The group is the one the data migrations create; nothing is granted here."""

    class Meta:
        model = get_user_model()

    role = "reader"
    username = factory.LazyAttributeSequence(lambda user, n: f"{user.role}-{n:04d}")
    first_name = factory.LazyAttribute(lambda user: user.role.capitalize())
    is_superuser = factory.LazyAttribute(lambda user: user.role == "admin")
    is_staff = factory.LazyAttribute(lambda user: user.role == "admin")
    password = factory.django.Password(TEST_PASSWORD)

    @classmethod
    def _create(cls, model_class, *args, role="reader", teams=(), **kwargs):
        user = super()._create(model_class, *args, **kwargs)
        group_name = ROLE_GROUP_NAMES[role]
        if group_name:
            user.groups.add(Group.objects.get(name=group_name))
        for team in teams:
            team.members.add(user)
        return user

    @classmethod
    def _build(cls, model_class, *args, role="reader", teams=(), **kwargs):
        return model_class(*args, **kwargs)


class TeamFactory(factory.django.DjangoModelFactory):
    """A team with no members: ``UserFactory(role="lead", teams=[team])`` adds one."""

    class Meta:
        model = Team

    name = factory.Sequence(lambda n: f"Team {n:03d}")
    slug = factory.LazyAttribute(lambda team: slugify(team.name))


# --- Catalog ----------------------------------------------------------------------------


class ClusterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Cluster

    slug = factory.Sequence(lambda n: f"test-cluster-{n}")
    name = factory.LazyAttribute(lambda cluster: cluster.slug.upper())
    kind = Cluster.Kind.SLURM
    timezone = "UTC"


class GpuModelFactory(factory.django.DjangoModelFactory):
    """A catalog entry of its own (an 80 GB, 700 W card), not one of the seeded ones."""

    class Meta:
        model = GpuModel

    slug = factory.Sequence(lambda n: f"test-gpu-{n}")
    name = factory.LazyAttribute(lambda gpu: gpu.slug.upper())
    vendor = "Acme"
    memory_gb = Decimal("80")
    memory_bandwidth_gb_per_second = Decimal("3000")
    bf16_dense_tflops = Decimal("900")
    tdp_watts = 700


class ModelArchitectureFactory(factory.django.DjangoModelFactory):
    """A Llama-2-7B-shaped architecture of its own."""

    class Meta:
        model = ModelArchitecture

    slug = factory.Sequence(lambda n: f"test-architecture-{n}")
    name = factory.LazyAttribute(lambda architecture: architecture.slug.upper())
    layers = 32
    hidden_size = 4096
    intermediate_size = 11008
    attention_heads = 32
    kv_heads = 32
    head_dim = 128
    vocab_size = 32000
    max_context = 4096


# --- Pools and workloads ----------------------------------------------------------------


class PoolFactory(factory.django.DjangoModelFactory):
    """A cloud on-demand training pool on the seeded H100 SXM, saved through
    ``save_pool`` as every pool is: its effective price follows from its cost inputs."""

    class Meta:
        model = Pool

    name = factory.Sequence(lambda n: f"Test pool {n}")
    slug = factory.LazyAttribute(lambda pool: slugify(pool.name))
    purpose = Purpose.TRAINING
    deployment = Deployment.CLOUD_ON_DEMAND
    gpu_model = factory.LazyFunction(seeded_gpu_model)
    gpu_count = 16
    gpus_per_node = 8
    on_demand_price_per_gpu_hour_usd = Decimal("2.99")
    in_service_from = SERVICE_START

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return save_pool(model_class(*args, **kwargs))


class WorkloadFactory(factory.django.DjangoModelFactory):
    """A Llama-3-8B full fine-tune on 8 GPUs (data parallel 8, ZeRO-3)."""

    class Meta:
        model = Workload

    name = factory.Sequence(lambda n: f"Test workload {n}")
    slug = factory.LazyAttribute(lambda workload: slugify(workload.name))
    kind = WorkloadKind.FULL_FINE_TUNE
    model_architecture = factory.LazyFunction(seeded_architecture)
    pool = factory.SubFactory(PoolFactory)
    gpu_count = 8
    data_parallel = 8
    zero_stage = 3


def status_history(workload: Workload, *steps) -> Workload:
    """Give ``workload`` the status history ``steps``: (moment, status) pairs, oldest
    first, each in force until the next (apps/pools/running.py reads them). Its current
    status is the last one."""
    Workload.history.model.objects.filter(id=workload.id).delete()
    for moment, status in steps:
        workload.status = status
        workload.save()
        newest = Workload.history.model.objects.filter(id=workload.id).latest("history_id")
        Workload.history.model.objects.filter(pk=newest.pk).update(history_date=moment)
    return workload


# --- Telemetry --------------------------------------------------------------------------


class GpuDeviceFactory(factory.django.DjangoModelFactory):
    """A whole GPU first and last seen now; its key is its UUID."""

    class Meta:
        model = GpuDevice

    uuid = factory.Sequence(lambda n: f"GPU-{n:04x}")
    key = factory.LazyAttribute(lambda device: device.uuid)
    pool = factory.SubFactory(PoolFactory)
    first_seen_at = factory.LazyFunction(timezone.now)
    last_seen_at = factory.LazyAttribute(lambda device: device.first_seen_at)


class ImportRunFactory(factory.django.DjangoModelFactory):
    """A pending upload of a DCGM scrape."""

    class Meta:
        model = ImportRun

    kind = "gpu"
    format = "dcgm"
    source = ImportRun.Source.UPLOAD
    filename = "scrape.prom"
    pool = factory.SubFactory(PoolFactory)


class PullSourceFactory(factory.django.DjangoModelFactory):
    """A dcgm-exporter endpoint; its slug is made from its name, as the forms make it."""

    class Meta:
        model = PullSource

    name = factory.Sequence(lambda n: f"source {n}")
    slug = factory.LazyAttribute(lambda source: slugify(source.name) or "source")
    kind = PullSource.Kind.DCGM_EXPORTER
    url = "http://127.0.0.1:9400/metrics"
    pool = None


class HostnameRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = HostnameRule

    pool = factory.SubFactory(PoolFactory)
    hostname_pattern = factory.Sequence(lambda n: f"node-{n}-*")


# --- Procurement ------------------------------------------------------------------------


class ScenarioFactory(factory.django.DjangoModelFactory):
    """A scenario whose demand is a measured pool's."""

    class Meta:
        model = Scenario

    name = factory.Sequence(lambda n: f"Test scenario {n}")
    slug = factory.LazyAttribute(lambda scenario: slugify(scenario.name))
    demand_source = "measured_pool"
    demand_pool = factory.SubFactory(PoolFactory)


class ScenarioOptionFactory(factory.django.DjangoModelFactory):
    """Renting the demand pool's GPU on demand."""

    class Meta:
        model = ScenarioOption

    scenario = factory.SubFactory(ScenarioFactory)
    name = factory.Sequence(lambda n: f"Option {n}")
    kind = "on_demand"
    gpu_model = factory.LazyAttribute(lambda option: option.scenario.demand_pool.gpu_model)


# --- Pilots -----------------------------------------------------------------------------


class PilotResultFactory(factory.django.DjangoModelFactory):
    """A vLLM result of the workload on one GPU of its pool's model; its file hash is
    made from its name, so two names are two files."""

    class Meta:
        model = PilotResult

    workload = factory.SubFactory(WorkloadFactory)
    gpu_model = factory.LazyAttribute(lambda result: result.workload.pool.gpu_model)
    name = factory.Sequence(lambda n: f"Pilot {n}")
    gpu_count = 1
    source_format = "vllm"
    content_sha256 = factory.LazyAttribute(lambda result: f"{result.name:0>64}"[:64])
    output_tokens_per_second = 1000.0


# --- Backups ----------------------------------------------------------------------------


class BackupPolicyFactory(factory.django.DjangoModelFactory):
    """Weights and optimizer state kept hot, 3 copies; RPO 2 h, RTO 1 h, a drill a month.

    Saved through ``services.save_policy``; a workload has one policy, so asking for
    another one of the same workload returns the stored one unchanged.
    """

    class Meta:
        model = BackupPolicy

    workload = factory.SubFactory(WorkloadFactory)
    covered_items = factory.LazyFunction(lambda: ["checkpoint_weights", "optimizer_state"])
    current_data_version = "corpus-v2"
    hot_location = "s3://ckpt/hot/"
    hot_retention_count = 3
    hot_price_per_gb_month_usd = Decimal("0.023")
    rpo_minutes = 120
    rto_minutes = 60
    drill_frequency_days = 30

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        stored = model_class.objects.filter(workload=kwargs["workload"]).first()
        if stored is not None:
            return stored
        return backup_services.save_policy(model_class(*args, **kwargs))


class BackupVersionFactory(factory.django.DjangoModelFactory):
    """A checkpoint (or, for an inference workload, a release) an hour old, 16 GB, hot,
    with one checksum per node; saved through ``services.save_version``."""

    class Meta:
        model = BackupVersion

    checksums = (("node-0", SHA_A), ("node-1", SHA_A))
    workload = factory.SubFactory(WorkloadFactory)
    kind = factory.LazyAttribute(
        lambda version: (
            VersionKind.TRAINING_CHECKPOINT
            if version.workload.is_training
            else VersionKind.INFERENCE_RELEASE
        )
    )
    model_name = "llama-3-8b"
    precision = "bf16"
    data_version = factory.LazyAttribute(
        lambda version: "corpus-v2" if version.workload.is_training else ""
    )
    config_hash = "3f9a1c2b7d4e"
    step = factory.LazyAttribute(lambda version: 1000 if version.workload.is_training else None)
    tier = "hot"
    location = "s3://ckpt/hot/step1000/"
    size_bytes = 16 * 10**9
    created_at = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=1))

    @classmethod
    def _create(cls, model_class, *args, checksums=(), **kwargs):
        return backup_services.save_version(model_class(*args, **kwargs), checksums=list(checksums))

    @classmethod
    def _build(cls, model_class, *args, checksums=(), **kwargs):
        return model_class(*args, **kwargs)


class RestoreDrillFactory(factory.django.DjangoModelFactory):
    """A passed drill of 30 minutes that started 50 minutes ago, restoring ``version``
    from its tier; the observed checksums are the version's own unless ``observed`` says
    otherwise. ``evidence`` (bytes) attaches a log. Saved through ``services.record_drill``."""

    class Meta:
        model = RestoreDrill

    observed = None
    evidence = None
    version = factory.SubFactory(BackupVersionFactory)
    policy = factory.LazyAttribute(
        lambda drill: BackupPolicyFactory(workload=drill.version.workload)
    )
    restored_from_tier = factory.LazyAttribute(lambda drill: drill.version.tier)
    started_at = factory.LazyFunction(lambda: timezone.now() - timedelta(minutes=50))
    finished_at = factory.LazyAttribute(lambda drill: drill.started_at + timedelta(minutes=30))
    resumed = True
    outcome = "restored"

    @classmethod
    def _create(cls, model_class, *args, observed=None, evidence=None, **kwargs):
        drill = model_class(*args, **kwargs)
        if evidence is not None:
            drill.evidence.save("drill-log.txt", ContentFile(evidence), save=False)
        pairs = (
            observed
            if observed is not None
            else list(drill.version.checksums.values_list("node", "checksum"))
        )
        return backup_services.record_drill(drill, observed_pairs=pairs)

    @classmethod
    def _build(cls, model_class, *args, observed=None, evidence=None, **kwargs):
        return model_class(*args, **kwargs)
