"""A week of Slurm jobs and the telemetry of their nodes, with every figure computed by
hand below (the efficiency tests, the page, the export and the delivery read it).

Week of Monday 2026-11-30, UTC. Pool "Hopper A100" (node gpu01, 2 GPUs, hostname
``gpu01.hpc.local``) and pool "Hopper spare" (node gpu02, 1 GPU, hostname ``gpu02``).

Job 500 (alice, team Vision, 2 GPUs on gpu01, 10:30–12:30 on the Monday):
- 10:00 hour: 0.5 h × 2 GPUs = 1 GPU-h; raw samples: GPU 1 at 50 % and 30 % (mean 40 %),
  GPU 2 at 0 % (a stored 90 % device-hour of GPU 2 is ignored: raw samples hold it).
  Each GPU holds 0.5 GPU-h: busy 0.5 × 0.40 + 0.5 × 0 = 0.2; idle 0.8.
- 11:00 hour: 2 GPU-h; stored device-hours: GPU 1 at 100 % (60 samples); GPU 2 in two
  pods, 20 % over 30 samples and 80 % over 10: (20 × 30 + 80 × 10) ÷ 40 = 35 %.
  Busy 1 × 1.00 + 1 × 0.35 = 1.35; idle 0.65.
- 12:00 hour: 1 GPU-h, no telemetry: unmeasured.
Allocated 4, measured 3, busy 1.55, idle 1.45, unmeasured 1; idle cost 1.45 × A's price.

Job 501_2 (bob, no team, 1 GPU on gpu02, Sunday 23:00 to Monday 01:00): inside the week
1 GPU-h (23:00 hour), raw samples 0.4 % and 0.6 % (0.5 %): busy 0.005, idle 0.995, idle
cost 0.995 × the spare pool's price. It stayed under 1 %.

Job 502 (alice, team Vision, 1 GPU on gpu09, which reports nothing, Tuesday 08:00–09:00):
allocated 1, unmeasured 1.

Job 503 (carol, 0 GPUs) adds nothing; job 504 (dave) ran the week before.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace

from apps.slurm.models import SlurmImport, SlurmJob
from apps.telemetry.models import GpuDeviceHour, GpuSample
from tests.factories import ClusterFactory, GpuDeviceFactory, PoolFactory, TeamFactory

WEEK_START = datetime(2026, 11, 30, tzinfo=UTC)
WEEK_END = datetime(2026, 12, 7, tzinfo=UTC)


def at(day, hour, minute=0):
    return (
        datetime(2026, 11, day, hour, minute, tzinfo=UTC)
        if day > 7
        else datetime(2026, 12, day, hour, minute, tzinfo=UTC)
    )


def make_job(cluster, record, job_id, *, user, gpus, nodes, start, end, team=None):
    elapsed = Decimal(int((end - start).total_seconds()))
    return SlurmJob.objects.create(
        cluster=cluster,
        job_id=job_id,
        user=user,
        account="physics",
        state="COMPLETED",
        state_raw="COMPLETED",
        start=start,
        end=end,
        elapsed_seconds=elapsed,
        gpus=gpus,
        gpu_hours=Decimal(gpus) * elapsed / 3600,
        nodes=len(nodes),
        node_list=",".join(nodes),
        node_names=nodes,
        team=team,
        fields={"JobID": job_id},
        first_imported_at=start,
        last_import=record,
    )


def build_week():
    cluster = ClusterFactory(name="Hopper", slug="hopper")
    pool_a = PoolFactory(name="Hopper A100", cluster=cluster)
    spare = PoolFactory(
        name="Hopper spare", cluster=cluster, on_demand_price_per_gpu_hour_usd=Decimal("4.00")
    )
    first = GpuDeviceFactory(hostname="gpu01.hpc.local", gpu_index=0, pool=pool_a)
    second = GpuDeviceFactory(hostname="gpu01.hpc.local", gpu_index=1, pool=pool_a)
    third = GpuDeviceFactory(hostname="gpu02", gpu_index=0, pool=spare)
    GpuSample.objects.bulk_create(
        [
            GpuSample(device=first, timestamp=at(30, 10, 10), utilization_pct=50),
            GpuSample(device=first, timestamp=at(30, 10, 40), utilization_pct=30),
            GpuSample(device=second, timestamp=at(30, 10, 20), utilization_pct=0),
            GpuSample(device=third, timestamp=at(6, 23, 10), utilization_pct=0.4),
            GpuSample(device=third, timestamp=at(6, 23, 40), utilization_pct=0.6),
        ]
    )

    def stored(device, hour, pct, samples, pod=""):
        return GpuDeviceHour(
            device=device,
            hour=hour,
            pod=pod,
            samples=samples,
            utilization_pct=pct,
            pulled_at=hour,
        )

    GpuDeviceHour.objects.bulk_create(
        [
            stored(second, at(30, 10), 90, 60),
            stored(first, at(30, 11), 100, 60),
            stored(second, at(30, 11), 20, 30, pod="a"),
            stored(second, at(30, 11), 80, 10, pod="b"),
        ]
    )
    vision = TeamFactory(name="Vision")
    record = SlurmImport.objects.create(
        cluster=cluster, imported_at=WEEK_END, source=SlurmImport.Source.COMMAND
    )
    jobs = [
        ("500", "alice", 2, "gpu01", at(30, 10, 30), at(30, 12, 30), vision),
        ("501_2", "bob", 1, "gpu02", at(6, 23), at(7, 1), None),
        ("502", "alice", 1, "gpu09", at(1, 8), at(1, 9), vision),
        ("503", "carol", 0, "gpu01", at(1, 8), at(1, 9), None),
        ("504", "dave", 4, "gpu01", at(23, 8), at(23, 9), None),
    ]
    for job_id, user, gpus, node, start, end, team in jobs:
        make_job(
            cluster, record, job_id, user=user, gpus=gpus, nodes=[node], start=start, end=end,
            team=team,
        )  # fmt: skip
    pool_a.refresh_from_db()
    spare.refresh_from_db()
    return {
        "cluster": cluster,
        "team": vision,
        "price_a": pool_a.effective_price_per_gpu_hour_usd,
        "price_spare": spare.effective_price_per_gpu_hour_usd,
    }


HOUR = datetime(2026, 11, 30, 10, tzinfo=UTC)


def build_two_clusters() -> SimpleNamespace:
    """Clusters Hopper and Ampere each have a node ``gpu01``, a pool with its GPU, and a
    Slurm user ``alice``; a GPU of no pool also reports as ``gpu01``; cluster Volta has no
    pool. In the hour 2026-11-30 10:00 UTC, raw samples: Hopper's GPU 60 %, Ampere's 10 %,
    the GPU of no pool 100 %.

    - Hopper job 1 (alice, team Vision, 1 GPU, 10:00–11:00): allocated 1; its reporting GPU
      is Hopper's only: busy 0.6, idle 0.4, idle cost 0.4 × Hopper's price.
    - Ampere job 1 (alice, team Vision, 2 GPUs, 10:00–10:30): allocated 2 × 0.5 = 1; busy
      1 × 0.10 = 0.1, idle 0.9, idle cost 0.9 × Ampere's price.
    - Ampere job 2 (bob, no team, 1 GPU, 10:00–11:00): allocated 1, busy 0.1, idle 0.9, idle
      cost 0.9 × Ampere's price.
    - Volta job 1 (carol, 1 GPU, 10:00–11:00): no GPU of a Volta pool reports, and the GPU of
      no pool is not joined: allocated 1, unmeasured 1.

    Had the GPU of no pool been joined, Hopper's job 1 would read (60 + 100) ÷ 2 = 80 % busy.
    """
    half_past, eleven = HOUR + timedelta(minutes=30), HOUR + timedelta(hours=1)
    hopper = ClusterFactory(name="Hopper", slug="hopper")
    ampere = ClusterFactory(name="Ampere", slug="ampere")
    volta = ClusterFactory(name="Volta", slug="volta")
    hopper_pool = PoolFactory(
        name="Hopper nodes", cluster=hopper, on_demand_price_per_gpu_hour_usd=Decimal("3.00")
    )
    ampere_pool = PoolFactory(
        name="Ampere nodes", cluster=ampere, on_demand_price_per_gpu_hour_usd=Decimal("1.50")
    )
    on_hopper = GpuDeviceFactory(hostname="gpu01", gpu_index=0, pool=hopper_pool)
    on_ampere = GpuDeviceFactory(hostname="gpu01.ampere.local", gpu_index=0, pool=ampere_pool)
    of_no_pool = GpuDeviceFactory(hostname="gpu01", gpu_index=1, pool=None)
    GpuSample.objects.bulk_create(
        [
            GpuSample(device=on_hopper, timestamp=HOUR, utilization_pct=60),
            GpuSample(device=on_ampere, timestamp=HOUR, utilization_pct=10),
            GpuSample(device=of_no_pool, timestamp=HOUR, utilization_pct=100),
        ]
    )
    vision = TeamFactory(name="Vision")
    jobs = [
        (hopper, "1", "alice", 1, eleven, vision),
        (ampere, "1", "alice", 2, half_past, vision),
        (ampere, "2", "bob", 1, eleven, None),
        (volta, "1", "carol", 1, eleven, None),
    ]
    for cluster, job_id, user, gpus, end, team in jobs:
        record = SlurmImport.objects.create(
            cluster=cluster, imported_at=WEEK_END, source=SlurmImport.Source.COMMAND
        )
        make_job(
            cluster, record, job_id, user=user, gpus=gpus, nodes=["gpu01"], start=HOUR, end=end,
            team=team,
        )  # fmt: skip
    hopper_pool.refresh_from_db()
    ampere_pool.refresh_from_db()
    return SimpleNamespace(
        hopper=hopper,
        ampere=ampere,
        volta=volta,
        hopper_pool=hopper_pool,
        ampere_pool=ampere_pool,
        team=vision,
        hopper_price=hopper_pool.effective_price_per_gpu_hour_usd,
        ampere_price=ampere_pool.effective_price_per_gpu_hour_usd,
    )
