"""History is permanent: raw samples are purged after the retention, and the hourly rows
they were rolled up into are then the only record. A recompute rebuilds only the
pool-hours that still hold raw samples; every other hour stays exactly as it is."""

import io
from datetime import UTC, date, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from apps.pools.models import Pool, Workload, WorkloadKind
from apps.reports.models import RecomputeJob
from apps.reports.tasks import recompute_days_task
from apps.telemetry.ingest import checks, formats, storage
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    PoolDailyUsage,
    PoolHourFlag,
    PoolHourlyUsage,
    RequestSample,
    WorkloadHourlyRequests,
    WorkloadHourlyUsage,
)
from apps.telemetry.rollups import hourly, retention
from apps.telemetry.rollups.days import rebuild_days

# A week a month before the tests' clock, long past the 14-day raw retention.
PURGED_START = datetime(2026, 10, 1, tzinfo=UTC)
PURGED_HOURS = 7 * 24
ANCIENT = datetime(2021, 6, 1, 12, 5, tzinfo=UTC)  # a stray sample, before the service start


def _now_hour() -> datetime:
    return checks.hour_of(timezone.now())


def _device(pool, uuid="GPU-aaaa") -> GpuDevice:
    moment = timezone.now()
    return GpuDevice.objects.create(
        key=uuid, uuid=uuid, pool=pool, first_seen_at=moment, last_seen_at=moment
    )


def _sample(device, timestamp, utilization_pct=50.0) -> GpuSample:
    return GpuSample.objects.create(
        device=device, timestamp=timestamp, utilization_pct=utilization_pct
    )


def _purged_history(pool, start=PURGED_START, hours=PURGED_HOURS) -> list[tuple]:
    """Hourly rows, a rollup-kind flag and daily sums of hours whose samples are purged."""
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=start + timedelta(hours=offset),
            reporting_gpus=pool.gpu_count,
            capacity_gpu_hours=pool.gpu_count,
            busy_gpu_hours=pool.gpu_count * 0.75,
            avg_utilization_pct=75.0,
            max_utilization_pct=90.0,
            max_memory_used_mib=40000.0,
            energy_kwh=5.5,
        )
        for offset in range(hours)
    )
    PoolHourFlag.objects.create(
        pool=pool,
        hour=start,
        kind=PoolHourFlag.Kind.OVER_REPORTED,
        gpus=pool.gpu_count + 1,
        samples=0,
        detail="kept from before the purge",
    )
    rebuild_days(start, start + timedelta(hours=hours))
    return _history(pool)


def _history(pool) -> list[tuple]:
    return list(
        PoolHourlyUsage.objects.filter(pool=pool)
        .order_by("hour")
        .values_list("hour", "reporting_gpus", "busy_gpu_hours", "energy_kwh")
    )


def _purged_rows(pool) -> list[tuple]:
    end = PURGED_START + timedelta(hours=PURGED_HOURS)
    return [row for row in _history(pool) if PURGED_START <= row[0] < end]


def _rollup_all() -> str:
    out = io.StringIO()
    call_command("rollup_usage", "--all", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_purged_hours_survive_rollup_usage_all_with_a_very_old_sample(pool):
    before = _purged_history(pool)
    days_before = list(
        PoolDailyUsage.objects.filter(pool=pool).values_list("day", "busy_gpu_hours")
    )
    device = _device(pool)
    # One stray sample from 2021 and one live: the samples' span covers the purged week.
    _sample(device, ANCIENT)
    _sample(device, _now_hour() + timedelta(minutes=1), 40.0)

    _rollup_all()

    assert _purged_rows(pool) == before
    assert PoolHourFlag.objects.filter(pool=pool, hour=PURGED_START).exists()
    days_after = dict(PoolDailyUsage.objects.filter(pool=pool).values_list("day", "busy_gpu_hours"))
    assert all(days_after[day] == busy for day, busy in days_before)
    live = PoolHourlyUsage.objects.get(pool=pool, hour=_now_hour())
    assert live.reporting_gpus == 1 and live.busy_gpu_hours == pytest.approx(0.4)
    # The 2021 sample is before the pool's service start: flagged, not charged.
    assert not PoolHourlyUsage.objects.filter(hour__year=2021).exists()
    assert PoolHourFlag.objects.filter(
        pool=pool, hour=checks.hour_of(ANCIENT), kind=PoolHourFlag.Kind.OUTSIDE_SERVICE
    ).exists()


@pytest.mark.django_db
def test_a_recompute_over_a_year_keeps_the_hours_without_samples(pool):
    before = _purged_history(pool)
    device = _device(pool)
    held_hour = _now_hour() - timedelta(hours=3)
    _sample(device, held_hour + timedelta(minutes=10), 20.0)
    year_start = _now_hour() - timedelta(days=365)

    hourly.rollup_pool_hours(pool.pk, year_start, _now_hour() + timedelta(hours=1))
    hourly.rollup_all_pool_hours(year_start, _now_hour() + timedelta(hours=1))
    hourly.rollup_pool_history(pool.pk)

    assert _purged_rows(pool) == before
    assert PoolHourlyUsage.objects.get(pool=pool, hour=held_hour).busy_gpu_hours == 0.2


@pytest.mark.django_db
def test_reports_recompute_of_365_days_keeps_every_row(pool):
    before = _purged_history(pool)
    days_before = list(
        PoolDailyUsage.objects.order_by("day").values_list("pool_id", "day", "busy_gpu_hours")
    )
    last = timezone.now().date()
    job = RecomputeJob.objects.create(start_day=last - timedelta(days=364), end_day=last)

    recompute_days_task(job.pk)

    job.refresh_from_db()
    assert job.status == RecomputeJob.Status.DONE and job.days_done == 365
    assert _purged_rows(pool) == before
    assert (
        list(PoolDailyUsage.objects.order_by("day").values_list("pool_id", "day", "busy_gpu_hours"))
        == days_before
    )


@pytest.mark.django_db
def test_a_stale_row_of_an_hour_that_holds_samples_is_rebuilt(pool):
    hour = _now_hour() - timedelta(hours=2)
    _purged_history(pool, start=hour, hours=1)  # a row that disagrees with its samples
    _sample(_device(pool), hour + timedelta(minutes=5), 10.0)

    hourly.rollup_pool_hours(pool.pk, hour, hour + timedelta(hours=1))

    row = PoolHourlyUsage.objects.get(pool=pool, hour=hour)
    assert (row.reporting_gpus, row.busy_gpu_hours) == (1, pytest.approx(0.1))
    assert not PoolHourFlag.objects.filter(pool=pool, hour=hour).exists()


@pytest.mark.django_db
def test_attribution_of_purged_hours_is_kept(pool, architecture):
    workload = Workload.objects.create(
        name="Shared trainer",
        slug="shared-trainer",
        kind=WorkloadKind.FULL_FINE_TUNE,
        model_architecture=architecture,
        pool=pool,
        gpu_count=8,
        k8s_namespace="train",
    )
    _purged_history(pool)
    WorkloadHourlyUsage.objects.create(
        workload=workload, hour=PURGED_START, allocated_gpu_hours=8.0, busy_gpu_hours=6.0
    )
    device = _device(pool)
    _sample(device, ANCIENT)
    _sample(device, _now_hour() + timedelta(minutes=1))

    _rollup_all()

    kept = WorkloadHourlyUsage.objects.get(workload=workload, hour=PURGED_START)
    assert (kept.allocated_gpu_hours, kept.busy_gpu_hours) == (8.0, 6.0)


@pytest.mark.django_db
def test_request_hours_without_request_samples_are_kept(workload):
    WorkloadHourlyRequests.objects.bulk_create(
        WorkloadHourlyRequests(
            workload=workload,
            hour=PURGED_START + timedelta(hours=offset),
            requests=1000,
            input_tokens=500_000,
            output_tokens=100_000,
            errors=3,
            p95_latency_ms=850.0,
        )
        for offset in range(PURGED_HOURS)
    )
    for moment in (ANCIENT, timezone.now() - timedelta(minutes=5)):
        RequestSample.objects.create(
            workload=workload, timestamp=moment, input_tokens=100, output_tokens=20, count=1
        )

    _rollup_all()

    kept = WorkloadHourlyRequests.objects.filter(
        workload=workload, hour__gte=PURGED_START, hour__lt=datetime(2026, 10, 8, tzinfo=UTC)
    )
    assert kept.count() == PURGED_HOURS
    assert {row.requests for row in kept} == {1000}
    assert WorkloadHourlyRequests.objects.filter(workload=workload, hour__year=2021).exists()


@pytest.mark.django_db
def test_the_demo_keeps_every_pool_hour_after_rollup_usage_all():
    call_command("seed_demo", verbosity=0)
    demo_pool = Pool.objects.get(slug="infer-l40s-hk")
    counts = dict(
        PoolHourlyUsage.objects.values("pool_id")
        .annotate(hours=Count("id"))
        .values_list("pool_id", "hours")
    )
    assert sum(counts.values()) > 600
    device = _device(demo_pool)
    _sample(device, ANCIENT)
    _sample(device, timezone.now() - timedelta(seconds=30))  # the current hour, already seeded

    _rollup_all()

    after = dict(
        PoolHourlyUsage.objects.values("pool_id")
        .annotate(hours=Count("id"))
        .values_list("pool_id", "hours")
    )
    assert after == counts


@pytest.mark.django_db
def test_a_moved_device_takes_its_hours_to_its_new_pool(pool, gpu_model, client, make_user):
    other = Pool.objects.create(
        name="Other pool",
        slug="other-pool",
        purpose=pool.purpose,
        deployment=pool.deployment,
        gpu_model=gpu_model,
        gpu_count=8,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=pool.on_demand_price_per_gpu_hour_usd,
        in_service_from=pool.in_service_from,
    )
    hour = _now_hour() - timedelta(hours=1)
    _purged_history(pool, start=PURGED_START, hours=2)
    device = _device(pool)
    _sample(device, hour + timedelta(minutes=5), 30.0)
    hourly.rollup_pool_hours(pool.pk, hour, hour + timedelta(hours=1))
    assert PoolHourlyUsage.objects.filter(pool=pool, hour=hour).exists()

    client.force_login(make_user("lead"))
    client.post(reverse("telemetry:device_assign"), {"pool": other.pk, "devices": [device.pk]})

    assert not PoolHourlyUsage.objects.filter(pool=pool, hour=hour).exists()
    assert PoolHourlyUsage.objects.get(pool=other, hour=hour).busy_gpu_hours == 0.3
    assert PoolHourlyUsage.objects.filter(pool=pool, hour__lt=hour).count() == 2


def _import_csv(text: str, pool, *, skip_bad_rows=False):
    result = formats.parse_gpu_text(
        text,
        format="csv",
        columns={"timestamp": "time", "device": "gpu", "utilization_pct": "util"},
    )
    return storage.import_gpu_samples(result, pool=pool, skip_bad_rows=skip_bad_rows)


@pytest.mark.django_db
def test_samples_for_a_final_hour_are_refused_with_their_line(pool):
    _purged_history(pool)
    backfill = date(2026, 9, 1)  # older than the retention, but no rollup yet
    text = (
        "time,gpu,util\n"
        f"{backfill}T10:00:00Z,GPU-new,50\n"
        f"{PURGED_START:%Y-%m-%d}T03:20:00Z,GPU-new,99\n"
    )

    refused = _import_csv(text, pool)

    assert refused.rejected_whole and refused.rejected == 1
    assert refused.errors[0].message == (
        "line 3: sample at 2026-10-01 03:20 UTC is older than the 14-day raw retention; "
        "the hour's rollup is final (its raw samples are purged and its hourly row is the "
        "only record)"
    )
    assert not GpuSample.objects.exists() and not GpuDevice.objects.exists()

    kept = _import_csv(text, pool, skip_bad_rows=True)

    assert (kept.accepted, kept.rejected) == (1, 1)
    assert list(GpuSample.objects.values_list("timestamp", flat=True)) == [
        datetime(2026, 9, 1, 10, tzinfo=UTC)
    ]


@pytest.mark.django_db
def test_old_samples_are_accepted_while_their_hour_still_holds_samples(pool):
    hour = datetime(2026, 10, 20, 10, tzinfo=UTC)  # past the retention, not purged yet
    first = _import_csv(f"time,gpu,util\n{hour:%Y-%m-%dT%H}:05:00Z,GPU-1,20\n", pool)
    hourly.rollup_pool_hours(pool.pk, hour, hour + timedelta(hours=1))

    second = _import_csv(f"time,gpu,util\n{hour:%Y-%m-%dT%H}:35:00Z,GPU-2,60\n", pool)
    hourly.rollup_pool_hours(pool.pk, hour, hour + timedelta(hours=1))

    assert (first.accepted, second.accepted, second.rejected) == (1, 1, 0)
    assert PoolHourlyUsage.objects.get(pool=pool, hour=hour).reporting_gpus == 2


@pytest.mark.django_db
def test_the_purge_removes_whole_hours_only(pool, settings):
    from apps.telemetry.models import PurgeRun
    from apps.telemetry.tasks import purge_raw_samples_task

    device = _device(pool)
    horizon = retention.raw_retention_horizon()
    _sample(device, horizon - timedelta(minutes=1))
    _sample(device, horizon + timedelta(minutes=1))

    # The task answers its run's id; the run says what went.
    assert PurgeRun.objects.get(pk=purge_raw_samples_task()).rows_deleted == 1
    assert list(GpuSample.objects.values_list("timestamp", flat=True)) == [
        horizon + timedelta(minutes=1)
    ]
