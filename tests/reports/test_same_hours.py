"""Every ratio's numerator and denominator cover the same hours, by hand.

- "The last 24 h" is the 24 hour-slots ending with the current one (``Span.last_hours``):
  GPUs × price × 24 h on the report, the Overview, the idle-cost alert and ``/metrics``,
  and the current hour's telemetry counts at once.
- A pool in service from 11:30 pays half of the 11:00 hour, one retired at 14:15 a
  quarter of the 14:00 hour, whether those hours have telemetry or not.
- Lost GPU-hours, cost and busy GPU-hours add up to the same totals by pool, purpose and
  workload, with a training workload on an inference pool.
- Cost per effective training GPU-hour divides the span's cost by effective GPU-hours of
  the whole span: measured where the event log covers, estimated elsewhere.

Hourly rows are written directly (the rollups are tested in tests/telemetry) and the
daily rows built from them, as tests/reports/test_cost_report.py does.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from apps.alerts import metrics
from apps.alerts.evaluators import idle_cost
from apps.alerts.models import AlertRule
from apps.dashboard import selectors as overview_selectors
from apps.pools.hours import floor_hour
from apps.pools.models import (
    Interruption,
    InterruptionCause,
    Purpose,
    WorkloadKind,
    WorkloadStatus,
)
from apps.reports.cost import explain
from apps.reports.cost.daily import daily_split
from apps.reports.cost.pool_usage import pool_usage_totals
from apps.reports.cost.report import cost_report
from apps.reports.cost.rows import total_row
from apps.reports.span import Span
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyUsage
from apps.telemetry.rollups.days import rebuild_days
from apps.training import services as training_services
from apps.training.models import TrainingImportRun
from tests.factories import PoolFactory, WorkloadFactory, status_history

ONE_HOUR = timedelta(hours=1)
PRIMER = Path(__file__).parents[1] / "data" / "goodput-measure" / "primer_worked_example.jsonl"


def write_hours(pool, hours, *, busy_gpu_hours: float, reporting_gpus=None):
    gpus = pool.gpu_count if reporting_gpus is None else reporting_gpus
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=hour,
            reporting_gpus=gpus,
            capacity_gpu_hours=pool.gpu_count,
            busy_gpu_hours=busy_gpu_hours,
            avg_utilization_pct=100 * busy_gpu_hours / gpus,
            max_utilization_pct=100 * busy_gpu_hours / gpus,
        )
        for hour in hours
    )


def rebuild(first, last):
    rebuild_days(first - timedelta(days=1), last + timedelta(days=1))


# --- the last 24 hours -------------------------------------------------------------------


@pytest.mark.django_db
def test_the_last_24_hours_are_24_hours_everywhere():
    now = timezone.now()
    current = floor_hour(now)
    span = Span.last_hours(now, 24)
    assert (span.start, span.end, span.hours) == (current - 23 * ONE_HOUR, current + ONE_HOUR, 24)
    pool = PoolFactory(
        name="Cheap",
        purpose=Purpose.INFERENCE,
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("0.75"),
        in_service_from=current - timedelta(days=60),
    )
    # 48 hours of telemetry up to and including the current hour, 2 of 8 GPUs busy.
    write_hours(pool, [current - step * ONE_HOUR for step in range(48)], busy_gpu_hours=2)
    # A pool whose only telemetry is of the current hour: it counts at once.
    newcomer = PoolFactory(
        name="Newcomer",
        purpose=Purpose.INFERENCE,
        gpu_count=4,
        on_demand_price_per_gpu_hour_usd=Decimal("1.00"),
        in_service_from=current - timedelta(days=1),
    )
    write_hours(newcomer, [current], busy_gpu_hours=4)
    rebuild(current - timedelta(days=3), current)

    # By hand: 8 GPUs × $0.75 × 24 h = $144.00 (not × 25 = $150.00); 192 GPU-h of
    # capacity, 2 × 24 = 48 busy, idle cost 144 × (1 − 48 ÷ 192) = $108.00.
    [row] = cost_report(span.start, span.end, "pool", pool_slug=pool.slug)
    assert row.capacity_gpu_hours == 8 * 24
    assert row.cost_usd == pytest.approx(8 * 0.75 * 24)
    assert row.busy_gpu_hours == pytest.approx(2 * 24)
    assert row.utilization_pct == pytest.approx(25.0)
    usage = pool_usage_totals(span, [pool.pk])[pool.pk]
    assert usage.measured_cost_usd == pytest.approx(144.0)
    assert usage.measured_hours == 24

    # The idle-cost alert over a 24-hour window: $108.00, above a $100 threshold.
    rule = AlertRule(kind="idle_cost", threshold_usd=Decimal("100"), window_hours=24)
    [subject] = [s for s in idle_cost(rule, now) if s.labels["pool"] == pool.slug]
    assert "$108.00" in subject.summary

    # /metrics: the same $108.00 over its "24h" window; the newcomer's 4 busy of 4.
    gauges = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in metrics.pool_figures(now)
        for sample in family.samples
    }
    idle_key = (("cluster", "default"), ("pool", pool.slug), ("window", "24h"))
    assert gauges[("gpufleet_pool_idle_cost_usd", idle_key)] == pytest.approx(108.0)
    newcomer_key = (("cluster", "default"), ("pool", newcomer.slug))
    assert gauges[("gpufleet_pool_utilisation_ratio", newcomer_key)] == 1.0

    # The Overview's 24-hour utilisation: (48 + 4) busy ÷ (192 + 4) measured GPU-h.
    context = overview_selectors._overview_context(now, overview_selectors.EVERYTHING)
    assert context["usage_24h"] == pytest.approx((48 + 4, 192 + 4))
    assert context["utilization_24h_pct"] == pytest.approx(100 * 52 / 196)


# --- service starting and ending mid-hour ------------------------------------------------

SERVICE_FROM = datetime(2026, 3, 10, 11, 30, tzinfo=UTC)
SERVICE_UNTIL = datetime(2026, 3, 12, 14, 15, tzinfo=UTC)
# 11:30 → midnight is 12.5 h, the 11th 24 h, midnight → 14:15 is 14.25 h.
PAID_HOURS = 12.5 + 24 + 14.25  # 50.75


@pytest.fixture
def mid_hour_pool():
    return PoolFactory(
        name="Mid hour",
        purpose=Purpose.INFERENCE,
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
        in_service_from=SERVICE_FROM,
        in_service_until=SERVICE_UNTIL,
    )


# Whole days around the service period (its edges read from daily rows' days) and a span
# whose own edges cut those days (hourly rows).
SPANS = [
    (datetime(2026, 3, 9, tzinfo=UTC), datetime(2026, 3, 14, tzinfo=UTC)),
    (datetime(2026, 3, 10, 6, tzinfo=UTC), datetime(2026, 3, 12, 18, tzinfo=UTC)),
]


@pytest.mark.django_db
@pytest.mark.parametrize("start, end", SPANS)
def test_a_pool_pays_the_fraction_of_the_hours_its_service_starts_and_ends_in(
    mid_hour_pool, start, end
):
    [row] = cost_report(start, end, "pool", pool_slug=mid_hour_pool.slug)
    # By hand, no telemetry: 8 GPUs × 50.75 h × $2.00 = $812.00: half of the 11:00 hour
    # and a quarter of the 14:00 hour (whole hours would be 52 h, $832.00).
    assert row.capacity_gpu_hours == pytest.approx(8 * PAID_HOURS)
    assert row.unmeasured_gpu_hours == pytest.approx(8 * PAID_HOURS)
    assert row.cost_usd == pytest.approx(8 * PAID_HOURS * 2.00)


@pytest.mark.django_db
@pytest.mark.parametrize("start, end", SPANS)
def test_the_measured_edge_hours_count_for_their_fraction_too(mid_hour_pool, start, end):
    # Telemetry in every hour the service period touches, 11:00 on the 10th to 14:00 on
    # the 12th: 13 + 24 + 15 = 52 hourly rows, 4 of 8 GPUs busy.
    first = floor_hour(SERVICE_FROM)
    write_hours(mid_hour_pool, [first + step * ONE_HOUR for step in range(52)], busy_gpu_hours=4)
    rebuild(first, SERVICE_UNTIL)
    [row] = cost_report(start, end, "pool", pool_slug=mid_hour_pool.slug)
    # By hand: measured 8 × 50.75 = 406 GPU-h, nothing unmeasured, busy 4 × 50.75 = 203,
    # utilisation 203 ÷ 406 = 50 %, cost 406 × $2.00 = $812.00, idle $406.00.
    assert row.measured_capacity_gpu_hours == pytest.approx(8 * PAID_HOURS)
    assert row.unmeasured_gpu_hours == pytest.approx(0)
    assert row.busy_gpu_hours == pytest.approx(4 * PAID_HOURS)
    assert row.utilization_pct == pytest.approx(50.0)
    assert row.cost_usd == pytest.approx(8 * PAID_HOURS * 2.00)
    assert row.idle_cost_usd == pytest.approx(8 * PAID_HOURS * 2.00 / 2)
    steps = explain.explain_figure(row, "capacity_gpu_hours")
    assert "8 GPUs × 50.75 h paid" in steps[-1].expression
    # The daily chart: the 10th 12.5 h, the 11th 24 h, the 12th 14.25 h, × 8 GPUs × $2.00.
    split = daily_split(start, end, pool=mid_hour_pool)
    by_day = dict(zip(split.days, split.measured_cost_usd["inference"], strict=True))
    assert by_day[SERVICE_FROM.date()] == pytest.approx(12.5 * 16)
    assert by_day[SERVICE_FROM.date() + timedelta(days=1)] == pytest.approx(24 * 16)
    assert by_day[SERVICE_UNTIL.date()] == pytest.approx(14.25 * 16)


# --- one total whatever the grouping -----------------------------------------------------

DAY = datetime(2026, 4, 7, tzinfo=UTC)


@pytest.fixture
def mixed_fleet():
    """A training pool with one training workload; an inference pool shared by an
    inference workload and a training workload (labelled 2 GPU-hours, 1 busy, an hour).
    Both pools: 8 GPUs, 4 busy every hour of DAY."""
    training_pool = PoolFactory(
        name="Train pool",
        purpose=Purpose.TRAINING,
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
    )
    inference_pool = PoolFactory(
        name="Serve pool",
        purpose=Purpose.INFERENCE,
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("1.00"),
    )
    pretrain = WorkloadFactory(name="Pretrain", pool=training_pool, gpu_count=8)
    chat = WorkloadFactory(
        name="Chat", pool=inference_pool, kind=WorkloadKind.ONLINE_INFERENCE, gpu_count=2
    )
    tune = WorkloadFactory(name="Tune", pool=inference_pool, gpu_count=4)
    hours = [DAY + step * ONE_HOUR for step in range(24)]
    for pool in (training_pool, inference_pool):
        write_hours(pool, hours, busy_gpu_hours=4)
    WorkloadHourlyUsage.objects.bulk_create(
        WorkloadHourlyUsage(workload=tune, hour=hour, allocated_gpu_hours=2, busy_gpu_hours=1)
        for hour in hours
    )
    rebuild(DAY, DAY + timedelta(days=1))
    # Lost GPU-hours = (minutes since the checkpoint + restart) ÷ 60 × the workload's GPUs:
    # Pretrain (30 + 10) ÷ 60 × 8 = 5.333; Tune (60 + 15) ÷ 60 × 4 = 5; Chat 30 ÷ 60 × 2 = 1.
    for workload, since_checkpoint, restart in ((pretrain, 30, 10), (tune, 60, 15), (chat, 30, 0)):
        occurred = DAY + timedelta(hours=10)
        Interruption.objects.create(
            workload=workload,
            occurred_at=occurred,
            cause=InterruptionCause.HARDWARE,
            restart_minutes=restart,
            last_checkpoint_at=occurred - timedelta(minutes=since_checkpoint),
        )
    return training_pool, inference_pool


@pytest.mark.django_db
def test_lost_hours_cost_and_busy_hours_are_one_total_in_every_grouping(mixed_fleet):
    end = DAY + timedelta(days=1)
    totals = {
        group_by: total_row(cost_report(DAY, end, group_by))
        for group_by in ("pool", "purpose", "workload")
    }
    # By hand: lost 40 ÷ 60 × 8 + 75 ÷ 60 × 4 + 30 ÷ 60 × 2 = 5.333 + 5 + 1 = 11.333;
    # cost 8 × 24 × $2.00 + 8 × 24 × $1.00 = $576.00; busy 2 pools × 24 h × 4 = 192.
    hand = {"lost_gpu_hours": 40 / 60 * 8 + 75 / 60 * 4 + 30 / 60 * 2, "cost_usd": 576.0}
    hand["busy_gpu_hours"] = 192.0
    for group_by, total in totals.items():
        for figure, value in hand.items():
            assert getattr(total, figure) == pytest.approx(value), (group_by, figure)
    # The workloads' own rows carry their own lost hours.
    rows = {row.key: row for row in cost_report(DAY, end, "workload")}
    assert rows["tune"].lost_gpu_hours == pytest.approx(5.0)
    assert rows["chat"].lost_gpu_hours == pytest.approx(1.0)
    assert rows["pretrain"].lost_gpu_hours == pytest.approx(40 / 60 * 8)


# --- cost per effective training GPU-hour over the same hours ----------------------------

START = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.mark.django_db
@pytest.mark.parametrize("group_by, key", [("pool", "primer-pool"), ("workload", "primer-run")])
def test_the_effective_hours_ratio_covers_the_span_when_the_log_covers_part(group_by, key):
    pool = PoolFactory(
        name="Primer pool",
        purpose=Purpose.TRAINING,
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
    )
    workload = WorkloadFactory(
        name="Primer run", pool=pool, gpu_count=8, reference_step_seconds=Decimal("120")
    )
    # Running since the day before: it holds all 8 GPUs of every hour of the day.
    status_history(workload, (START - timedelta(days=1), WorkloadStatus.RUNNING))
    run = training_services.import_events(
        workload=workload, text=PRIMER.read_text(), format="jsonl", source="command"
    )
    assert run.status == TrainingImportRun.Status.SUCCEEDED, run.errors
    write_hours(pool, [START + step * ONE_HOUR for step in range(24)], busy_gpu_hours=6)
    rebuild(START, START + timedelta(days=1))
    # One interruption inside the hours the log covers (its loss is in the measurement)
    # and one outside: (30 + 30) ÷ 60 × 8 = 8 GPU-h lost there.
    for hour in (2, 10):
        occurred = START + timedelta(hours=hour)
        Interruption.objects.create(
            workload=workload,
            occurred_at=occurred,
            cause=InterruptionCause.HARDWARE,
            restart_minutes=30,
            last_checkpoint_at=occurred - timedelta(minutes=30),
        )
    rows = {row.key: row for row in cost_report(START, START + timedelta(days=1), group_by)}
    row = rows[key]
    # By hand: the primer's log runs 00:00–03:20, the hours 0–3 (4 h): steps 25 → 75 at
    # 2 min = 100 effective minutes × 8 GPUs ÷ 60 = 13.333 GPU-h measured. The other 20 h:
    # 20 × 6 busy − 8 lost = 112 GPU-h estimated. Effective 125.333 GPU-h; the day costs
    # 8 × 24 × $2.00 = $384.00, so $384.00 ÷ 125.333 = $3.0638 per effective GPU-hour
    # (not $384.00 ÷ 13.333 = $28.80, a day's cost over 4 hours' effective work).
    measured, estimated = 100 / 60 * 8, 20 * 6 - 8
    assert row.cost_usd == pytest.approx(384.0)
    assert row.effective_training_source == "measured"
    assert row.effective_training_gpu_hours == pytest.approx(measured + estimated)
    assert float(row.cost_per_effective_training_gpu_hour_usd) == pytest.approx(
        384.0 / (measured + estimated)
    )
    steps = explain.explain_figure(row, "effective_training_gpu_hours")
    text = " ".join(step.expression for step in steps)
    assert "13.3 GPU-h measured by the event log over the 4 h it covers" in text
    assert "112 GPU-h estimated (busy − lost GPU-h) over the other 20 h" in text
    assert "over the hours they cover" in steps[-1].expression
