"""MIG slices are parts of one GPU: the rollup, the flags and the cost report against hand
computations.

The scrapes are written in dcgm-exporter's text format with the labels it gives MIG slices
(``GPU_I_PROFILE``, ``GPU_I_ID``, as in the real line of Princeton's A100 80GB PCIe in
tests/data/dcgm-exporter/mig/princeton_della_A100_MIG_line.prom, see SOURCES.md): one
line per whole GPU (``DCGM_FI_DEV_GPU_UTIL``, %) and one per slice
(``DCGM_FI_PROF_GR_ENGINE_ACTIVE``, a 0–1 ratio; slices have no GPU_UTIL). The values are
chosen so that each figure can be computed by hand in the test.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse

from apps.catalog.models import GpuModel
from apps.pools.models import Deployment, Pool, Purpose, Workload, WorkloadKind
from apps.pools.services import save_pool
from apps.reports.cost.report import cost_report
from apps.telemetry.ingest.parsers import parse_dcgm
from apps.telemetry.ingest.storage import import_gpu_samples
from apps.telemetry.mig import compute_slices_of_profile
from apps.telemetry.models import GpuDevice, PoolHourFlag, PoolHourlyUsage, WorkloadHourlyUsage
from apps.telemetry.rollups import hourly
from tests.factories import SERVICE_START

DATA = Path(__file__).resolve().parent.parent / "data"
HOUR = datetime(2026, 11, 20, 10, tzinfo=UTC)
# Two scrapes inside the hour; a device's hourly utilisation is the mean of its two.
SCRAPES = (HOUR + timedelta(minutes=5), HOUR + timedelta(minutes=35))
PRICE = Decimal("2.49")


def _uuid(gpu: int) -> str:
    return f"GPU-00000000-0000-0000-0000-00000000000{gpu}"


def whole_line(gpu: int, utilization_pct: float, model="NVIDIA H100 80GB HBM3") -> str:
    return (
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{gpu}",UUID="{_uuid(gpu)}",device="nvidia{gpu}",'
        f'modelName="{model}",Hostname="mig-node-1",DCGM_FI_DRIVER_VERSION="580.105.08"}} '
        f"{utilization_pct}"
    )


def slice_line(gpu, instance, profile, active_ratio, pod="", model="NVIDIA H100 80GB HBM3"):
    return (
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="{gpu}",UUID="{_uuid(gpu)}",device="nvidia{gpu}",'
        f'modelName="{model}",GPU_I_PROFILE="{profile}",GPU_I_ID="{instance}",'
        f'Hostname="mig-node-1",DCGM_FI_DRIVER_VERSION="580.105.08",container="main",'
        f'namespace="ml",pod="{pod}"}} {active_ratio}'
    )


def make_pool(slug: str, gpu_model: str, gpu_count: int, gpus_per_node: int = 8) -> Pool:
    pool = Pool(
        name=slug,
        slug=slug,
        purpose=Purpose.INFERENCE,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=GpuModel.objects.get(slug=gpu_model),
        gpu_count=gpu_count,
        gpus_per_node=gpus_per_node,
        on_demand_price_per_gpu_hour_usd=PRICE,
        in_service_from=SERVICE_START,
    )
    save_pool(pool)
    return pool


def import_and_roll_up(pool: Pool, scrapes: list[list[str]]) -> PoolHourlyUsage:
    """Each scrape's lines at its own time, imported into the pool, then the hour rolled up."""
    for scraped_at, lines in zip(SCRAPES, scrapes, strict=True):
        result = parse_dcgm("\n".join(lines) + "\n", scraped_at=scraped_at, now=scraped_at)
        assert not result.errors, result.errors
        import_gpu_samples(result, pool=pool, received_at=scraped_at)
    hourly.rollup_pool_hours(pool.pk, HOUR, HOUR + timedelta(hours=1))
    return PoolHourlyUsage.objects.get(pool=pool, hour=HOUR)


def flags_of(pool) -> dict[str, PoolHourFlag]:
    return {flag.kind: flag for flag in PoolHourFlag.objects.filter(pool=pool, hour=HOUR)}


@pytest.mark.parametrize(
    ("profile", "slices"),
    [("1g.10gb", 1), ("3g.40gb", 3), ("7g.80gb", 7), ("1g.10gb+me", 1), ("1c.3g.40gb", 3)],
)
def test_compute_slices_of_a_profile(profile, slices):
    # NVIDIA MIG user guide: "Ng" is the GPU instance's compute slices; "+me" adds media
    # engines; "1c.3g.40gb" is a compute instance of one slice inside a 3g GPU instance.
    assert compute_slices_of_profile(profile) == slices


def test_the_real_mig_line_is_read_as_a_slice():
    text = (DATA / "dcgm-exporter/mig/princeton_della_A100_MIG_line.prom").read_text()
    result = parse_dcgm(text, scraped_at=HOUR, now=HOUR)
    assert not result.errors
    [row] = result.rows
    assert (row.device.uuid, row.device.gpu_instance_id) == (
        "GPU-d6dd33b9-e50e-997c-f303-c8f7312fa498",
        7,
    )
    assert row.mig_profile == "1g.10gb"
    assert row.memory_used_mib == 8543
    assert row.utilization_pct is None  # a slice has no GPU_UTIL, and this line has no activity


@pytest.mark.django_db
def test_whole_gpu_and_seven_slices_count_as_one_gpu(catalog):
    """8 × H100; GPU 7 is split into 7 × 1g.10gb. Its whole-GPU line says 70 %, which the
    rollup must not add on top of the slices (the issue's 15 reporting GPUs)."""
    pool = make_pool("mig-h100", "h100-sxm", 8)
    whole = [40.0, 60.0, 20.0, 80.0, 50.0, 30.0, 10.0]  # GPUs 0–6, the same in both scrapes
    # Slice activity per scrape: the hourly mean of slice j is (first + second) / 2.
    first = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]
    second = [0.7, 0.8, 0.9, 0.2, 0.1, 0.0, 0.3]
    scrapes = []
    for ratios in (first, second):
        lines = [whole_line(gpu, whole[gpu]) for gpu in range(7)]
        lines.append(whole_line(7, 70.0))
        lines += [slice_line(7, j + 1, "1g.10gb", ratios[j]) for j in range(7)]
        scrapes.append(lines)
    usage = import_and_roll_up(pool, scrapes)

    slice_means = [(a + b) / 2 for a, b in zip(first, second, strict=True)]
    # By hand: 2.9 GPU-h from GPUs 0–6, and GPU 7 = Σ slice activity × 1/7.
    busy_by_hand = sum(whole) / 100 + sum(slice_means) / 7
    assert busy_by_hand == pytest.approx(2.9 + 7.2 / 2 / 7)
    assert usage.reporting_gpus == 8
    assert usage.capacity_gpu_hours == 8
    assert usage.busy_gpu_hours == pytest.approx(busy_by_hand)
    assert usage.avg_utilization_pct == pytest.approx(100 * busy_by_hand / 8)
    assert usage.max_utilization_pct == pytest.approx(80.0)
    # The whole-GPU line is ignored and the hour says so.
    flag = flags_of(pool)[PoolHourFlag.Kind.MIG_CONFLICT]
    assert flag.gpus == 1
    assert "not added again" in flag.detail
    assert PoolHourFlag.Kind.OVER_REPORTED not in flags_of(pool)

    # The cost report agrees: cost = 8 GPUs × 1 h × $2.49; idle = cost × (1 − busy ÷ 8).
    [row] = cost_report(HOUR, HOUR + timedelta(hours=1), pool_slug=pool.slug)
    cost = 8 * 1 * PRICE
    assert row.cost_usd == cost
    assert row.utilization_pct == pytest.approx(100 * busy_by_hand / 8)
    assert float(row.idle_cost_usd) == pytest.approx(float(cost) * (1 - busy_by_hand / 8))


@pytest.mark.django_db
def test_a_3g_2g_1g_1g_mix_without_a_whole_gpu_line(catalog):
    pool = make_pool("mig-mix", "h100-sxm", 8)
    profiles = {1: "3g.40gb", 2: "2g.20gb", 3: "1g.10gb", 4: "1g.10gb"}
    activity = {1: (1.0, 0.5), 2: (0.4, 0.4), 3: (0.0, 1.0), 4: (0.2, 0.0)}
    scrapes = [
        [
            slice_line(0, instance, profiles[instance], activity[instance][k])
            for instance in profiles
        ]
        for k in (0, 1)
    ]
    usage = import_and_roll_up(pool, scrapes)
    # By hand: (3 × 0.75 + 2 × 0.4 + 1 × 0.5 + 1 × 0.1) ÷ 7 = 3.65 ÷ 7 of one GPU.
    busy_by_hand = (3 * 0.75 + 2 * 0.4 + 1 * 0.5 + 1 * 0.1) / 7
    assert usage.reporting_gpus == 1
    assert usage.busy_gpu_hours == pytest.approx(busy_by_hand)
    assert usage.max_utilization_pct == pytest.approx(100 * busy_by_hand)
    assert flags_of(pool) == {}
    devices = GpuDevice.objects.filter(pool=pool).order_by("gpu_instance_id")
    assert [device.mig_compute_slices for device in devices] == [3, 2, 1, 1]


@pytest.mark.django_db
def test_an_a30_divides_into_four_slices(catalog):
    pool = make_pool("mig-a30", "a30", 4, gpus_per_node=4)
    model = "NVIDIA A30"
    scrapes = [
        [slice_line(0, j + 1, "1g.6gb", ratio, model=model) for j, ratio in enumerate(ratios)]
        + [whole_line(gpu, 50.0, model=model) for gpu in (1, 2, 3)]
        for ratios in ((1.0, 1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    ]
    usage = import_and_roll_up(pool, scrapes)
    # By hand: GPU 0 = (1.0 + 0.5 + 0 + 0) × 1/4 = 0.375 (NVIDIA: A30 has 4 compute slices);
    # GPUs 1–3 at 50 % = 1.5.
    assert usage.reporting_gpus == 4
    assert usage.busy_gpu_hours == pytest.approx(0.375 + 1.5)


@pytest.mark.django_db
def test_more_gpus_than_declared_is_flagged_and_never_above_capacity(catalog, client, make_user):
    pool = make_pool("over-reported", "h100-sxm", 8)
    scrapes = [[whole_line(gpu, 100.0) for gpu in range(9)]] * 2
    usage = import_and_roll_up(pool, scrapes)
    assert usage.reporting_gpus == 9  # what the source said, shown as 9 of 8 with the flag
    assert usage.busy_gpu_hours == pytest.approx(8.0)  # never above the 8 GPU-h paid
    assert usage.avg_utilization_pct <= 100
    flag = flags_of(pool)[PoolHourFlag.Kind.OVER_REPORTED]
    assert flag.gpus == 9
    assert "9 GPUs reported in a pool of 8" in flag.detail
    [row] = cost_report(HOUR, HOUR + timedelta(hours=1), pool_slug=pool.slug)
    assert row.utilization_pct == pytest.approx(100.0)
    assert row.idle_cost_usd == pytest.approx(0.0)
    # The hourly API shows the coverage the source claimed: 9 ÷ 8 = 112.5 %, with the flag.
    client.force_login(make_user("reader"))
    [hourly] = client.get(reverse("api-usage-hourly"), {"pool": pool.slug}).json()
    assert hourly["coverage_pct"] == pytest.approx(112.5)
    [pool_day] = client.get(reverse("api-reconciliation"), {"pool": pool.slug}).json()["results"]
    assert pool_day["flags"][0]["kind"] == "over_reported"


@pytest.mark.django_db
def test_slices_above_the_whole_gpu_are_counted_as_one_and_flagged(catalog):
    """Seven 2g slices cannot exist on a 7-slice GPU: a wrong profile or catalog entry."""
    pool = make_pool("over-busy", "h100-sxm", 8)
    scrapes = [[slice_line(0, j + 1, "2g.20gb", 1.0) for j in range(7)]] * 2
    usage = import_and_roll_up(pool, scrapes)
    assert usage.busy_gpu_hours == pytest.approx(1.0)
    flag = flags_of(pool)[PoolHourFlag.Kind.OVER_BUSY]
    assert "200.0 %" in flag.detail  # 7 × 2 ÷ 7


@pytest.mark.django_db
def test_slices_are_attributed_to_their_own_workloads(catalog):
    """A 3g slice serves chat, a 4g one batch: the workloads get 3/7 and 4/7 of the GPU."""
    pool = make_pool("mig-shared", "h100-sxm", 8)
    chat = Workload.objects.create(
        name="Chat",
        slug="chat",
        kind=WorkloadKind.ONLINE_INFERENCE,
        pool=pool,
        gpu_count=1,
        pod_name_prefix="chat-",
    )
    batch = Workload.objects.create(
        name="Batch",
        slug="batch",
        kind=WorkloadKind.BATCH_INFERENCE,
        pool=pool,
        gpu_count=1,
        pod_name_prefix="batch-",
    )
    scrapes = [
        [
            whole_line(0, 90.0),  # not added again: the slices report
            slice_line(0, 1, "3g.40gb", 0.6, pod="chat-7d9f"),
            slice_line(0, 2, "4g.40gb", 0.2, pod="batch-x1"),
        ]
    ] * 2
    import_and_roll_up(pool, scrapes)
    attributed = {row.workload_id: row for row in WorkloadHourlyUsage.objects.filter(hour=HOUR)}
    assert attributed[chat.id].allocated_gpu_hours == pytest.approx(3 / 7)
    assert attributed[chat.id].busy_gpu_hours == pytest.approx(0.6 * 3 / 7)
    assert attributed[batch.id].allocated_gpu_hours == pytest.approx(4 / 7)
    assert attributed[batch.id].busy_gpu_hours == pytest.approx(0.2 * 4 / 7)


@pytest.mark.django_db
def test_hours_rolled_up_before_mig_counting_are_flagged_by_the_migration(catalog):
    """A stored hour from before: 15 "reporting GPUs" and 8.3 busy GPU-h in an 8-GPU pool."""
    from importlib import import_module

    from django.apps import apps as django_apps

    migration = import_module("apps.telemetry.migrations.0007_flag_hours_over_capacity")
    pool = make_pool("legacy", "h100-sxm", 8)
    PoolHourlyUsage.objects.create(
        pool=pool, hour=HOUR, reporting_gpus=15, capacity_gpu_hours=8, busy_gpu_hours=8.3
    )
    PoolHourlyUsage.objects.create(
        pool=pool,
        hour=HOUR + timedelta(hours=1),
        reporting_gpus=8,
        capacity_gpu_hours=8,
        busy_gpu_hours=4.1,
    )
    migration.flag_hours_over_capacity(django_apps, None)
    [flag] = PoolHourFlag.objects.filter(pool=pool)
    assert (flag.hour, flag.kind, flag.gpus) == (HOUR, "over_reported", 15)
    assert "8.30 busy GPU-h in a pool of 8" in flag.detail
    # The stored figures are kept as they were: only flagged.
    assert PoolHourlyUsage.objects.get(pool=pool, hour=HOUR).busy_gpu_hours == 8.3


@pytest.mark.django_db
@pytest.mark.parametrize(
    "capture",
    [
        "linux-x86_64__nvidia-h100-mig__590.48.01__load.csv",
        "linux-x86_64__nvidia-h200-mig__590.48.01__load.csv",
    ],
)
def test_nvidia_smi_under_mig_is_not_measurable_never_zero(catalog, capture):
    """Real captures of a GPU in MIG mode: utilization.gpu is [N/A]. The hour has the GPU's
    memory but no reporting GPU and no busy time, and says why."""
    from django.core.management import call_command

    pool = make_pool(f"smi-{capture[22:26]}", "h100-sxm", 8)
    path = DATA / "nvidia-smi/query_gpu_csv" / capture
    call_command("import_telemetry", str(path), "--format", "nvidia-smi", "--pool", pool.slug)
    device = GpuDevice.objects.get(pool=pool)
    assert device.mig_mode_enabled
    assert not device.samples.filter(utilization_pct__isnull=False).exists()
    sample_hour = device.samples.get().timestamp.replace(minute=0, second=0, microsecond=0)
    hourly.rollup_pool_hours(pool.pk, sample_hour, sample_hour + timedelta(hours=1))
    usage = PoolHourlyUsage.objects.get(pool=pool, hour=sample_hour)
    assert usage.reporting_gpus == 0
    assert usage.busy_gpu_hours == 0
    assert usage.avg_utilization_pct is None  # not measured, rather than 0 %
    flag = PoolHourFlag.objects.get(pool=pool, hour=sample_hour)
    assert flag.kind == PoolHourFlag.Kind.MIG_UNMEASURABLE
    assert "nvidia-smi cannot measure" in flag.detail
    # Unmeasured in the cost report: charged, never counted as idle.
    [row] = cost_report(sample_hour, sample_hour + timedelta(hours=1), pool_slug=pool.slug)
    assert row.unmeasured_gpu_hours == 8
    assert row.idle_cost_usd == 0
