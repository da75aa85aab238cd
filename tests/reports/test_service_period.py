"""A pool is paid only inside its service period: the phantom cost of a pool registered
today with one old sample, the period's edit, and the reconciliation page and API that
show what was kept but not counted."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from apps.pools.hours import floor_hour
from apps.pools.models import Deployment, Pool, Purpose
from apps.pools.services import save_pool
from apps.reports.cost.report import cost_report
from apps.telemetry.models import PoolHourFlag, PoolHourlyUsage
from apps.telemetry.rollups import hourly

# A real nvidia-smi capture of one H100 under load: one sample, 2026-07-14 08:12:53.
H100_CAPTURE = (
    Path(__file__).resolve().parent.parent
    / "data/nvidia-smi/query_gpu_csv/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv"
)
SAMPLE_HOUR = datetime(2026, 7, 14, 8, tzinfo=UTC)
PRICE = Decimal("2.49")


@pytest.fixture
def new_pool(gpu_model):
    """Registered just now: in service from its creation, the default."""
    pool = Pool(
        name="New H100",
        slug="new-h100",
        purpose=Purpose.INFERENCE,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=gpu_model,
        gpu_count=8,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=PRICE,
    )
    save_pool(pool)
    return pool


def _import_the_old_sample(pool):
    call_command(
        "import_telemetry", str(H100_CAPTURE), "--format", "nvidia-smi", "--pool", pool.slug
    )
    hourly.rollup_pool_hours(pool.pk, SAMPLE_HOUR, SAMPLE_HOUR + timedelta(hours=1))


@pytest.mark.django_db
def test_a_new_pool_is_not_charged_for_the_weeks_before_it_existed(new_pool):
    _import_the_old_sample(new_pool)
    now = timezone.now()
    [row] = cost_report(now - timedelta(days=28), now, pool_slug=new_pool.slug)
    # By hand: in service from the moment it was created, in the current hour, so the
    # last 28 days pay the rest of that hour, h = (end of the hour − creation) ÷ 1 h:
    # h × 8 GPUs × $2.49, all of it unmeasured (not $10,768).
    assert floor_hour(new_pool.in_service_from) == floor_hour(now)
    paid_hours = (floor_hour(now) + timedelta(hours=1) - new_pool.in_service_from) / timedelta(
        hours=1
    )
    assert 0 < paid_hours <= 1
    assert row.capacity_gpu_hours == pytest.approx(8 * paid_hours)
    assert float(row.cost_usd) == pytest.approx(8 * paid_hours * 2.49)
    assert row.unmeasured_gpu_hours == pytest.approx(8 * paid_hours)
    # The July sample is kept, not counted, and its hour says why.
    assert not PoolHourlyUsage.objects.filter(pool=new_pool).exists()
    flag = PoolHourFlag.objects.get(pool=new_pool, hour=SAMPLE_HOUR)
    assert flag.kind == PoolHourFlag.Kind.OUTSIDE_SERVICE
    assert (flag.gpus, flag.samples) == (1, 1)


@pytest.mark.django_db
def test_a_backdated_service_period_counts_the_kept_samples(
    client, make_user, new_pool, monkeypatch
):
    _import_the_old_sample(new_pool)
    queued = []
    monkeypatch.setattr(
        "apps.telemetry.signals.enqueue", lambda task, *args: queued.append((task, *args))
    )
    client.force_login(make_user("lead"))
    response = client.patch(
        reverse("pool-detail", kwargs={"slug": new_pool.slug}),
        {"in_service_from": "2026-07-01T00:00:00Z"},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert queued == [("telemetry.rollup_pool_history", new_pool.pk)]
    hourly.rollup_pool_history(new_pool.pk)  # what the queued task runs

    usage = PoolHourlyUsage.objects.get(pool=new_pool, hour=SAMPLE_HOUR)
    assert usage.reporting_gpus == 1
    assert not PoolHourFlag.objects.filter(pool=new_pool, kind="outside_service").exists()
    # The day of the sample: 24 paid hours × 8 GPUs; one measured hour.
    day = datetime(2026, 7, 14, tzinfo=UTC)
    [row] = cost_report(day, day + timedelta(days=1), pool_slug=new_pool.slug)
    assert row.capacity_gpu_hours == 24 * 8
    assert row.measured_capacity_gpu_hours == 8
    assert row.unmeasured_gpu_hours == 23 * 8
    assert row.cost_usd == Decimal("478.08")  # 24 × 8 × $2.49


@pytest.mark.django_db
def test_a_service_period_must_end_after_it_starts(client, make_user, new_pool):
    client.force_login(make_user("lead"))
    response = client.patch(
        reverse("pool-detail", kwargs={"slug": new_pool.slug}),
        {"in_service_from": "2026-07-01T00:00:00Z", "in_service_until": "2026-06-01T00:00:00Z"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "must be after" in response.json()["in_service_until"][0]
    response = client.patch(
        reverse("pool-detail", kwargs={"slug": new_pool.slug}),
        {"in_service_from": "1970-01-01T00:00:00Z"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "before 2000-01-01" in str(response.json())


@pytest.mark.django_db
def test_a_pool_out_of_service_pays_nothing_after_it(gpu_model, new_pool):
    start = datetime(2026, 11, 1, tzinfo=UTC)
    Pool.objects.filter(pk=new_pool.pk).update(
        in_service_from=start, in_service_until=start + timedelta(days=2, minutes=30)
    )
    [row] = cost_report(start, start + timedelta(days=7), pool_slug=new_pool.slug)
    # 48 whole hours and the half hour of day 3 it was in service: 48.5 h × 8 GPUs.
    assert row.capacity_gpu_hours == 48.5 * 8


@pytest.mark.django_db
def test_reconciliation_lists_flagged_hours_with_coverage(client, make_user, new_pool):
    _import_the_old_sample(new_pool)
    client.force_login(make_user("reader"))
    page = client.get(reverse("telemetry:reconciliation"), {"pool": new_pool.slug})
    assert page.status_code == 200
    html = page.content.decode()
    assert "2026-07-14" in html
    assert "Samples outside the pool&#x27;s service period" in html
    api = client.get(reverse("api-reconciliation"), {"pool": new_pool.slug}).json()
    [pool_day] = api["results"]
    assert pool_day["pool"] == new_pool.slug
    assert pool_day["day"] == "2026-07-14"
    # Before its service period the pool has no in-service hours that day: no coverage.
    assert pool_day["in_service_hours"] == 0
    assert pool_day["coverage_pct"] is None
    [flag] = pool_day["flags"]
    assert flag["kind"] == "outside_service"
    assert flag["hour"].startswith("2026-07-14T08:00:00")
    # Other kinds filter it out.
    empty = client.get(reverse("api-reconciliation"), {"kind": "over_reported"}).json()
    assert empty["count"] == 0
    assert client.get(reverse("api-reconciliation"), {"kind": "nonsense"}).status_code == 400
    assert client.get(reverse("api-reconciliation"), {"pool": "missing"}).status_code == 404


@pytest.mark.django_db
def test_coverage_counts_silent_hours_as_none_reporting(client, make_user, pool):
    """16 GPUs; the last 24 h have 12 rollup hours with 16 reporting and 12 with none."""
    now_hour = floor_hour(timezone.now())
    for step in range(12):
        PoolHourlyUsage.objects.create(
            pool=pool,
            hour=now_hour - timedelta(hours=step),
            reporting_gpus=16,
            capacity_gpu_hours=16,
            busy_gpu_hours=8,
        )
    client.force_login(make_user("reader"))
    # The pool page loads its utilization panel, which holds the coverage, from telemetry.
    assert (
        reverse("telemetry:pool_panel", args=[pool.slug])
        in client.get(pool.get_absolute_url()).content.decode()
    )
    page = client.get(reverse("telemetry:pool_panel", args=[pool.slug]))
    # By hand: 12 × 16 reporting GPU-h ÷ (16 GPUs × 24 h) = 50.0 %.
    assert page.context["coverage_pct"] == pytest.approx(50.0)
    assert page.context["coverage_hours"] == 24
    assert "50.0 %" in page.content.decode()


@pytest.mark.django_db
def test_the_overview_counts_the_gpus_of_pools_in_service_only(client, make_user, new_pool):
    """The new pool (8 GPUs) is in service; a retired one (8) and a planned one (8) are
    not: 8 GPUs, by hand, not 24."""
    for slug, since, until in (
        ("retired", datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 6, 1, tzinfo=UTC)),
        ("planned", timezone.now() + timedelta(days=30), None),
    ):
        Pool.objects.create(
            name=slug,
            slug=slug,
            purpose=Purpose.INFERENCE,
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=new_pool.gpu_model,
            gpu_count=8,
            gpus_per_node=8,
            on_demand_price_per_gpu_hour_usd=PRICE,
            in_service_from=since,
            in_service_until=until,
        )
    client.force_login(make_user("reader"))
    page = client.get(reverse("dashboard:overview"))
    assert page.context["gpu_total"] == new_pool.gpu_count == 8
