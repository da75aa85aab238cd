"""The Overview, the reports page, its exports and recompute job, and the interruption
pages, as each role uses them."""

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from openpyxl import load_workbook

from apps.pools.models import Deployment, Interruption, Pool, Purpose, Workload, WorkloadKind
from apps.pools.services import save_pool
from apps.reports.cache import bump_reports_version
from apps.reports.models import RecomputeJob
from apps.telemetry.models import PoolDailyUsage, PoolHourlyUsage
from apps.telemetry.rollups.days import rebuild_days
from tests.waiting import wait_until


def _make_pools(gpu_model, count, *, first=0, hours=48):
    """Cloud pools ``first`` … ``first + count - 1``, each with ``hours`` hourly rows
    ending now, and one workload."""
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    created = []
    for index in range(first, first + count):
        pool = Pool(
            name=f"Pool {index:03d}",
            slug=f"pool-{index:03d}",
            purpose=list(Purpose)[index % 3],
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=gpu_model,
            gpu_count=8,
            gpus_per_node=8,
            on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
            in_service_from=now - timedelta(hours=hours),
        )
        save_pool(pool)
        Workload.objects.create(
            name=f"Workload {index:03d}",
            slug=f"workload-{index:03d}",
            kind=WorkloadKind.ONLINE_INFERENCE,
            pool=pool,
            gpu_count=8,
        )
        created.append(pool)
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=now - timedelta(hours=step),
            reporting_gpus=8,
            capacity_gpu_hours=8,
            busy_gpu_hours=4,
            avg_utilization_pct=50,
        )
        for pool in created
        for step in range(hours)
    )
    rebuild_days(now - timedelta(hours=hours), now + timedelta(hours=1))
    return created


def _query_count(client, url, **headers):
    bump_reports_version()  # count the queries that compute the figures, not a cache hit
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, headers=headers)
    assert response.status_code == 200
    return len(queries.captured_queries)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url_name", "params"),
    [
        ("dashboard:overview", ""),
        ("reports:report", ""),
        ("reports:report", "?group_by=purpose"),
        ("reports:report", "?group_by=workload"),
    ],
)
def test_page_queries_do_not_grow_with_the_number_of_pools(
    client, make_user, gpu_model, url_name, params
):
    """Aggregates in SQL: a query count independent of the fleet's size."""
    client.force_login(make_user("reader"))
    url = reverse(url_name) + params
    _make_pools(gpu_model, 3)
    small = _query_count(client, url)
    _make_pools(gpu_model, 12, first=3)
    large = _query_count(client, url)
    assert large == small, f"{url}: {small} queries with 3 pools, {large} with 15"


@pytest.mark.django_db
def test_overview_shows_the_month_and_the_curves(client, make_user, gpu_model):
    _make_pools(gpu_model, 3, hours=72)
    client.force_login(make_user("procurement"))
    page = client.get(reverse("dashboard:overview")).content.decode()
    for chart in ("chart-busy-split", "chart-cost-share", "chart-hour-of-day", "chart-heatmap"):
        assert f'id="{chart}"' in page, chart
    assert 'id="kpi-utilization"' in page and "50.0 %" in page


@pytest.mark.django_db
def test_overview_without_telemetry_explains_the_empty_charts(client, make_user, pool):
    client.force_login(make_user("reader"))
    page = client.get(reverse("dashboard:overview")).content.decode()
    assert "No telemetry in the last 28 days" in page
    # Cost still accrues for hours without telemetry, shown as unmeasured.
    assert "unmeasured" in page


@pytest.mark.django_db
def test_report_filters_swap_only_the_results(client, make_user, gpu_model):
    _make_pools(gpu_model, 3)
    client.force_login(make_user("reader"))
    url = reverse("reports:report") + "?group_by=purpose&purpose=training"
    fragment = client.get(url, headers={"HX-Request": "true", "HX-Target": "report-results"})
    body = fragment.content.decode()
    assert body.lstrip().startswith('<div id="report-results">')
    assert 'data-key="training"' in body and 'data-key="inference"' not in body
    assert 'id="report-filter"' not in body


@pytest.mark.django_db
def test_report_filter_errors_are_named(client, make_user, pool):
    client.force_login(make_user("reader"))
    page = client.get(
        reverse("reports:report"), {"start": "2026-05-10", "end": "2026-05-01", "tz": "Nowhere"}
    ).content.decode()
    assert "The end day must be on or after the start day." in page
    assert "is not an IANA time zone" in page


@pytest.mark.django_db
def test_exports_carry_units_and_the_same_numbers_as_the_api(client, make_user, gpu_model):
    _make_pools(gpu_model, 3)
    client.force_login(make_user("procurement"))
    today = datetime.now(UTC).date()
    params = {"start": (today - timedelta(days=3)).isoformat(), "end": today.isoformat()}
    api = {
        row["key"]: row
        for row in client.get(
            reverse("api-report-cost"),
            {
                "start": f"{params['start']}T00:00:00Z",
                "end": f"{(today + timedelta(days=1)).isoformat()}T00:00:00Z",
            },
        ).json()
    }
    response = client.get(reverse("reports:report"), {**params, "export": "csv"})
    assert response["Content-Disposition"].startswith("attachment;")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert "Cost (USD)" in rows[0] and "Busy (GPU-hours)" in rows[0]
    *rows, total = rows  # the page's total row closes the file, its key blank
    assert (total["Key"], total["Name"]) == ("", "Total")
    for row in rows:
        assert row["Cost (USD)"] == api[row["Key"]]["cost_usd"]  # both to the cent
    workbook = load_workbook(
        io.BytesIO(client.get(reverse("reports:report"), {**params, "export": "xlsx"}).content)
    )
    sheet = workbook["Cost report"]
    headers = [cell.value for cell in sheet[2]]
    assert "Idle cost (USD)" in headers and "Utilisation (%)" in headers
    key_column, cost_column = headers.index("Key"), headers.index("Cost (USD)")
    exported = {
        row[key_column]: row[cost_column]
        for row in sheet.iter_rows(3, values_only=True)
        if row[key_column]  # not the total row
    }
    assert exported.keys() == api.keys()
    for key, cost in exported.items():
        assert Decimal(str(cost)) == Decimal(api[key]["cost_usd"])


@pytest.mark.django_db
def test_interruption_pages_record_edit_and_delete_with_history(client, make_user, workload):
    Workload.objects.filter(pk=workload.pk).update(checkpoint_interval_minutes=40)
    ops = make_user("ops")
    client.force_login(ops)
    occurred = (timezone.now() - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")
    response = client.post(
        reverse("reports:interruption_create"),
        {
            "workload": workload.pk,
            "occurred_at": occurred,
            "cause": "hardware",
            "restart_minutes": 12,
        },
    )
    assert response.status_code == 302
    interruption = Interruption.objects.get()
    assert interruption.recorded_by == ops
    assert interruption.lost_minutes == 40 / 2 + 12
    page = client.get(interruption.get_absolute_url()).content.decode()
    assert "half the checkpoint interval" in page
    client.post(
        reverse("reports:interruption_edit", kwargs={"pk": interruption.pk}),
        {
            "workload": workload.pk,
            "occurred_at": occurred,
            "cause": "software",
            "restart_minutes": 30,
        },
    )
    interruption.refresh_from_db()
    assert interruption.cause == "software" and interruption.history.count() == 2
    confirm = client.get(reverse("reports:interruption_delete", kwargs={"pk": interruption.pk}))
    assert confirm.status_code == 200 and Interruption.objects.exists()
    client.post(reverse("reports:interruption_delete", kwargs={"pk": interruption.pk}))
    assert not Interruption.objects.exists()


@pytest.mark.django_db
def test_interruption_form_names_the_bad_field(client, make_user, workload):
    client.force_login(make_user("lead"))
    future = (timezone.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    page = client.post(
        reverse("reports:interruption_create"),
        {
            "workload": workload.pk,
            "occurred_at": future,
            "cause": "hardware",
            "restart_minutes": "-3",
            "last_checkpoint_at": (timezone.now() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M"),
        },
    ).content.decode()
    assert "An interruption cannot be in the future." in page
    assert "greater than or equal to 0" in page
    assert "The last checkpoint must be before the interruption." in page
    assert not Interruption.objects.exists()


@pytest.mark.django_db
def test_recompute_is_refused_to_readers(client, make_user):
    client.force_login(make_user("procurement"))
    response = client.post(reverse("reports:recompute_create"), {"start": "2026-01-01"})
    assert response.status_code == 403


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_recompute_job_runs_on_a_real_worker_with_progress(
    client, make_user, gpu_model, celery_worker_process
):
    """The daily rows are dropped; the job rebuilds them a week at a time on a real worker
    while the page polls its progress."""
    pools = _make_pools(gpu_model, 2, hours=24 * 10)
    expected = sorted(PoolDailyUsage.objects.values_list("pool_id", "day", "busy_gpu_hours"))
    PoolDailyUsage.objects.all().delete()
    client.force_login(make_user("lead"))
    today = datetime.now(UTC).date()
    response = client.post(
        reverse("reports:recompute_create"),
        {"start": (today - timedelta(days=11)).isoformat(), "end": today.isoformat()},
    )
    assert response.status_code == 302
    job = RecomputeJob.objects.get()
    url = reverse("reports:recompute_detail", kwargs={"pk": job.pk})
    polling = {"HX-Request": "true", "HX-Target": "recompute-progress"}
    fragment = wait_until(
        lambda: _finished_fragment(client.get(url, headers=polling).content.decode()),
        timeout_seconds=60,
        what="the recompute to finish",
        interval_seconds=0.2,
    )
    job.refresh_from_db()
    assert job.status == "done", job.message
    assert job.progress_pct == 100 and 'id="recompute-pct">100 %' in fragment
    assert (
        sorted(PoolDailyUsage.objects.values_list("pool_id", "day", "busy_gpu_hours")) == expected
    )
    assert len(pools) == 2


@pytest.mark.django_db(transaction=True)
def test_cached_figures_follow_new_rollups_and_interruptions(client, make_user, workload):
    """The Overview is cached (apps/reports/cache.py) yet never older than its data: a
    rollup or a recorded interruption makes the cached figures unreachable."""
    from apps.telemetry.rollups.days import rollup_pool_days

    client.force_login(make_user("reader"))
    url = reverse("dashboard:overview")
    assert "No telemetry in the last 28 days" in client.get(url).content.decode()

    # An hourly row written behind the rollups' back is not seen: the page is cached.
    hour = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    PoolHourlyUsage.objects.create(
        pool=workload.pool,
        hour=hour,
        reporting_gpus=16,
        capacity_gpu_hours=16,
        busy_gpu_hours=12,
        avg_utilization_pct=75,
    )
    # (Uncached, the 24-h utilisation would read it from the hourly rows: 75.0 %.)
    assert "75.0 %" not in client.get(url).content.decode()
    # The rollups' own write path invalidates it.
    rollup_pool_days([workload.pool_id], hour, hour + timedelta(hours=1))
    after_rollup = client.get(url).content.decode()
    assert "75.0 %" in after_rollup  # utilisation of the last 24 h: 12 of 16 GPU-hours

    Workload.objects.filter(pk=workload.pk).update(checkpoint_interval_minutes=60)
    Interruption.objects.create(
        workload=workload, occurred_at=hour, cause="hardware", restart_minutes=30
    )
    after_interruption = client.get(url).content.decode()
    # (30 min half-interval + 30 min restart) × 8 GPUs = 8 GPU-hours lost.
    assert "8 GPU-h lost to interruptions" in after_interruption


@pytest.mark.django_db
def test_a_link_naming_some_filters_shows_the_others_defaults(client, make_user, pool):
    client.force_login(make_user("reader"))
    today = datetime.now(UTC).date()
    start = (today - timedelta(days=9)).isoformat()
    page = client.get(reverse("reports:report"), {"start": start}).content.decode()
    assert f'name="start" value="{start}"' in page
    assert f'name="end" value="{today.isoformat()}"' in page  # was blank
    assert 'name="tz" value="UTC"' in page
    assert '<option value="pool" selected>' in page


def _finished_fragment(fragment):
    """The progress fragment once it no longer asks to be polled again, else None."""
    return fragment if "hx-trigger" not in fragment else None
