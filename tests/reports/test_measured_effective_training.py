"""The cost report's effective training GPU-hours come from the measured goodput where a
workload has training events in the period, and from the interruption estimate where it
has none; each row says which.

Hand computation: goodput_measure's primer worked example (tests/data/goodput-measure/,
AI-Hypercomputer/resiliency "Goodput Primer"): steps 25 → 75 at a 2 min reference step
= 100 min effective. On 8 GPUs: 100 ÷ 60 × 8 = 13.333 effective GPU-hours.
The other workload has no events: 4 busy GPU-hours a hour for 10 hours = 40 busy
training GPU-hours, no interruption → 40 effective GPU-hours, estimated.
"""

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from apps.pools.models import WorkloadStatus
from apps.reports.cost.report import cost_report
from apps.reports.exports import cost_report_csv
from apps.telemetry.models import PoolHourlyUsage
from apps.telemetry.rollups.days import rebuild_days
from apps.training import services
from apps.training.models import TrainingImportRun
from tests.factories import PoolFactory, UserFactory, WorkloadFactory, status_history

PRIMER = Path(__file__).parents[1] / "data" / "goodput-measure" / "primer_worked_example.jsonl"
START = datetime(2025, 1, 1, tzinfo=UTC)
END = datetime(2025, 1, 2, tzinfo=UTC)


@pytest.fixture
def two_workloads(gpu_model):
    # 8 GPUs, all the measured run's: the pool's hours are the run's whole.
    measured_pool = PoolFactory(
        name="Measured pool", slug="measured-pool", gpu_model=gpu_model, gpu_count=8
    )
    measured = WorkloadFactory(
        name="Measured run",
        slug="measured-run",
        pool=measured_pool,
        gpu_count=8,
        reference_step_seconds=Decimal("120"),
    )
    run = services.import_events(
        workload=measured, text=PRIMER.read_text(), format="jsonl", source="command"
    )
    assert run.status == TrainingImportRun.Status.SUCCEEDED, run.errors
    estimated_pool = PoolFactory(
        name="Estimated pool", slug="estimated-pool", gpu_model=gpu_model, gpu_count=8
    )
    estimated = WorkloadFactory(name="Estimated run", slug="estimated-run", pool=estimated_pool)
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=estimated_pool,
            hour=START + timedelta(hours=hour),
            reporting_gpus=8,
            capacity_gpu_hours=8,
            busy_gpu_hours=4,
            avg_utilization_pct=50,
            max_utilization_pct=50,
        )
        for hour in range(10)
    )
    # Both run throughout: the report charges a workload its running hours only.
    for workload in (measured, estimated):
        status_history(workload, (START - timedelta(days=1), WorkloadStatus.RUNNING))
    rebuild_days(START - timedelta(days=1), END + timedelta(days=1))
    return measured, estimated


@pytest.mark.django_db
@pytest.mark.parametrize("group_by", ["workload", "pool"])
def test_measured_where_there_are_events_estimate_elsewhere(two_workloads, group_by):
    rows = {row.key: row for row in cost_report(START, END, group_by)}
    measured_key = "measured-run" if group_by == "workload" else "measured-pool"
    estimated_key = "estimated-run" if group_by == "workload" else "estimated-pool"
    assert rows[measured_key].effective_training_source == "measured"
    assert rows[measured_key].effective_training_gpu_hours == pytest.approx(100 / 60 * 8)
    assert rows[estimated_key].effective_training_source == "estimate"
    assert rows[estimated_key].effective_training_gpu_hours == pytest.approx(40.0)


@pytest.mark.django_db
def test_events_outside_the_period_leave_the_estimate(two_workloads):
    later = END + timedelta(days=3)
    rows = {row.key: row for row in cost_report(END, later, "workload")}
    assert rows["measured-run"].effective_training_source is None  # no busy hours either
    assert rows["measured-run"].effective_training_gpu_hours is None


@pytest.mark.django_db
def test_a_mix_is_an_estimate_and_the_purpose_row_says_so(two_workloads):
    rows = {row.key: row for row in cost_report(START, END, "purpose")}
    assert rows["training"].effective_training_source == "estimate"


@pytest.mark.django_db
def test_the_api_and_the_csv_carry_the_label(client, two_workloads):
    client.force_login(UserFactory(role="reader"))
    body = client.get(
        "/api/v1/reports/cost/",
        {"start": START.isoformat(), "end": END.isoformat(), "group_by": "workload"},
    ).json()
    rows = {row["key"]: row for row in body}
    assert rows["measured-run"]["effective_training_source"] == "measured"
    assert rows["measured-run"]["effective_training_gpu_hours"] == pytest.approx(100 / 60 * 8)
    assert rows["estimated-run"]["effective_training_source"] == "estimate"
    lines = list(csv.DictReader(io.StringIO(cost_report_csv(cost_report(START, END, "workload")))))
    by_key = {line["Key"]: line for line in lines}
    assert by_key["measured-run"]["Effective training from"] == "measured"
    assert by_key["estimated-run"]["Effective training from"] == "estimate"


@pytest.mark.django_db
def test_the_page_labels_each_row(client, two_workloads):
    client.force_login(UserFactory(role="reader"))
    page = client.get(
        "/reports/", {"start": "2025-01-01", "end": "2025-01-01", "group_by": "workload"}
    ).content.decode()
    assert 'data-source="measured"' in page and 'data-source="estimate"' in page


@pytest.mark.django_db
def test_measured_above_what_the_telemetry_saw_busy_is_flagged(client, two_workloads):
    from apps.reports.cost.explain import explain_figure

    measured, _estimated = two_workloads
    # The measured pool's telemetry: 1 busy GPU-hour an hour for 10 hours = 10 busy
    # training GPU-hours, below the 13.333 the event log measures as effective.
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=measured.pool,
            hour=START + timedelta(hours=hour),
            reporting_gpus=8,
            capacity_gpu_hours=8,
            busy_gpu_hours=1,
            avg_utilization_pct=12.5,
            max_utilization_pct=12.5,
        )
        for hour in range(10)
    )
    rebuild_days(START - timedelta(days=1), END + timedelta(days=1))
    rows = {row.key: row for row in cost_report(START, END, "workload")}
    row = rows["measured-run"]
    assert row.training_busy_gpu_hours == pytest.approx(10.0)
    # The event log covers 00:00–03:20, the hours 0–3: 13.333 measured there, and the
    # other 6 busy hours estimated, 6 × 1 − 0 lost: 13.333 + 6.
    assert row.effective_training_gpu_hours == pytest.approx(100 / 60 * 8 + 6)
    assert row.effective_training_above_busy
    assert not rows["estimated-run"].effective_training_above_busy
    last = explain_figure(row, "effective_training_gpu_hours")[-1]
    assert "above the 10 busy training GPU-h the telemetry measured" in last.expression
    client.force_login(UserFactory(role="reader"))
    body = client.get(
        "/api/v1/reports/cost/",
        {"start": START.isoformat(), "end": END.isoformat(), "group_by": "workload"},
    ).json()
    flags = {item["key"]: item["effective_training_above_busy"] for item in body}
    assert flags["measured-run"] is True and flags["estimated-run"] is False
