"""Report pages recomputed by a worker after a change (apps/reports/cache.py): the pages
viewed lately are warmed, and a long range no page has cached yet is computed in the
background while the page shows its progress."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.pools.models import Pool
from apps.reports import cache as report_cache
from apps.reports.cache import (
    bump_reports_version,
    cached_value,
    recent_views,
    remember_view,
)
from apps.reports.warming import warm_recent_views, warm_view
from apps.telemetry.models import PoolHourlyUsage
from tests.reports.test_views import _make_pools
from tests.waiting import wait_until

ROLLUP_TABLES = ("telemetry_poolhourlyusage", "reports_pooldailyusage")
AGGREGATES = ("SUM(", "COUNT(", "MIN(", "percentile_cont")
RESULTS = {"HX-Request": "true", "HX-Target": "report-results"}


def _without_tokens(html: str) -> str:
    # Each response carries its own CSRF token (the sign-out form) and CSP nonce (the base
    # template's scripts); the figures do not.
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)
    html = re.sub(r'"X-CSRFToken": "[^"]*"', "", html)
    return re.sub(r'nonce="[^"]*"', "", html)


def _rollup_queries(client, url, **headers):
    """The response, and its queries that aggregate the rollup tables (the pool page's
    own 14-day utilisation chart reads that pool's hourly rows as they are, ~336 rows by
    the (pool, hour) key; that is telemetry's chart, not a report figure)."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, headers=headers)
    assert response.status_code == 200
    reads = [
        q["sql"]
        for q in captured.captured_queries
        if any(table in q["sql"] for table in ROLLUP_TABLES)
        and any(aggregate in q["sql"] for aggregate in AGGREGATES)
    ]
    return response.content.decode(), reads


def _wait_for_next_hour_if_at_its_end():
    # Cached figures are keyed by the UTC hour; a test that spans an hour change would
    # look for them under the next hour's key.
    now = timezone.now()
    if now.minute == 59 and now.second >= 15:
        wait_until(
            lambda: timezone.now().hour != now.hour,
            timeout_seconds=61,
            what="the next UTC hour",
            interval_seconds=0.5,
        )


@pytest.mark.django_db
def test_remember_view_keeps_recent_pages_most_recent_first(monkeypatch):
    clock = [1_000_000.0]
    monkeypatch.setattr(report_cache.time, "time", lambda: clock[0])
    report_cache.cache.delete(report_cache.RECENT_KEY)
    remember_view("overview")
    clock[0] += 120
    remember_view("report", "group_by=purpose")
    clock[0] += 120
    remember_view("pool", "7")
    assert recent_views() == [("pool", "7"), ("report", "group_by=purpose"), ("overview", "")]
    # Seen again: first again.
    clock[0] += 120
    remember_view("overview")
    assert recent_views()[0] == ("overview", "")
    # Pages nobody looked at for the window's length are not warmed any more.
    clock[0] += report_cache.RECENT_WINDOW_SECONDS - 200
    assert recent_views() == [("overview", ""), ("pool", "7")]


@pytest.mark.django_db
def test_a_warm_up_serves_every_viewed_page_without_reading_the_rollups(
    client, make_user, gpu_model
):
    """After a change, warm_recent_views (what the worker runs) recomputes the pages viewed
    lately; the next visit reads no rollup row and shows what computing it in the request
    shows."""
    _wait_for_next_hour_if_at_its_end()
    report_cache.cache.delete(report_cache.RECENT_KEY)
    pools = _make_pools(gpu_model, 3, hours=72)
    client.force_login(make_user("reader"))
    # The pool page's cost panel, which the page loads from reports.
    pool_url = reverse("reports:pool_panel", kwargs={"slug": pools[0].slug})
    pages = [
        (reverse("dashboard:overview"), {}),
        (reverse("reports:report"), RESULTS),
        (reverse("reports:report") + "?group_by=purpose&tz=Asia%2FShanghai", RESULTS),
        (pool_url, {}),
    ]
    computed = {}
    for url, headers in pages:
        bump_reports_version()
        html, reads = _rollup_queries(client, url, **headers)
        assert reads, f"{url} was expected to compute its figures"
        computed[url] = _without_tokens(html)
    assert len(recent_views()) == 4

    bump_reports_version()  # a rollup
    assert cached_value("overview", {"scope": "t"}) is None
    assert warm_recent_views() == 4
    for url, headers in pages:
        html, reads = _rollup_queries(client, url, **headers)
        assert reads == [], f"{url} read the rollups after the warm-up: {reads}"
        assert _without_tokens(html) == computed[url], url


@pytest.mark.django_db
def test_warm_view_skips_pages_that_no_longer_exist(gpu_model):
    pool = _make_pools(gpu_model, 1)[0]
    pool_id = pool.pk
    pool.workloads.all().delete()
    # A pool with usage history is archived, never deleted: only one without history goes.
    pool.hourly_usage.all().delete()
    pool.daily_usage.all().delete()
    Pool.objects.filter(pk=pool_id).delete()
    assert warm_view("pool", str(pool_id)) is False
    assert warm_view("report", "start=2026-05-10&end=2026-05-01") is False
    assert warm_view("report", "tz=Nowhere") is False
    assert warm_view("overview") is True


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_rollup_queues_a_warm_up_on_a_real_worker(
    client, make_user, gpu_model, settings, celery_worker_process
):
    """The rollup's commit queues the warm-up; the worker recomputes the Overview someone
    viewed, with the new hour in it, before anyone asks again."""
    from apps.telemetry.rollups.days import rollup_pool_days

    settings.REPORTS_WARM_UP = True
    _wait_for_next_hour_if_at_its_end()
    report_cache.cache.delete(report_cache.RECENT_KEY)
    report_cache.cache.delete(report_cache.WARM_FLAG_KEY)
    pool = _make_pools(gpu_model, 1, hours=24)[0]
    client.force_login(make_user("reader"))
    url = reverse("dashboard:overview")
    assert "50.0 %" in client.get(url).content.decode()  # 4 of 8 GPU-hours every hour

    hour = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=30)
    # An hour inside the pool's service period: the Overview sums no other.
    Pool.objects.filter(pk=pool.pk).update(in_service_from=hour)
    PoolHourlyUsage.objects.create(
        pool=pool,
        hour=hour,
        reporting_gpus=8,
        capacity_gpu_hours=8,
        busy_gpu_hours=8,
        avg_utilization_pct=100,
    )
    rollup_pool_days([pool.pk], hour, hour + timedelta(hours=1))
    wait_until(
        lambda: cached_value("overview", {"scope": "t"}) is not None,
        timeout_seconds=60,
        what="a warm-up to fill the Overview",
        interval_seconds=0.2,
    )
    html, reads = _rollup_queries(client, url)
    assert reads == []
    # 7-day utilisation now counts the full hour: (24 × 4 + 8) ÷ (25 × 8) = 52.0 %.
    assert "52.0 %" in html


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_long_range_is_computed_by_a_worker_while_the_page_shows_progress(
    client, make_user, gpu_model, settings, celery_worker_process
):
    settings.REPORTS_WARM_UP = True
    _wait_for_next_hour_if_at_its_end()
    _make_pools(gpu_model, 2, hours=24 * 40)
    client.force_login(make_user("reader"))
    start = (datetime.now(UTC) - timedelta(days=59)).date().isoformat()
    url = reverse("reports:report") + f"?start={start}&group_by=pool"

    first = client.get(url, headers=RESULTS).content.decode()
    assert 'id="report-progress-pct"' in first and 'hx-trigger="load delay:1s"' in first
    assert 'id="report-table"' not in first
    fragment = wait_until(
        lambda: _with_table(client.get(url, headers=RESULTS).content.decode()),
        timeout_seconds=60,
        what="the worker to compute the report",
        interval_seconds=0.3,
    )
    assert "hx-trigger" not in fragment.split('id="report-table"')[0]

    # The same figures as computing them in the request.
    bump_reports_version()
    inline = client.get(url + "&compute=inline", headers=RESULTS).content.decode()
    table = re.compile(
        r'<table class="table card-table table-vcenter table-sm" id="report-table">.*?</table>',
        re.S,
    )
    assert table.search(fragment).group(0) == table.search(inline).group(0)


@pytest.mark.django_db
def test_a_failed_background_report_stops_polling_and_says_why(
    client, make_user, gpu_model, settings, monkeypatch
):
    from apps.reports.cache import report_job, start_background_job
    from apps.reports.cost import report
    from apps.reports.warming import compute_report_in_background

    settings.REPORTS_WARM_UP = True
    settings.CELERY_TASK_ALWAYS_EAGER = False
    _make_pools(gpu_model, 1)
    start = (datetime.now(UTC) - timedelta(days=59)).date().isoformat()
    query = f"start={start}&group_by=pool"
    # Queued for the reader's scope (no team: "t"): the page will not queue another.
    assert start_background_job("report", report_job(query, "t"))

    def out_of_disk(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(report, "cost_report", out_of_disk)
    with pytest.raises(OSError):
        compute_report_in_background(query, None, "t")  # what the worker runs
    client.force_login(make_user("reader"))
    fragment = client.get(reverse("reports:report") + "?" + query, headers=RESULTS)
    body = fragment.content.decode()
    assert 'id="report-progress-error"' in body and "No space left on device" in body
    assert "hx-trigger" not in body  # the page stops polling
    assert "compute=inline" in body


def test_every_beat_entry_names_a_registered_task(settings):
    """A typo in a task name would only show as a KeyError in beat's log; the hourly
    warm-up is this issue's, the check covers every entry."""
    from config.celery_app import app as celery_app

    celery_app.loader.import_default_modules()
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        assert entry["task"] in celery_app.tasks, f"{name}: {entry['task']} is not a task"
    hourly = settings.CELERY_BEAT_SCHEDULE["warm-report-cache"]["schedule"]
    assert hourly.minute == {0} and hourly.hour == set(range(24))


def _with_table(fragment):
    """The results fragment once it holds the report's table, else None."""
    return fragment if 'id="report-table"' in fragment else None
