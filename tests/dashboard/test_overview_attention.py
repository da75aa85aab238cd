"""The Overview answers "where do our GPU dollars go and what is idle?" at a glance: pools
ranked by idle dollars over the last 7 and 30 days with their utilisation and cost, the
fleet's 30-day figures, and what needs a person, each with a link.

Hand computation (docs/user-guide/reports.md, FORMULAS.md: a paid hour costs GPUs × price; idle
cost = measured cost × (1 − busy ÷ measured GPU-hours) over the hours with telemetry):
- Busy: 8 GPUs at 2.00 USD/GPU-h, in service for 60 days; telemetry on each of the last 48
  hours at 6 busy GPUs (75 %). 30 days: cost 720 h × 8 × 2 = 11,520 USD; idle 48 × 16 ×
  (1 − 6/8) = 192 USD; 7 days: idle 192 USD as well.
- Idle: 4 GPUs at 3.00 USD/GPU-h, in service 60 days, telemetry on the last 48 hours at
  1 busy GPU (25 %): 30-day cost 720 × 4 × 3 = 8,640 USD; idle 48 × 12 × 0.75 = 432 USD.
- Silent: 8 GPUs at 1.00, in service 60 days, no telemetry: cost 5,760 USD, idle — .
Fleet 30 days: cost 25,920 USD, idle 624 USD, utilisation (48 × 6 + 48 × 1) ÷ (48 × 8 +
48 × 4) = 336 ÷ 576 = 58.3 %.
"""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.dashboard import selectors as overview_selectors
from apps.pools.hours import floor_hour
from apps.pools.models import Purpose
from apps.reports import selectors
from apps.telemetry.models import GpuDevice, PoolHourFlag, PoolHourlyUsage
from apps.telemetry.rollups.days import rebuild_days
from tests.factories import PoolFactory
from tests.reports.test_pool_list_columns import _wait_for_next_hour_if_at_its_end


def _pool(gpu_model, name, gpus, price, since):
    return PoolFactory(
        name=name,
        slug=name.lower(),
        purpose=Purpose.INFERENCE,
        gpus_per_node=4,
        gpu_count=gpus,
        on_demand_price_per_gpu_hour_usd=Decimal(price),
        in_service_from=since,
        gpu_model=gpu_model,
    )


@pytest.fixture
def fleet(gpu_model):
    _wait_for_next_hour_if_at_its_end()
    end = floor_hour(timezone.now()) + timedelta(hours=1)
    since = end - timedelta(days=60)
    busy = _pool(gpu_model, "Busy", 8, "2.00", since)
    idle = _pool(gpu_model, "Idle", 4, "3.00", since)
    silent = _pool(gpu_model, "Silent", 8, "1.00", since)
    rows = []
    for pool, busy_gpus in ((busy, 6), (idle, 1)):
        for step in range(1, 49):
            rows.append(
                PoolHourlyUsage(
                    pool=pool,
                    hour=end - timedelta(hours=step),
                    reporting_gpus=pool.gpu_count,
                    capacity_gpu_hours=pool.gpu_count,
                    busy_gpu_hours=busy_gpus,
                    avg_utilization_pct=100 * busy_gpus / pool.gpu_count,
                    max_utilization_pct=100 * busy_gpus / pool.gpu_count,
                )
            )
    PoolHourlyUsage.objects.bulk_create(rows)
    rebuild_days(since - timedelta(days=1), end + timedelta(days=1))
    return {"busy": busy, "idle": idle, "silent": silent, "end": end}


@pytest.mark.django_db
def test_pools_are_ranked_by_idle_dollars_with_hand_computed_figures(fleet):
    ranking = overview_selectors.idle_ranking(timezone.now())
    rows = {row["slug"]: row for row in ranking["rows"]}
    assert [row["slug"] for row in ranking["rows"]] == ["idle", "busy", "silent"]
    assert rows["busy"]["cost_30d_usd"] == pytest.approx(11_520)
    assert rows["busy"]["idle_30d_usd"] == pytest.approx(192)
    assert rows["busy"]["idle_7d_usd"] == pytest.approx(192)
    assert rows["busy"]["utilization_30d_pct"] == pytest.approx(75)
    assert rows["idle"]["idle_30d_usd"] == pytest.approx(432)
    assert rows["idle"]["cost_30d_usd"] == pytest.approx(8_640)
    assert rows["silent"]["idle_30d_usd"] is None and rows["silent"]["cost_30d_usd"] == (
        pytest.approx(5_760)
    )
    fleet_30d = ranking["fleet_30d"]
    assert fleet_30d["cost_usd"] == pytest.approx(25_920)
    assert fleet_30d["idle_cost_usd"] == pytest.approx(624)
    assert fleet_30d["utilization_pct"] == pytest.approx(100 * 336 / 576)


@pytest.mark.django_db
def test_the_ranking_agrees_with_the_pool_list(fleet):
    """The same 30-day window and maths as the pool list's columns."""
    now = timezone.now()
    listed = selectors.pool_list_figures(now)
    for row in overview_selectors.idle_ranking(now)["rows"]:
        assert row["idle_30d_usd"] == listed[row["slug"]]["idle_cost_usd"]
        assert row["cost_30d_usd"] == pytest.approx(listed[row["slug"]]["cost_usd"])


@pytest.mark.django_db
def test_what_needs_a_person_is_listed_with_where_to_fix_it(client, make_user, fleet):
    PoolHourFlag.objects.create(
        pool=fleet["busy"],
        hour=fleet["end"] - timedelta(hours=2),
        kind=PoolHourFlag.Kind.OVER_REPORTED,
        gpus=9,
        samples=0,
        detail="9 GPUs reported in a pool of 8",
    )
    GpuDevice.objects.create(
        uuid="GPU-stray",
        hostname="stray-01",
        first_seen_at=timezone.now(),
        last_seen_at=timezone.now(),
    )
    client.force_login(make_user("reader"))
    response = client.get(reverse("dashboard:overview"))
    page = response.content.decode()
    # No backup policy exists, so no drill item.
    items = {item.kind: item for item in response.context["attention"]}
    assert set(items) == {"flagged-hours", "pools-without-telemetry", "unassigned-gpus"}
    assert items["flagged-hours"].sentence == ("1 pool-hour flagged in the last 7 days (Busy).")
    assert items["flagged-hours"].url == reverse("telemetry:reconciliation")
    assert items["pools-without-telemetry"].sentence.startswith(
        "1 pool in service sent no telemetry in the last 7 days (Silent)"
    )
    assert items["unassigned-gpus"].url == reverse("telemetry:device_unassigned")
    assert 'id="idle-ranking"' in page and 'data-pool="idle"' in page
    assert page.index('data-pool="idle"') < page.index('data-pool="busy"')
    assert "$432" in page and "$11,520" in page


@pytest.mark.django_db
def test_nothing_needs_a_person_says_so(client, make_user, gpu_model):
    _pool(gpu_model, "New", 8, "2.00", timezone.now())  # in service from now: not silent
    client.force_login(make_user("reader"))
    response = client.get(reverse("dashboard:overview"))
    assert response.context["attention"] == []
    assert 'id="attention-empty"' in response.content.decode()


def _figures_section(page: str) -> str:
    """The Overview's figures, from the KPI cards to the explanation drawer (the chrome
    around them carries a nonce of its own per request)."""
    return page[page.index('id="kpis"') : page.index('id="explain-drawer"')]


@pytest.mark.django_db
def test_a_cached_overview_is_the_computed_one_and_shows_what_each_visit_reads(
    client, make_user, fleet
):
    """The rendered figures are cached; what is read at each visit (the drills, the GPUs
    in no pool) is part of their key, so a change there shows at once."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(make_user("reader"))
    url = reverse("dashboard:overview")
    with CaptureQueriesContext(connection) as computing:
        computed = client.get(url).content.decode()
    with CaptureQueriesContext(connection) as reading:
        cached = client.get(url).content.decode()
    assert len(reading.captured_queries) < len(computing.captured_queries)
    assert _figures_section(cached) == _figures_section(computed)
    assert "$432" in cached and 'data-attention="unassigned-gpus"' not in cached
    GpuDevice.objects.create(
        uuid="GPU-stray",
        hostname="stray-01",
        first_seen_at=timezone.now(),
        last_seen_at=timezone.now(),
    )  # no rollup, no reports version bump
    after = client.get(url).content.decode()
    assert 'data-attention="unassigned-gpus"' in after
    assert "1 GPU reports telemetry but belongs to no pool." in after
    assert "$432" in after and "$11,520" in after


@pytest.mark.django_db
def test_a_warm_up_renders_the_overview_for_the_next_visit(client, make_user, fleet):
    """After a change the warm-up (what the worker runs) renders the Overview's figures
    too: the next visit reads them, renders nothing of them, and shows the same page."""
    from apps.reports.cache import bump_reports_version
    from apps.reports.warming import warm_view

    def rendered_figures(response) -> bool:
        # The figures' partial includes the idle ranking's template.
        return "dashboard/_attention.html" in [template.name for template in response.templates]

    client.force_login(make_user("reader"))
    url = reverse("dashboard:overview")
    computed = client.get(url)
    assert rendered_figures(computed)
    bump_reports_version()  # a rollup
    assert warm_view("overview", scope_key="t")  # the reader's scope: no team
    visit = client.get(url)
    assert not rendered_figures(visit)
    assert _figures_section(visit.content.decode()) == _figures_section(computed.content.decode())
