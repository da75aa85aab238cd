"""Slurm jobs split a shared pool's cost: each job's nodes join pools through the hostname
rules, its GPUs × the seconds it ran in each hour ÷ 3600 go to its mapped workload (or to
unattributed), ahead of declared shares, never more than the pool's GPU-hours. Every
figure is computed by hand in the test."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from apps.pools.models import Purpose, WorkloadKind, WorkloadStatus
from apps.reports.cost import explain, periods
from apps.reports.cost.report import cost_report
from apps.showback.periods import close_month
from apps.slurm.mapping import remap_jobs
from apps.slurm.models import SlurmJob, SlurmMappingRule
from apps.slurm.nodes import hostname_rules_by_cluster, job_pool_gpus
from apps.slurm.services import import_sacct
from apps.telemetry.models import HostnameRule
from tests.factories import (
    ClusterFactory,
    PoolFactory,
    UserFactory,
    WorkloadFactory,
    status_history,
)

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 9, tzinfo=UTC)
LONG_AGO = START - timedelta(days=30)
HEADER = "JobID|User|Account|State|Start|End|Elapsed|NNodes|NodeList|AllocTRES"
NOW = datetime(2026, 3, 20, tzinfo=UTC)


def _line(job_id, account, start, end, nodes, gpus, state="COMPLETED"):
    count = len(nodes.split(","))
    elapsed = int((end - start).total_seconds())
    return (
        f"{job_id}|u|{account}|{state}|{start:%Y-%m-%dT%H:%M:%S}|{end:%Y-%m-%dT%H:%M:%S}|"
        f"{elapsed // 3600:02d}:{elapsed % 3600 // 60:02d}:{elapsed % 60:02d}|{count}|{nodes}|"
        f"gres/gpu={gpus}"
    )


@pytest.fixture
def fleet():
    cluster = ClusterFactory(slug="hopper", timezone="UTC")
    pool = PoolFactory(
        name="shared",
        slug="shared",
        cluster=cluster,
        purpose=Purpose.INFERENCE,
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
        in_service_from=LONG_AGO,
    )
    other = PoolFactory(
        name="other", slug="other", cluster=cluster, gpu_count=8, in_service_from=LONG_AGO
    )
    HostnameRule.objects.create(pool=pool, hostname_pattern="a*", priority=10)
    HostnameRule.objects.create(pool=other, hostname_pattern="b*", priority=10)

    def workload(slug, gpus, pool=pool):
        made = WorkloadFactory(
            name=slug, slug=slug, pool=pool, gpu_count=gpus, kind=WorkloadKind.ONLINE_INFERENCE
        )
        return status_history(made, (LONG_AGO, WorkloadStatus.RUNNING))

    chat, search = workload("chat", 2), workload("search", 2)
    SlurmMappingRule.objects.create(field="account", pattern="chat", workload=chat)
    SlurmMappingRule.objects.create(field="account", pattern="search", workload=search)
    return {"cluster": cluster, "pool": pool, "other": other, "chat": chat, "search": search}


def _rows(end):
    return {row.key: row for row in cost_report(START, end, "workload")}


def test_a_jobs_nodes_join_pools_through_the_hostname_rules(fleet):
    job = SlurmJob(cluster=fleet["cluster"], gpus=8, node_names=["a01", "a02", "b01", "c01"])
    pools, unplaced = job_pool_gpus(job, hostname_rules_by_cluster())
    # 8 GPUs over 4 nodes: 2 per node.
    assert pools == {fleet["pool"].pk: Decimal(4), fleet["other"].pk: Decimal(2)}
    assert unplaced == Decimal(2)
    # Another cluster's node of the same name is not in these pools.
    job.cluster = ClusterFactory()
    assert job_pool_gpus(job, hostname_rules_by_cluster())[0] == {}


def test_jobs_split_the_pools_hours_ahead_of_declared_shares(fleet):
    """Pool: 8 GPUs × $2.00, 2 h from START = $32.00, $16.00 an hour.

    Hour 1: chat's job holds 4 GPUs for 30 min = 2 GPU-h; an unmapped job 2 GPUs for the
    whole hour = 2 GPU-h. Hour 2: search's job 8 GPUs × 1 h = 8 GPU-h (the whole pool).

    Hour 1, rule 1b: chat 2/8 × $16 = $4.00; unattributed 2/8 × $16 = $4.00; rest
    $8.00 (4 GPU-h), split by the declared shares of the two running workloads (2 GPUs
    each of 8): chat $2.00, search $2.00, unallocated $4.00.
    Hour 2: search 8/8 × $16 = $16.00; nothing left for declared shares.
    Chat $6.00, search $18.00, unattributed $4.00, unallocated $4.00: $32.00. The other
    pool (no workloads, 8 GPUs × $2.99 × 2 h = $47.84) is unattributed whole."""
    text = "\n".join(
        [
            HEADER,
            _line("1", "chat", START, START + timedelta(minutes=30), "a01", 4),
            _line("2", "nobody", START, START + timedelta(hours=1), "a02", 2),
            _line("3", "search", START + timedelta(hours=1), START + timedelta(hours=2), "a01", 8),
        ]
    )
    import_sacct(fleet["cluster"], text, now=NOW)
    rows = _rows(START + timedelta(hours=2))
    hour = Decimal("16.00")
    chat = hour * 2 / 8 + (hour * 4 / 8) * 2 / 8
    search = (hour * 4 / 8) * 2 / 8 + hour
    unattributed = hour * 2 / 8
    other_pool = 8 * Decimal("2.99") * 2
    unallocated = (hour * 4 / 8) * 4 / 8
    assert (chat, search, unattributed, unallocated) == (
        Decimal("6"),
        Decimal("18"),
        Decimal("4"),
        Decimal("4"),
    )
    assert rows["chat"].cost_usd == chat
    assert rows["search"].cost_usd == search
    assert rows["unattributed"].cost_usd == unattributed + other_pool
    assert rows["unallocated"].cost_usd == unallocated
    assert sum(row.cost_usd for row in rows.values()) == Decimal("32.00") + other_pool
    assert "measured: Slurm jobs, 2 GPU-h" in rows["chat"].split_rule_text
    assert rows["chat"].capacity_gpu_hours == pytest.approx(2 + 4 * 2 / 8)
    # The explanation names the jobs' part, then the declared share, then their sum.
    jobs, declared, summed = explain.explain_figure(rows["chat"], "cost_usd")
    assert jobs.expression.startswith("measured: Slurm jobs: 2 GPU-h of jobs")
    assert jobs.value == pytest.approx(4.0)
    assert declared.value == pytest.approx(2.0) and summed.value == pytest.approx(6.0)
    unmapped = [
        step
        for step in explain.explain_figure(rows["unattributed"], "cost_usd")
        if "Slurm" in step.expression
    ]
    assert [step.value for step in unmapped] == [pytest.approx(4.0)]


def test_jobs_claiming_more_than_the_pool_are_scaled_down_and_flagged(fleet):
    """One hour: chat's job 8 GPUs, search's job 8 GPUs on the 8-GPU pool: 16 GPU-h
    claimed of 8. Each scaled by 8/16: 4 GPU-h, $16 × 4/8 = $8.00 each; nothing left."""
    text = "\n".join(
        [
            HEADER,
            _line("1", "chat", START, START + timedelta(hours=1), "a01", 8),
            _line("2", "search", START, START + timedelta(hours=1), "a02", 8),
        ]
    )
    import_sacct(fleet["cluster"], text, now=NOW)
    rows = _rows(START + timedelta(hours=1))
    assert rows["chat"].cost_usd == Decimal("8.00")
    assert rows["search"].cost_usd == Decimal("8.00")
    assert rows["chat"].split_scaled_down
    assert "scaled down" in rows["chat"].split_rule_text
    assert "unallocated" not in rows or rows["unallocated"].cost_usd == Decimal(0)


def test_a_job_on_another_pools_nodes_or_of_another_pools_workload_is_not_this_pools(fleet):
    """Chat's job on node b01 (the other pool, which has no workloads) adds nothing to
    the shared pool: the pool's hour goes by declared shares alone (2/8 each)."""
    text = "\n".join([HEADER, _line("1", "chat", START, START + timedelta(hours=1), "b01", 8)])
    import_sacct(fleet["cluster"], text, now=NOW)
    rows = _rows(START + timedelta(hours=1))
    assert rows["chat"].cost_usd == Decimal("16.00") * 2 / 8


def test_a_closed_month_does_not_move_when_rules_change(fleet):
    """February closed with chat's job mapped: re-mapping it afterwards leaves the
    month's served figures as they were frozen."""
    feb = datetime(2026, 2, 10, tzinfo=UTC)
    text = "\n".join([HEADER, _line("1", "chat", feb, feb + timedelta(hours=1), "a01", 8)])
    import_sacct(fleet["cluster"], text, now=NOW)
    month_start, month_end = datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)

    def served():
        rows = periods.cost_report(month_start, month_end, "workload")
        return {row.key: row.cost_usd for row in rows if not periods.is_adjustment(row)}

    before = served()
    assert before["chat"] > Decimal(0)
    close_month(month_start.date(), UserFactory(role="admin"), now=NOW)
    SlurmMappingRule.objects.filter(pattern="chat").update(pattern="none")
    assert remap_jobs() == 1
    assert served()["chat"] == before["chat"]


def test_a_month_closed_with_unmapped_jobs_freezes_them_as_unattributed(fleet):
    """February: an unmapped job holds 2 of the shared pool's 8 GPUs for an hour. The
    frozen month keeps its 2/8 of that hour's $16.00 = $4.00 unattributed, apart from the
    pool's unallocated rest, as the live report has them: closing moves nothing."""
    feb = datetime(2026, 2, 10, tzinfo=UTC)
    text = "\n".join([HEADER, _line("1", "nobody", feb, feb + timedelta(hours=1), "a02", 2)])
    import_sacct(fleet["cluster"], text, now=NOW)
    month_start, month_end = datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)
    live = {row.key: row for row in cost_report(month_start, month_end, "workload")}
    # The month's unattributed: the job's $4.00 and the other pool (no workloads) whole,
    # 8 GPUs × $2.99 × its hours in February (in service from LONG_AGO, the 7th: 22 days).
    assert (month_end - LONG_AGO).days == 22
    other_pool = 8 * Decimal("2.99") * 22 * 24
    assert live["unattributed"].cost_usd == Decimal("16.00") * 2 / 8 + other_pool

    closed = close_month(month_start.date(), UserFactory(role="admin"), now=NOW)
    frozen = {row.key: row for row in periods.frozen_cost_report(closed, "workload")}
    assert frozen["unattributed"].cost_usd == live["unattributed"].cost_usd
    assert frozen["unallocated"].cost_usd == live["unallocated"].cost_usd
    assert periods.adjustment_rows(closed, "workload") == []
