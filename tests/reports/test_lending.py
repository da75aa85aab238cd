"""Lendable off-peak capacity (apps/reports/lending/capacity.py) against numbers worked out by
hand, a percentile computed in Python over the same rows, and a query written with
PostgreSQL's own ``AT TIME ZONE``; its margin, too-little-data flag, windows, team scope
and CSV export."""

import csv
import io
import statistics
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from apps.pools.models import Purpose
from apps.reports.lending import capacity as lending
from apps.telemetry.models import PoolHourlyUsage
from tests.factories import PoolFactory, TeamFactory, UserFactory

# A Monday, half past midnight UTC: the window is the 28 days from Monday 2 Feb 2026
# 00:00 UTC to Monday 2 Mar 2026 00:00 UTC, four whole weeks.
NOW = datetime(2026, 3, 2, 0, 30, tzinfo=UTC)
WINDOW_START = datetime(2026, 2, 2, tzinfo=UTC)
DAY_HOURS = range(8, 20)  # local 08:00–19:59: busy


def _busy_gpus(local_hour: int, week: int) -> float:
    """Days: 19 busy GPUs. Nights: 1, 2, 3, 4 busy GPUs in weeks 0, 1, 2, 3."""
    return 19.0 if local_hour in DAY_HOURS else float(week + 1)


def _inference_pool(name, *, gpu_count=20, zone="UTC", team=None):
    return PoolFactory(
        name=name,
        purpose=Purpose.INFERENCE,
        gpu_count=gpu_count,
        gpus_per_node=1,
        timezone=zone,
        team=team,
        on_demand_price_per_gpu_hour_usd=Decimal("2.50"),
    )


def _fill(pool, *, skip=lambda hour: False):
    """28 days of hourly rollups in the pattern of ``_busy_gpus``, in the pool's zone."""
    zone = ZoneInfo(pool.timezone)
    rows = []
    for step in range(28 * 24):
        hour = WINDOW_START + timedelta(hours=step)
        if skip(hour):
            continue
        busy = _busy_gpus(hour.astimezone(zone).hour, step // (7 * 24))
        rows.append(
            PoolHourlyUsage(
                pool=pool,
                hour=hour,
                reporting_gpus=pool.gpu_count,
                capacity_gpu_hours=pool.gpu_count,
                busy_gpu_hours=busy,
                avg_utilization_pct=100 * busy / pool.gpu_count,
                max_utilization_pct=100 * busy / pool.gpu_count,
            )
        )
    # Hours outside the window count for nothing: one before it, the current one after.
    for hour in (WINDOW_START - timedelta(hours=1), NOW.replace(minute=0)):
        rows.append(
            PoolHourlyUsage(
                pool=pool,
                hour=hour,
                reporting_gpus=pool.gpu_count,
                capacity_gpu_hours=pool.gpu_count,
                busy_gpu_hours=pool.gpu_count,
            )
        )
    PoolHourlyUsage.objects.bulk_create(rows)


@pytest.fixture
def frozen_now(monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    return NOW


# --- the arithmetic ------------------------------------------------------------------------


def test_margin_is_a_whole_share_rounded_up():
    assert lending.safety_margin_gpus(20, 10) == 2
    assert lending.safety_margin_gpus(25, 10) == 3  # ⌈2.5⌉
    assert lending.safety_margin_gpus(30, 10) == 3  # not ⌈3.0000000000000004⌉ = 4
    assert lending.safety_margin_gpus(1, 10) == 1
    assert lending.safety_margin_gpus(8, 0) == 0
    assert lending.safety_margin_gpus(8, -5) == 0


def test_free_gpus_are_whole_and_never_negative():
    assert lending.free_gpus(20, 3.85, 2) == 14  # ⌊14.15⌋
    assert lending.free_gpus(20, 19.0, 2) == 0  # −1 → 0
    # Interpolation noise a hair above a whole GPU does not cost the GPU.
    assert lending.free_gpus(20, 3.0000000000001, 2) == 15


def test_windows_are_runs_within_a_weekday():
    grid = [[0] * 24 for _ in range(7)]
    grid[0][1:7] = [6, 6, 7, 8, 6, 6]  # Mon 01:00–07:00
    grid[0][23] = 2  # Mon 23:00–24:00 …
    grid[1][0] = 3  # … and Tue 00:00–01:00: two windows, split at midnight
    grid[2][5] = None  # too little data is not lendable
    windows = lending.lendable_windows(grid)
    assert [(w.label, w.gpus, w.gpu_hours) for w in windows] == [
        ("Mon 01:00–07:00", 6, 39),
        ("Mon 23:00–24:00", 2, 2),
        ("Tue 00:00–01:00", 3, 3),
    ]


# --- the figure from rollups --------------------------------------------------------------


@pytest.mark.django_db
def test_lendable_gpu_hours_worked_out_by_hand():
    pool = _inference_pool("Serve")
    _fill(pool)
    result = lending.pool_lendable(pool, NOW)
    # Margin ⌈20 × 10 %⌉ = 2 GPUs. Each of the 168 slots has 4 observations.
    # Days (08–19 h): p95 of [19, 19, 19, 19] = 19 → free max(0, ⌊20 − 19 − 2⌋) = 0.
    # Nights (00–07 h, 20–23 h): p95 of [1, 2, 3, 4] by linear interpolation is at rank
    # 0.95 × 3 = 2.85 → 3 + 0.85 × (4 − 3) = 3.85 → free ⌊20 − 3.85 − 2⌋ = ⌊14.15⌋ = 14.
    # Per week: 7 days × 12 night hours × 14 GPUs = 1176 GPU-hours, × $2.50 = $2940.
    assert result.margin_gpus == 2
    assert result.slots_without_data == 0
    assert result.p95_busy_gpus[0][3] == pytest.approx(3.85)
    assert result.p95_busy_gpus[0][12] == pytest.approx(19.0)
    assert result.lendable_gpu_hours_per_week == 1176
    assert float(pool.effective_price_per_gpu_hour_usd) == 2.5
    assert result.value_usd_per_week == pytest.approx(2940.0)
    # Two windows a day: 00:00–08:00 (8 h × 14 = 112 GPU-h) and 20:00–24:00 (56 GPU-h).
    assert len(result.windows) == 14
    assert [(w.label, w.gpus, w.gpu_hours) for w in result.windows[:2]] == [
        ("Mon 00:00–08:00", 14, 112),
        ("Mon 20:00–24:00", 14, 56),
    ]
    assert result.largest_window.label == "Mon 00:00–08:00"


@pytest.mark.django_db
def test_margin_follows_the_pool_and_the_setting(settings):
    pool = _inference_pool("Serve 25", gpu_count=25)
    _fill(pool)
    result = lending.pool_lendable(pool, NOW)
    # Margin ⌈25 × 10 %⌉ = ⌈2.5⌉ = 3. Nights ⌊25 − 3.85 − 3⌋ = 18, days ⌊25 − 19 − 3⌋ = 3:
    # 7 × (12 × 18 + 12 × 3) = 7 × 252 = 1764 GPU-hours; each day is one 24-hour window
    # with 3 GPUs free throughout.
    assert result.margin_gpus == 3
    assert result.lendable_gpu_hours_per_week == 1764
    assert [(w.label, w.gpus, w.gpu_hours) for w in result.windows[:1]] == [
        ("Mon 00:00–24:00", 3, 252)
    ]
    settings.LENDING_SAFETY_MARGIN_PCT = 0
    # No margin: nights ⌊25 − 3.85⌋ = 21, days 25 − 19 = 6 → 7 × (12 × 21 + 12 × 6) = 2268.
    assert lending.pool_lendable(pool, NOW).lendable_gpu_hours_per_week == 2268


@pytest.mark.django_db
def test_hours_with_too_little_data_are_counted_and_not_lent():
    pool = _inference_pool("Serve new")
    # Mondays keep only their last week's hours: one observation per Monday slot.
    last_week = datetime(2026, 2, 23, tzinfo=UTC)
    _fill(pool, skip=lambda hour: hour.isoweekday() == 1 and hour < last_week)
    result = lending.pool_lendable(pool, NOW)
    assert result.slots_without_data == 24
    assert result.free_gpus[0] == [None] * 24
    assert result.observations[0][3] == 1
    # The six other weekdays as by hand: 6 × 12 × 14 = 1008 GPU-hours.
    assert result.lendable_gpu_hours_per_week == 1008
    assert result.windows[0].label == "Tue 00:00–08:00"

    fresh = _inference_pool("Serve fresh")
    result = lending.pool_lendable(fresh, NOW)
    assert result.slots_without_data == 168
    assert not result.has_data
    assert result.lendable_gpu_hours_per_week == 0
    assert result.windows == []


@pytest.mark.django_db
def test_hours_without_telemetry_are_not_observations():
    pool = _inference_pool("Serve dark")
    _fill(pool)
    # No GPU reporting: not a measured hour, whatever its stored busy figure.
    PoolHourlyUsage.objects.filter(pool=pool, hour__lt=WINDOW_START + timedelta(days=21)).update(
        reporting_gpus=0
    )
    assert lending.pool_lendable(pool, NOW).slots_without_data == 168


@pytest.mark.django_db
def test_gpus_that_do_not_report_are_counted_busy_and_never_lent():
    pool = _inference_pool("Serve half dark")  # 20 GPUs, margin ⌈2⌉ = 2
    _fill(pool)
    # Only 10 of the 20 GPUs report, 3 of them busy, in every hour of the window.
    PoolHourlyUsage.objects.filter(pool=pool).update(
        reporting_gpus=10, capacity_gpu_hours=10.0, busy_gpu_hours=3.0
    )
    result = lending.pool_lendable(pool, NOW)
    # By hand: 3 busy + 10 unseen = 13 demand; ⌊20 − 13 − 2⌋ = 5 free in each of the 168
    # slots = 840 GPU-hours, where the 3 measured busy GPUs alone would say 15 free (2,520).
    assert result.free_gpus == [[5] * 24 for _ in range(7)]
    assert result.lendable_gpu_hours_per_week == 5 * 168 == 840
    # 2 of 20 reporting, 1 busy: 19 in demand, nothing to lend.
    PoolHourlyUsage.objects.filter(pool=pool).update(
        reporting_gpus=2, capacity_gpu_hours=2.0, busy_gpu_hours=1.0
    )
    assert lending.pool_lendable(pool, NOW).lendable_gpu_hours_per_week == 0


def _python_free_grid(pool):
    """Free GPUs per slot from the same rows, grouped by zoneinfo and percentiled by the
    standard library (``statistics.quantiles``' inclusive method is linear
    interpolation between closest ranks)."""
    zone = ZoneInfo(pool.timezone)
    busy = defaultdict(list)
    rows = PoolHourlyUsage.objects.filter(
        pool=pool, hour__gte=WINDOW_START, hour__lt=NOW.replace(minute=0), reporting_gpus__gt=0
    )
    for hour, busy_gpu_hours in rows.values_list("hour", "busy_gpu_hours"):
        local = hour.astimezone(zone)
        busy[(local.isoweekday(), local.hour)].append(busy_gpu_hours)
    margin = -(-pool.gpu_count // 10)
    grid = [[None] * 24 for _ in range(7)]
    for (weekday, hour), values in busy.items():
        if len(values) < 2:
            continue
        p95 = statistics.quantiles(values, n=100, method="inclusive")[94]
        grid[weekday - 1][hour] = max(0, int(pool.gpu_count - p95 - margin + 1e-9))
    return grid


SQL_FREE_GPUS = """
SELECT EXTRACT(ISODOW FROM hour AT TIME ZONE %(zone)s)::int AS weekday,
       EXTRACT(HOUR FROM hour AT TIME ZONE %(zone)s)::int AS local_hour,
       COUNT(*) AS observations,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY busy_gpu_hours) AS p95
FROM telemetry_poolhourlyusage
WHERE pool_id = %(pool)s AND hour >= %(start)s AND hour < %(end)s AND reporting_gpus > 0
GROUP BY 1, 2
"""


@pytest.mark.django_db
def test_matches_python_and_at_time_zone_in_another_zone():
    pool = _inference_pool("Serve Shanghai", gpu_count=24, zone="Asia/Shanghai")
    _fill(pool)
    result = lending.pool_lendable(pool, NOW)
    assert result.free_gpus == _python_free_grid(pool)
    with connection.cursor() as cursor:
        cursor.execute(
            SQL_FREE_GPUS,
            {
                "zone": "Asia/Shanghai",
                "pool": pool.id,
                "start": WINDOW_START,
                "end": NOW.replace(minute=0),
            },
        )
        sql_total = sum(
            max(0, int(pool.gpu_count - p95 - 3 + 1e-9))
            for _weekday, _hour, observations, p95 in cursor.fetchall()
            if observations >= 2
        )
    # By hand: margin ⌈2.4⌉ = 3; nights ⌊24 − 3.85 − 3⌋ = 17, days ⌊24 − 19 − 3⌋ = 2 →
    # 7 × (12 × 17 + 12 × 2) = 1596 GPU-hours, in Shanghai's local hours.
    assert result.lendable_gpu_hours_per_week == sql_total == 1596
    assert result.windows[0].label == "Mon 00:00–24:00"


# --- pages, API, scope, export ------------------------------------------------------------


@pytest.fixture
def two_teams(db):
    team_a, team_b = TeamFactory(name="Team A"), TeamFactory(name="Team B")
    pool = _inference_pool("Team A serving", team=team_a)
    _fill(pool)
    return team_a, team_b, pool


@pytest.mark.django_db
def test_pool_panel_shows_the_figure_and_its_explanation(client, frozen_now, two_teams):
    team_a, _team_b, pool = two_teams
    client.force_login(UserFactory(teams=[team_a]))
    page = client.get(pool.get_absolute_url()).content.decode()
    assert reverse("reports:pool_lending_panel", kwargs={"slug": pool.slug}) in page
    body = client.get(reverse("reports:pool_lending_panel", kwargs={"slug": pool.slug})).content
    body = body.decode()
    assert "1,176 GPU-h/week" in body
    assert "$2,940" in body
    assert "Mon 00:00–08:00" in body
    assert "10 % of 20 GPUs, rounded up" in body
    assert "chart-pool-free-gpus" in body
    assert "95th percentile" in body


@pytest.mark.django_db
def test_pool_panel_without_enough_data_says_so(client, frozen_now, make_user):
    pool = _inference_pool("Serve empty")
    client.force_login(make_user("reader"))
    body = client.get(reverse("reports:pool_lending_panel", kwargs={"slug": pool.slug}))
    assert 'id="lending-empty"' in body.content.decode()


@pytest.mark.django_db
def test_other_teams_pool_is_404_and_unlisted(client, frozen_now, two_teams):
    team_a, team_b, pool = two_teams
    urls = [
        reverse("reports:pool_lending_panel", kwargs={"slug": pool.slug}),
        reverse("pool-lendable", kwargs={"slug": pool.slug}),
    ]
    client.force_login(UserFactory(teams=[team_b]))
    for url in urls:
        assert client.get(url).status_code == 404, url
    assert pool.name not in client.get(reverse("reports:lendable_list")).content.decode()
    assert client.get(reverse("lendable-list")).json() == []
    client.force_login(UserFactory(teams=[team_a]))
    for url in urls:
        assert client.get(url).status_code == 200, url
    assert pool.name in client.get(reverse("reports:lendable_list")).content.decode()


@pytest.mark.django_db
def test_api_fields_carry_units(client, frozen_now, two_teams):
    team_a, _team_b, pool = two_teams
    client.force_login(UserFactory(teams=[team_a]))
    data = client.get(reverse("pool-lendable", kwargs={"slug": pool.slug})).json()
    assert data["is_inference_pool"] is True
    assert data["lendable_gpu_hours_per_week"] == 1176
    # 1176 GPU-hours × $2.50 = $2,940.00
    assert data["value_usd_per_week"] == "2940.00"
    assert data["slots_without_data"] == 0
    assert data["safety_margin_gpus"] == 2
    assert data["windows"][0] == {
        "weekday": 1,
        "weekday_name": "Mon",
        "start_hour": 0,
        "end_hour": 8,
        "hours": 8,
        "gpus": 14,
        "gpu_hours": 112,
        "label": "Mon 00:00–08:00",
    }
    listed = client.get(reverse("lendable-list")).json()
    assert [row["pool"] for row in listed] == [pool.slug]


@pytest.mark.django_db
def test_api_on_a_training_pool_says_it_does_not_apply(client, pool, make_user):
    client.force_login(make_user("reader"))
    data = client.get(reverse("pool-lendable", kwargs={"slug": pool.slug})).json()
    assert data["is_inference_pool"] is False
    assert data["lendable_gpu_hours_per_week"] is None


@pytest.mark.django_db
def test_list_totals_add_up_sorts_and_exports_names_as_data(client, frozen_now, make_user):
    big = _inference_pool("=HYPERLINK(1)", gpu_count=25)
    small = _inference_pool("Serve small")
    _fill(big)
    _fill(small)
    client.force_login(make_user("reader"))
    page = client.get(reverse("reports:lendable_list"), {"sort": "lendable"}).content.decode()
    # Ascending: 1176 before 1764; the total 2940 GPU-h and 2940 + 4410 = $7,350.
    assert page.index("Serve small") < page.index("=HYPERLINK(1)")
    assert "2,940" in page and "$7,350" in page
    fragment = client.get(
        reverse("reports:lendable_list"),
        {"sort": "-value"},
        headers={"HX-Request": "true", "HX-Target": "lendable-table"},
    ).content.decode()
    assert fragment.lstrip().startswith('<div id="lendable-table">')
    response = client.get(reverse("reports:lendable_list"), {"export": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    header, *pools, total = rows
    assert header[5] == "Lendable (GPU-hours per week)"
    assert [row[0] for row in pools] == ["'=HYPERLINK(1)", "Serve small"]
    assert [row[5] for row in pools] == ["1764", "1176"]
    assert total[0] == "Total"
    assert int(total[5]) == sum(int(row[5]) for row in pools) == 2940
    assert float(total[6]) == pytest.approx(sum(float(row[6]) for row in pools)) == 7350


@pytest.mark.django_db
def test_pages_in_chinese(client, frozen_now, make_user):
    pool = _inference_pool("Serve zh")
    _fill(pool)
    client.force_login(make_user("reader"))
    chinese = {"Accept-Language": "zh-CN,zh;q=0.9"}
    listed = client.get(reverse("reports:lendable_list"), headers=chinese).content.decode()
    assert "可出借的低谷算力" in listed and "GPU 小时/周" in listed
    panel = client.get(
        reverse("reports:pool_lending_panel", kwargs={"slug": pool.slug}), headers=chinese
    ).content.decode()
    assert "1,176 GPU 小时/周" in panel
    assert "Mon 00:00" not in panel


@pytest.mark.django_db
def test_every_lending_page_answers_200_for_pools_with_and_without_data(
    client, frozen_now, make_user
):
    """The lazy panel of an inference pool just created, of one with a month of rollups, of
    one whose only hours have no telemetry, and the fleet list over all of them (in
    several time zones), as page, table fragment, CSV and API."""
    fresh = _inference_pool("Serve fresh")
    filled = _inference_pool("Serve filled", zone="Asia/Shanghai")
    _fill(filled)
    silent = _inference_pool("Serve silent", zone="America/New_York")
    PoolHourlyUsage.objects.create(
        pool=silent, hour=WINDOW_START, reporting_gpus=0, capacity_gpu_hours=20, busy_gpu_hours=0
    )
    client.force_login(make_user("reader"))
    for pool in (fresh, filled, silent):
        page = client.get(pool.get_absolute_url())
        assert page.status_code == 200
        panel_url = reverse("reports:pool_lending_panel", kwargs={"slug": pool.slug})
        assert panel_url in page.content.decode()
        panel = client.get(panel_url, headers={"HX-Request": "true"})
        assert panel.status_code == 200, panel.content.decode()[:2000]
        has_data = pool is filled
        assert ('id="lending-empty"' in panel.content.decode()) is not has_data
        api = client.get(reverse("pool-lendable", kwargs={"slug": pool.slug}))
        assert api.status_code == 200
        assert api.json()["slots_without_data"] == (0 if has_data else 168)
    listed = client.get(reverse("reports:lendable_list"))
    assert listed.status_code == 200
    body = listed.content.decode()
    assert all(pool.name in body for pool in (fresh, filled, silent))
    fragment = client.get(
        reverse("reports:lendable_list"),
        {"sort": "-value"},
        headers={"HX-Request": "true", "HX-Target": "lendable-table"},
    )
    assert fragment.status_code == 200
    exported = client.get(reverse("reports:lendable_list"), {"export": "csv"})
    assert exported.status_code == 200
    assert len(list(csv.reader(io.StringIO(exported.content.decode())))) == 1 + 3 + 1
    assert client.get(reverse("lendable-list")).status_code == 200
