"""The morning look at the fleet in Chromium: the Overview's charts draw, and a filter on
the reports page redraws the table and the charts without reloading the page."""

import re

import pytest
from playwright.sync_api import expect

from apps.pools.models import Pool
from tests.factories import TEST_PASSWORD


@pytest.fixture
def signed_in_reader(page, live_server, make_user, transactional_db, demo):
    # The demo includes 28 days of usage.
    user = make_user("reader")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()
    return page


@pytest.mark.browser
def test_overview_draws_the_split_and_the_curves(signed_in_reader, live_server, screenshot_dir):
    page = signed_in_reader
    page.goto(f"{live_server.url}/")
    for chart in ("chart-busy-split", "chart-cost-share", "chart-hour-of-day", "chart-heatmap"):
        expect(page.locator(f"#{chart} svg.main-svg").first).to_be_attached()
    # Legends name the purposes; the axis carries its unit.
    expect(page.locator("#chart-busy-split .legendtext").first).to_be_visible()
    expect(page.locator("#chart-busy-split")).to_contain_text("GPU-hours")
    expect(page.locator("#kpi-cost .kpi-value")).to_contain_text("$")
    page.screenshot(path=screenshot_dir / "overview.png", full_page=True)


@pytest.mark.browser
def test_report_filter_updates_table_and_charts_without_reload(
    signed_in_reader, live_server, screenshot_dir
):
    page = signed_in_reader
    page.goto(f"{live_server.url}/reports/")
    page.evaluate("window.__noReload = true")
    expect(page.locator("#report-table tbody tr")).to_have_count(8)  # the demo's 8 pools
    expect(page.locator("#chart-report-cost svg.main-svg").first).to_be_attached()

    page.select_option("#id_group_by", "purpose")
    expect(page.locator("#report-table tbody tr")).to_have_count(3)
    expect(page.locator('#report-table tr[data-key="training"]')).to_be_visible()
    expect(page.locator("#chart-report-cost svg.main-svg").first).to_be_attached()

    page.select_option("#id_purpose", "inference")
    expect(page.locator("#report-table tbody tr")).to_have_count(1)
    expect(page.locator('#report-table tr[data-key="inference"]')).to_be_visible()
    inference_pools = Pool.objects.filter(purpose="inference").count()  # all serve requests
    expect(page.locator("#peak-table tbody tr")).to_have_count(inference_pools)
    assert page.evaluate("window.__noReload") is True, "the filter reloaded the page"
    assert "group_by=purpose" in page.url  # the URL follows, so the view can be shared
    page.screenshot(path=screenshot_dir / "reports-filtered.png", full_page=True)


@pytest.mark.browser
@pytest.mark.worker
def test_a_long_range_shows_progress_then_the_table_without_reload(
    signed_in_reader, live_server, settings, celery_worker_process, screenshot_dir
):
    """Over 31 days, a range no one viewed is computed by a real worker: the page shows a
    progress bar, then the table and the charts replace it in place."""
    from datetime import UTC, datetime, timedelta

    settings.REPORTS_WARM_UP = True
    page = signed_in_reader
    start = (datetime.now(UTC) - timedelta(days=59)).date().isoformat()
    response = page.goto(f"{live_server.url}/reports/?start={start}&group_by=pool")
    # The page as served, before any worker ran: a progress bar where the table will be.
    served = response.text()
    assert 'id="report-progress-pct"' in served and 'id="report-table"' not in served
    page.evaluate("window.__noReload = true")
    progress = page.locator("#report-progress-pct")
    table = page.locator("#report-table tbody tr")
    page.screenshot(path=screenshot_dir / "reports-long-range-progress.png", full_page=True)
    expect(table).to_have_count(8, timeout=60_000)  # the demo's 8 pools
    expect(page.locator("#chart-report-cost svg.main-svg").first).to_be_attached()
    expect(progress).to_have_count(0)
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    page.screenshot(path=screenshot_dir / "reports-long-range.png", full_page=True)


def _wait_until_drawer_is_in(page):
    """The drawer slides in from the right: wait until it has arrived."""
    page.wait_for_function(
        "() => { const box = document.getElementById('explain-drawer').getBoundingClientRect();"
        " return box.width > 0 && Math.abs(box.right - window.innerWidth) < 1; }"
    )


@pytest.mark.browser
def test_a_report_cell_and_an_overview_kpi_explain_themselves_without_reload(
    signed_in_reader, live_server, screenshot_dir
):
    """Choosing a figure opens the drawer with how it was computed, in the page; the
    keyboard reaches it too (a link: Tab to it, Enter)."""
    page = signed_in_reader
    page.goto(f"{live_server.url}/reports/")
    page.evaluate("window.__noReload = true")
    first_row = page.locator("#report-table tbody tr").first
    key = first_row.get_attribute("data-key")
    cost_cell = first_row.locator('a.explain-link[href*="figure=cost_usd"]')
    shown_cost = cost_cell.inner_text()
    cost_cell.click()
    drawer = page.locator("#explain-drawer")
    expect(drawer).to_be_visible()
    expect(drawer.locator("#explanation-title")).to_contain_text("Cost")
    # The drawer and the cell both give cents: the same amount.
    value = drawer.locator(".explain-result .explain-value")
    expect(value).to_contain_text("$")
    drawer_usd = float(value.inner_text().strip().lstrip("$").replace(",", ""))
    assert f"${drawer_usd:,.2f}" == shown_cost.strip()
    assert page.evaluate("window.__noReload") is True, "the explanation reloaded the page"
    assert f"row={key}" in cost_cell.get_attribute("href")
    _wait_until_drawer_is_in(page)
    page.screenshot(path=screenshot_dir / "reports-explain-cost.png", full_page=False)

    # Escape closes it; the keyboard opens the next one.
    page.keyboard.press("Escape")
    expect(drawer).not_to_be_visible()
    idle_cell = page.locator('#report-total a.explain-link[href*="figure=idle_cost_usd"]')
    idle_cell.focus()
    page.keyboard.press("Enter")
    expect(drawer).to_be_visible()
    expect(drawer.locator("#explanation-title")).to_contain_text("Idle cost: Total")
    # The total of the demo's 8 pools: each pool's line, then their sum.
    expect(drawer.locator(".explain-result")).to_contain_text("Σ of the 8 lines above")
    assert page.evaluate("window.__noReload") is True
    _wait_until_drawer_is_in(page)
    page.screenshot(path=screenshot_dir / "reports-explain-idle-total.png", full_page=False)

    page.goto(f"{live_server.url}/")
    page.evaluate("window.__noReload = true")
    page.locator("#kpi-cost a.explain-link").click()
    expect(drawer).to_be_visible()
    expect(drawer.locator("#explanation-title")).to_contain_text("Cost, month to date")
    expect(drawer).to_contain_text("GPUs ×")
    assert page.evaluate("window.__noReload") is True, "the KPI reloaded the Overview"
    _wait_until_drawer_is_in(page)
    page.screenshot(path=screenshot_dir / "overview-explain-cost.png", full_page=False)
    page.keyboard.press("Escape")
    page.locator("#kpi-utilization a.explain-link").click()
    expect(drawer).to_contain_text("busy ÷")
    _wait_until_drawer_is_in(page)
    page.screenshot(path=screenshot_dir / "overview-explain-utilization.png", full_page=False)


@pytest.mark.browser
def test_a_report_header_sorts_the_table_in_place_keeping_the_filters(
    signed_in_reader, live_server, screenshot_dir
):
    """Idle cost, most first: the table alone swaps, the URL keeps the grouping, and at
    1440 px neither the report table nor the pool list with its 30-day columns scrolls
    sideways."""
    page = signed_in_reader
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(f"{live_server.url}/reports/?group_by=pool")
    page.evaluate("window.__noReload = true")
    header = page.locator('#report-table thead a[href*="sort=idle"]')
    header.click()
    expect(page).to_have_url(re.compile(r"[?&]sort=idle\b"))
    assert "group_by=pool" in page.url, "the sort keeps the filters"
    page.locator('#report-table thead a[href*="sort=-idle"]').click()
    expect(page.locator("#report-table thead a.table-sort.desc")).to_contain_text("Idle")
    idle = page.locator('#report-table tbody a[href*="figure=idle_cost_usd"]').all_inner_texts()
    amounts = [float(text.strip("$").replace(",", "")) for text in idle]
    assert amounts == sorted(amounts, reverse=True) and len(amounts) == 8
    assert page.evaluate("window.__noReload") is True, "the sort reloaded the page"
    overflow = "el => el.scrollWidth - el.clientWidth"
    assert page.locator("#report-rows .table-responsive").evaluate(overflow) <= 1
    page.screenshot(path=str(screenshot_dir / "reports-sorted-by-idle.png"), full_page=True)

    page.goto(f"{live_server.url}/pools/?sort=-cost_30d")
    expect(page.locator("#pool-table thead a.table-sort.desc")).to_contain_text("Cost")
    assert page.locator("#pool-table .table-responsive").evaluate(overflow) <= 1
    page.screenshot(path=str(screenshot_dir / "pool-list-by-cost.png"), full_page=True)
