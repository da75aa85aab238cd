"""The Overview of two clusters in Chromium, in English and in Chinese: the clusters side
by side, the filter that narrows every figure to one cluster, and the report filtered by
cluster."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.pools.hours import floor_hour
from tests.browser.test_chart_layout import _sign_in as sign_in
from tests.clusters.test_cluster_filters import HOURS, POOLS, _hand, _make_fleet, _of


@pytest.mark.browser
def test_the_overview_compares_and_filters_clusters_in_both_languages(
    page, live_server, make_user, transactional_db, screenshot_dir
):
    _make_fleet(floor_hour(timezone.now()) - timedelta(hours=HOURS))
    admin = make_user("admin")
    fleet_gpus = _hand(POOLS)["gpus"]
    for language in ("en", "zh-hans"):
        page.context.clear_cookies()
        sign_in(page, live_server, admin, language)
        page.goto(f"{live_server.url}/")
        expect(page.locator("#kpi-gpus .kpi-value")).to_contain_text(str(fleet_gpus))
        rows = page.locator("#clusters tbody tr")
        expect(rows).to_have_count(2)
        south_gpus = page.locator('#clusters tr[data-cluster="south"] [data-figure="gpus"]')
        expect(south_gpus).to_have_text(str(_hand(_of("south"))["gpus"]))
        page.screenshot(path=screenshot_dir / f"overview-clusters-{language}.png", full_page=True)

        page.select_option("#id_cluster", "north")
        page.locator("#cluster-filter button[type=submit]").click()
        expect(page.locator("#kpi-gpus .kpi-value")).to_contain_text(
            str(_hand(_of("north"))["gpus"])
        )
        expect(page.locator("#clusters")).to_have_count(0)
        page.screenshot(
            path=screenshot_dir / f"overview-cluster-north-{language}.png", full_page=True
        )

        page.goto(f"{live_server.url}/reports/?group_by=cluster")
        expect(page.locator("#id_cluster")).to_be_visible()
        page.screenshot(path=screenshot_dir / f"report-by-cluster-{language}.png", full_page=True)
