"""A pool's cost split among its workloads by the stated rule (apps/reports/split.py):
pod labels first, then each running workload's declared GPUs ÷ the pool's GPUs, the rest
unallocated; pools without workloads unattributed.

Every pool here is cloud on-demand at $2.00 per GPU-hour with no power term, in service
long before the range: an hour without telemetry costs GPUs × $2.00.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from apps.pools.models import Purpose, WorkloadKind, WorkloadStatus
from apps.pools.running import running_intervals
from apps.reports.cost import explain
from apps.reports.cost.report import cost_report
from apps.showback.selectors import showback
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests, WorkloadHourlyUsage
from tests.factories import PoolFactory, TeamFactory, WorkloadFactory, status_history

START = datetime(2026, 3, 9, tzinfo=UTC)
HOURS = 10
END = START + timedelta(hours=HOURS)
LONG_AGO = START - timedelta(days=30)
PRICE = Decimal("2.00")


def _pool(slug, gpus=8, **extra):
    return PoolFactory(
        name=slug,
        slug=slug,
        purpose=Purpose.INFERENCE,
        gpu_count=gpus,
        on_demand_price_per_gpu_hour_usd=PRICE,
        in_service_from=LONG_AGO,
        **extra,
    )


def _workload(slug, pool, gpus, *steps, **extra):
    workload = WorkloadFactory(
        name=slug, slug=slug, pool=pool, gpu_count=gpus, kind=WorkloadKind.ONLINE_INFERENCE, **extra
    )
    return status_history(workload, *steps) if steps else workload


def _rows(start=START, end=END, **extra):
    return {row.key: row for row in cost_report(start, end, "workload", **extra)}


def _pool_cost(slug, start=START, end=END):
    [row] = [row for row in cost_report(start, end, "pool") if row.key == slug]
    return row.cost_usd


@pytest.fixture
def shared():
    """8 GPUs: Chat declares 2 and runs throughout; Search declares 4 and starts at
    04:30; Rerank declares 2 and is planned. Chat logs 1,000 requests and 200,000 tokens
    an hour, Search 1,000 requests and 800,000 tokens an hour from 05:00."""
    pool = _pool("shared")
    chat = _workload("chat", pool, 2, (LONG_AGO, WorkloadStatus.RUNNING))
    search = _workload(
        "search",
        pool,
        4,
        (LONG_AGO, WorkloadStatus.PLANNED),
        (START + timedelta(hours=4, minutes=30), WorkloadStatus.RUNNING),
    )
    rerank = _workload("rerank", pool, 2, (LONG_AGO, WorkloadStatus.PLANNED))
    requests = [
        WorkloadHourlyRequests(
            workload=chat,
            hour=START + timedelta(hours=step),
            requests=1000,
            input_tokens=150_000,
            output_tokens=50_000,
            errors=0,
        )
        for step in range(HOURS)
    ] + [
        WorkloadHourlyRequests(
            workload=search,
            hour=START + timedelta(hours=step),
            requests=1000,
            input_tokens=700_000,
            output_tokens=100_000,
            errors=0,
        )
        for step in range(5, HOURS)
    ]
    WorkloadHourlyRequests.objects.bulk_create(requests)
    # Every hour reports its 8 GPUs, 4 busy: measured cost 8 × $2 = $16, as unmeasured.
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=START + timedelta(hours=step),
            reporting_gpus=8,
            capacity_gpu_hours=8,
            busy_gpu_hours=4,
            avg_utilization_pct=50,
            max_utilization_pct=50,
        )
        for step in range(HOURS)
    )
    return {"pool": pool, "chat": chat, "search": search, "rerank": rerank}


@pytest.mark.django_db
def test_running_intervals_read_the_status_history(shared):
    intervals = running_intervals([shared["chat"], shared["search"], shared["rerank"]], START, END)
    assert intervals[shared["chat"].id] == [(START, END)]
    assert intervals[shared["search"].id] == [(START + timedelta(hours=4, minutes=30), END)]
    assert intervals[shared["rerank"].id] == []


@pytest.mark.django_db
def test_an_archived_workload_stops_running(shared):
    chat = shared["chat"]
    chat.archived_at = START + timedelta(hours=3)
    chat.save()
    intervals = running_intervals([chat], START, END)
    assert intervals[chat.id] == [(START, START + timedelta(hours=3))]


@pytest.mark.django_db
def test_a_shared_inference_pool_splits_by_declared_gpus_while_running(shared):
    """Over the 10 hours (no telemetry: each hour costs GPUs × $2.00):
    pool    = 10 h × 8 GPUs × $2 = $160
    chat    = 10 h × 2 GPUs × $2 = $40
    search  = 0.5 × 4 GPUs × $2 (04:30–05:00) + 5 h × 4 GPUs × $2 = $4 + $40 = $44
    rerank  = planned: $0
    unallocated = 4 h × 6 GPUs × $2 + (8 − 2 − 0.5 × 4) × $2 + 5 h × 2 GPUs × $2
                = $48 + $8 + $20 = $76;   40 + 44 + 76 = 160."""
    rows = _rows()
    assert _pool_cost("shared") == pytest.approx(160.0)
    assert rows["chat"].cost_usd == pytest.approx(40.0)
    assert rows["search"].cost_usd == pytest.approx(44.0)
    assert rows["rerank"].cost_usd == 0
    assert rows["rerank"].split_rule == "not_running"
    assert rows["unallocated"].cost_usd == pytest.approx(76.0)
    assert "unattributed" not in rows
    # Capacity follows the same shares: chat 10 h × 2, search 0.5 × 4 + 5 × 4, pool 80.
    assert rows["chat"].capacity_gpu_hours == pytest.approx(20.0)
    assert rows["search"].capacity_gpu_hours == pytest.approx(22.0)
    assert rows["unallocated"].capacity_gpu_hours == pytest.approx(80.0 - 20.0 - 22.0)
    # Busy GPU-hours too: 4 an hour; chat 10 h × 2/8 × 4 = 10, search 5.5 h × 4/8 × 4 = 11.
    assert rows["chat"].busy_gpu_hours == pytest.approx(10.0)
    assert rows["search"].busy_gpu_hours == pytest.approx(11.0)
    assert rows["unallocated"].busy_gpu_hours == pytest.approx(40.0 - 10.0 - 11.0)
    # Unit costs: chat $40 ÷ 10,000 requests × 1,000 = $4.00, ÷ 2,000,000 tokens × 1 M
    # = $20.00; search $44 ÷ 5,000 × 1,000 = $8.80, ÷ 4,000,000 × 1 M = $11.00.
    assert rows["chat"].cost_per_1k_requests_usd == pytest.approx(4.00)
    assert rows["chat"].cost_per_1m_tokens_usd == pytest.approx(20.00)
    assert float(rows["search"].cost_per_1k_requests_usd) == pytest.approx(8.80)
    assert rows["search"].cost_per_1m_tokens_usd == pytest.approx(11.00)
    assert rows["chat"].split_rule == "declared"
    assert rows["chat"].split_rule_text == "declared: 2 of 8 GPUs while running (10 h)"
    assert rows["search"].split_rule_text == "declared: 4 of 8 GPUs while running (5.50 h)"


@pytest.mark.django_db
def test_the_split_adds_up_to_the_pool_hour_by_hour(shared):
    """Hour h: chat 2 × $2 = $4; search 0 before 04:00, 0.5 × 4 × $2 = $4 at 04:00,
    4 × $2 = $8 after; the pool 8 × $2 = $16; unallocated the difference."""
    for step in range(HOURS):
        hour = START + timedelta(hours=step)
        rows = _rows(hour, hour + timedelta(hours=1))
        search = 0.0 if step < 4 else 4.0 if step == 4 else 8.0
        assert rows["chat"].cost_usd == pytest.approx(4.0), step
        assert rows["search"].cost_usd == pytest.approx(search), step
        unallocated = rows["unallocated"].cost_usd
        assert unallocated == pytest.approx(16.0 - 4.0 - search), step
        total = rows["chat"].cost_usd + rows["search"].cost_usd + unallocated
        assert total == pytest.approx(_pool_cost("shared", hour, hour + timedelta(hours=1)))


@pytest.mark.django_db
def test_the_explanation_names_the_rule(shared):
    rows = _rows()
    steps = explain.explain_figure(rows["search"], "cost_usd")
    assert steps[-1].expression.startswith("declared: 4 of 8 GPUs while running (5.50 h)")
    # 4 ÷ 8 × the $88 of the pool in the 5.50 h search ran (0.5 × $16 + 5 × $16).
    assert "4 ÷ 8 × $88.00" in steps[-1].expression
    assert steps[-1].value == pytest.approx(44.0)
    [unallocated] = explain.explain_figure(rows["unallocated"], "cost_usd")
    assert unallocated.expression.startswith("unallocated:")
    assert unallocated.value == pytest.approx(76.0)


@pytest.mark.django_db
def test_a_workload_on_2_of_8_gpus_of_its_own_pool_gets_2_8():
    """The pool's only workload declares 2 of its 8 GPUs: 10 h × 2 × $2 = $40 of the
    pool's 10 h × 8 × $2 = $160; the other $120 is unallocated."""
    pool = _pool("single")
    _workload("lone", pool, 2, (LONG_AGO, WorkloadStatus.RUNNING))
    rows = _rows()
    assert rows["lone"].cost_usd == pytest.approx(40.0)
    assert rows["unallocated"].cost_usd == pytest.approx(120.0)


@pytest.mark.django_db
def test_declared_gpus_above_the_pools_are_scaled_down_and_flagged():
    """8 + 4 = 12 GPUs declared on 8: each share × 8 ÷ 12. Big 8 × 8/12 ÷ 8 = 2/3 of
    $160 = $106.67; small 4 × 8/12 ÷ 8 = 1/3 = $53.33; nothing unallocated."""
    pool = _pool("crowded")
    _workload("big", pool, 8, (LONG_AGO, WorkloadStatus.RUNNING))
    _workload("small", pool, 4, (LONG_AGO, WorkloadStatus.RUNNING))
    rows = _rows()
    assert float(rows["big"].cost_usd) == pytest.approx(160 * 2 / 3)
    assert float(rows["small"].cost_usd) == pytest.approx(160 / 3)
    assert "unallocated" not in rows
    for key in ("big", "small"):
        assert rows[key].split_scaled_down is True
        assert rows[key].split_rule == "scaled_down"
        assert rows[key].split_rule_text.startswith(
            "scaled down: running workloads declared 12 GPUs on a pool of 8"
        )


@pytest.mark.django_db
def test_labelled_gpu_hours_are_charged_first():
    """One hour with telemetry: 8 GPUs reporting, 4 busy, $16 measured. Chat's labelled
    samples hold 4 GPU-h (3 busy): $16 × 4 ÷ 8 = $8 first. Of the other $8, chat
    (2 GPUs) 2 ÷ 8 = $2, search (4 GPUs) 4 ÷ 8 = $4, unallocated $2: chat $10."""
    pool = _pool("labelled")
    chat = _workload("chat", pool, 2, (LONG_AGO, WorkloadStatus.RUNNING))
    _workload("search", pool, 4, (LONG_AGO, WorkloadStatus.RUNNING))
    PoolHourlyUsage.objects.create(
        pool=pool,
        hour=START,
        reporting_gpus=8,
        capacity_gpu_hours=8,
        busy_gpu_hours=4,
        avg_utilization_pct=50,
        max_utilization_pct=50,
    )
    WorkloadHourlyUsage.objects.create(
        workload=chat, hour=START, allocated_gpu_hours=4, busy_gpu_hours=3
    )
    rows = _rows(START, START + timedelta(hours=1))
    assert rows["chat"].cost_usd == pytest.approx(10.0)
    assert rows["search"].cost_usd == pytest.approx(4.0)
    assert rows["unallocated"].cost_usd == pytest.approx(2.0)
    assert rows["chat"].split_rule_text.startswith("measured: pod labels; declared: 2 of 8")
    # Busy: chat 3 labelled + 2/8 × (4 − 3) = 3.25; search 4/8 × 1 = 0.5; rest 0.25.
    assert rows["chat"].busy_gpu_hours == pytest.approx(3.25)
    assert rows["unallocated"].busy_gpu_hours == pytest.approx(0.25)


@pytest.mark.django_db
def test_a_pool_without_workloads_is_unattributed():
    """No rule gives an empty pool's hours to anyone: 10 h × 8 × $2 = $160."""
    _pool("empty")
    rows = _rows()
    assert rows["unattributed"].cost_usd == pytest.approx(160.0)
    assert rows["unattributed"].split_rule == "unattributed"


@pytest.mark.django_db
def test_showback_follows_the_split():
    """Team pool (Ops, 8 GPUs): Search (team ML, 4 GPUs) and Batch (no team: Ops, 2 GPUs)
    run throughout; shared pool (no team, 8 GPUs): Chat (ML, 2 GPUs) runs throughout.
    ML = 10 h × (4 + 2) GPUs × $2 = $120; Ops = 10 × 2 × $2 = $40 + the team pool's
    unallocated 10 × 2 × $2 = $40 = $80; unattributed = the shared pool's unallocated
    10 × 6 × $2 = $120; fleet 2 × $160 = $320."""
    ops, ml = TeamFactory(name="Ops"), TeamFactory(name="ML")
    team_pool = _pool("team-pool", team=ops)
    shared_pool = _pool("shared-pool")
    _workload("search", team_pool, 4, (LONG_AGO, WorkloadStatus.RUNNING), team=ml)
    _workload("batch", team_pool, 2, (LONG_AGO, WorkloadStatus.RUNNING))
    _workload("chat", shared_pool, 2, (LONG_AGO, WorkloadStatus.RUNNING), team=ml)
    figures = showback(START, END)
    assert figures.teams[ml.id].cost_usd == pytest.approx(120.0)
    assert figures.teams[ops.id].cost_usd == pytest.approx(80.0)
    assert figures.teams[ops.id].unallocated_usd == pytest.approx(40.0)
    assert figures.unattributed.cost_usd == pytest.approx(120.0)
    assert figures.total_usd == pytest.approx(320.0)


@pytest.mark.django_db
def test_every_running_demo_workload_has_a_cost(demo):
    """The demo's 28 days: every running workload carries its declared share; the planned
    and the paused ones cost nothing and say why; the rows add up to the pools'."""
    from django.utils import timezone

    from apps.pools.models import Workload

    end = timezone.now()
    start = end - timedelta(days=28)
    rows = _rows(start, end)
    for workload in Workload.objects.all():
        row = rows[workload.slug]
        if workload.status == WorkloadStatus.RUNNING:
            assert row.cost_usd > 0, workload.slug
            assert row.split_rule == "declared", workload.slug
        else:
            assert row.cost_usd == 0, workload.slug
            assert row.split_rule == "not_running", workload.slug
    asia = rows["chat-api-asia"]
    assert asia.cost_per_1k_requests_usd and asia.cost_per_1m_tokens_usd
    pools_usd = sum(row.cost_usd for row in cost_report(start, end, "pool"))
    assert sum(row.cost_usd for row in rows.values()) == pytest.approx(pools_usd)
