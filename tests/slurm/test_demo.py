"""The demo's Slurm cluster (apps/slurm/demo.py): its jobs came in through the importer,
and the jobs page and the efficiency page show them with the figures their sacct rows and
their nodes' GPUs give, each recomputed here by hand from the stored rows."""

from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.db.models import Min, Sum
from django.urls import reverse

from apps.clusters.models import Cluster
from apps.pools.models import PoolPricePeriod
from apps.slurm.models import SlurmImport, SlurmJob
from apps.telemetry.models import GpuDeviceHour, PoolHourlyUsage

pytestmark = pytest.mark.django_db

CLUSTER = "campus-slurm"
POOL = "mixed-a100-onprem"
# sacct prints the cluster's local times without an offset.
LOCAL = ZoneInfo("Asia/Shanghai")
MICRO = Decimal("0.000001")
CENT = Decimal("0.01")


def _local(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=LOCAL)


def _gpus(alloc_tres: str) -> int:
    """The untyped ``gres/gpu=N`` of an AllocTRES column."""
    return int(dict(item.split("=") for item in alloc_tres.split(","))["gres/gpu"])


def _by_hand(job, start: datetime, end: datetime, price_usd: Decimal) -> dict:
    """Allocated, busy, idle GPU-hours and idle cost of ``job`` inside [start, end), from
    its sacct columns and the device-hours of its nodes' GPUs: each hour's allocation
    shared equally by the GPUs of its nodes that report, each busy at its utilisation."""
    gpus = _gpus(job.fields["AllocTRES"])
    begin = max(_local(job.fields["Start"]), start)
    stop = min(_local(job.fields["End"]), end)
    allocated = busy = idle_cost = Decimal(0)
    hour = begin.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    while hour < stop:
        seconds = (min(stop, hour + timedelta(hours=1)) - max(begin, hour)).total_seconds()
        hour_allocated = Decimal(gpus) * Decimal(int(seconds)) / 3600
        utilisations = [
            Decimal(str(pct))
            for pct in GpuDeviceHour.objects.filter(
                device__hostname__in=job.node_names, hour=hour, utilization_pct__isnull=False
            ).values_list("utilization_pct", flat=True)
        ]
        assert utilisations, f"{job.job_id}: no GPU of its nodes reports at {hour}"
        share = hour_allocated / len(utilisations)
        allocated += hour_allocated
        busy += sum(share * pct / 100 for pct in utilisations)
        idle_cost += sum(share * (1 - pct / 100) * price_usd for pct in utilisations)
        hour += timedelta(hours=1)
    return {
        "allocated_gpu_hours": allocated.quantize(MICRO, ROUND_HALF_UP),
        "busy_gpu_hours": busy.quantize(MICRO, ROUND_HALF_UP),
        "idle_gpu_hours": (allocated - busy).quantize(MICRO, ROUND_HALF_UP),
        "unmeasured_gpu_hours": Decimal(0),
        "idle_cost_usd": idle_cost.quantize(CENT, ROUND_HALF_UP),
    }


def _signed_in(client, username):
    client.force_login(get_user_model().objects.get(username=username))
    return client


def _first_hour():
    """The first hour of the demo's history: its GPUs report from then on."""
    return PoolHourlyUsage.objects.filter(pool__slug=POOL).aggregate(Min("hour"))["hour__min"]


def _week_of(moment: datetime) -> datetime:
    day = moment.astimezone(UTC).date()
    monday = day - timedelta(days=day.weekday())
    return datetime(monday.year, monday.month, monday.day, tzinfo=UTC)


def test_the_demo_cluster_owns_the_shared_pool_and_its_jobs_came_through_imports(demo):
    cluster = Cluster.objects.get(slug=CLUSTER)
    assert (cluster.kind, cluster.timezone) == ("slurm", "Asia/Shanghai")
    assert list(cluster.pools.values_list("slug", flat=True)) == [POOL]
    assert list(cluster.pools.get().hostname_rules.values_list("hostname_pattern", flat=True)) == [
        "hz-a100-*"
    ]

    jobs = SlurmJob.objects.filter(cluster=cluster)
    imports = SlurmImport.objects.filter(cluster=cluster)
    # The history up to a week ago in one import, then one a day: every line read.
    assert imports.count() >= 8
    assert imports.aggregate(Sum("accepted"))["accepted__sum"] == jobs.count() > 100
    assert imports.aggregate(Sum("rejected"))["rejected__sum"] == 0
    states = Counter(jobs.values_list("state", flat=True))
    assert {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED"} <= set(states)
    assert states["RUNNING"] >= 1  # the re-ranker never stops

    # The jobs span the demo's history: from its first hour to the current one.
    assert jobs.aggregate(Min("start"))["start__min"] <= _first_hour()
    assert jobs.filter(start__gte=_first_hour() + timedelta(days=27)).exists()
    # Each account's jobs count for its workload; the ad-hoc evaluations for none.
    accounts = set(jobs.values_list("account", "workload__slug").distinct())
    assert accounts == {
        ("support-llm", "mistral-7b-lora-support"),
        ("stores-batch", "nightly-batch-summaries"),
        ("search", "search-rerank-online"),
        ("ml-research", None),
    }


def test_the_jobs_page_shows_a_node_failure_its_gpu_hours_and_its_interruption(demo, client):
    client = _signed_in(client, "lead")
    job = SlurmJob.objects.filter(cluster__slug=CLUSTER, state="NODE_FAIL").earliest("start")
    # GPUs × elapsed seconds ÷ 3600 from the sacct line as printed.
    gpus, seconds = _gpus(job.fields["AllocTRES"]), int(job.fields["ElapsedRaw"])
    gpu_hours = (Decimal(gpus * seconds) / 3600).quantize(MICRO, ROUND_HALF_UP)
    assert gpus == 8 and job.gpu_hours == gpu_hours

    page = client.get(reverse("slurm:job_list"), {"cluster": CLUSTER, "state": "NODE_FAIL"})
    html = page.content.decode()
    assert page.status_code == 200 and job.job_id in html
    assert f"{float(gpu_hours):,.2f}" in html
    assert "Mistral-7B LoRA (support tickets)" in html

    # The node failure is an interruption of the training workload at the job's end; with
    # no checkpoint event in the job, the work since its start is lost.
    interruption = job.interruption
    assert interruption.workload.slug == "mistral-7b-lora-support"
    assert interruption.cause == "hardware"
    assert interruption.occurred_at == _local(job.fields["End"])
    assert interruption.last_checkpoint_at == _local(job.fields["Start"])
    preempted = SlurmJob.objects.filter(cluster__slug=CLUSTER, state="PREEMPTED").first()
    assert preempted.interruption.cause == "preemption"


def test_the_efficiency_page_shows_the_jobs_allocated_busy_and_idle_gpu_hours(demo, client):
    client = _signed_in(client, "finance")
    pool = Cluster.objects.get(slug=CLUSTER).pools.get()
    # The pool has no price periods: every hour is priced at its effective price.
    assert not PoolPricePeriod.objects.filter(pool=pool).exists()
    price_usd = pool.effective_price_per_gpu_hour_usd
    assert pool.currency in ("", "USD")

    jobs = SlurmJob.objects.filter(cluster__slug=CLUSTER, start__gte=_first_hour())
    failed = jobs.filter(state="NODE_FAIL").earliest("start")
    start = _week_of(failed.start)
    end = start + timedelta(days=7)
    page = client.get(
        reverse("slurm:efficiency"),
        {"week": start.date().isoformat(), "cluster": CLUSTER, "group": "job"},
    )
    assert page.status_code == 200
    rows = {row["name"]: row for row in page.context["rows"]}
    expected = _by_hand(failed, start, end, price_usd)
    assert {name: rows[failed.job_id][name] for name in expected} == expected
    # Training keeps its GPUs busy.
    assert rows[failed.job_id]["busy_ratio"] > Decimal("0.5")
    # The nightly batch spans two nodes: each hour's GPUs are both nodes' sixteen.
    batch = (
        jobs.filter(job_name="summaries-nightly", start__gte=start)
        .exclude(state="RUNNING")
        .earliest("start")
    )
    assert batch.node_names == ["hz-a100-02", "hz-a100-03"]
    expected = _by_hand(batch, start, end, price_usd)
    assert {name: rows[batch.job_id][name] for name in expected} == expected


def test_a_notebook_left_running_over_the_weekend_stayed_under_1_percent(demo, client):
    client = _signed_in(client, "lead")
    forgotten = SlurmJob.objects.filter(
        cluster__slug=CLUSTER,
        job_name="jupyter",
        state="TIMEOUT",
        elapsed_seconds=60 * 3600,
        start__gte=_first_hour(),
    ).earliest("start")
    start = _week_of(forgotten.start)
    page = client.get(
        reverse("slurm:efficiency"), {"week": start.date().isoformat(), "cluster": CLUSTER}
    )
    unused = {job["job_id"]: job for job in page.context["unused"]}
    # From Friday evening to its time limit (or the UTC week's end): 2 GPUs × its hours
    # in the week, all idle.
    until = min(_local(forgotten.fields["End"]), start + timedelta(days=7))
    in_week = until - _local(forgotten.fields["Start"])
    gpu_hours = (2 * Decimal(int(in_week.total_seconds())) / 3600).quantize(MICRO, ROUND_HALF_UP)
    assert unused[forgotten.job_id]["measured_gpu_hours"] == gpu_hours
    assert unused[forgotten.job_id]["busy_gpu_hours"] == 0
    assert forgotten.job_id in page.content.decode()
