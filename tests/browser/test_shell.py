"""Headless Chromium (Debian's, through Playwright): every role signs in, walks the
navigation, sees the overview chart drawn as SVG, and leaves a screenshot behind."""

import re

import pytest
from playwright.sync_api import expect

from apps.demo.fleet import DEMO_POOLS
from tests.factories import TEST_PASSWORD

NAVIGATION = [
    "Overview",
    "Pools",
    "Workloads",
    "Catalog",
    "Backups",
    "Reports",
    "Procurement",
    "Teams",
]


@pytest.fixture
def demo_fleet(transactional_db, demo):
    """The demo fleet, committed for the live server."""


def _sign_in(page, live_server, user):
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(f"{live_server.url}/login/?next=/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()


@pytest.mark.browser
# In tests/journey/test_newcomer.py the demo's administrator, technical lead and serving
# lead walk every page in Chromium on `make run`; the other roles' pages are the same
# templates with fewer buttons, and what each role gets from every page and fragment is
# tests/test_urls_roles.py's walk. Here the read-only role, which the demo lacks, and the
# administrator walk on the suite's own server.
@pytest.mark.parametrize("role_key", ["reader", "admin"])
def test_each_role_signs_in_navigates_and_sees_the_chart(
    page, live_server, make_user, demo_fleet, role_key, screenshot_dir
):
    console_errors = []
    page.on(
        "console", lambda message: message.type == "error" and console_errors.append(message.text)
    )
    page.set_viewport_size({"width": 1400, "height": 900})
    user = make_user(role_key)
    _sign_in(page, live_server, user)

    expected_role = {
        "lead": "Technical lead",
        "ops": "Ops",
        "procurement": "Procurement",
        "reader": "Read-only",
        "admin": "Administrator",
    }[role_key]
    expect(page.locator("#current-roles")).to_have_text(expected_role)

    # The overview's charts are drawn by plotly.js from the wheel: real SVG, no CDN.
    for chart_id in ("chart-gpus-by-purpose", "chart-cost-split"):
        expect(page.locator(f"#{chart_id} svg.main-svg").first).to_be_attached(timeout=15_000)
    expect(page.locator("#chart-cost-split")).to_contain_text("USD per day")
    page.screenshot(path=str(screenshot_dir / f"overview-{role_key}.png"), full_page=True)

    for label in NAVIGATION[1:]:
        page.locator("#main-nav").get_by_role("link", name=label, exact=True).click()
        expect(page.locator(".page-title").first).to_be_visible()
        expect(page.locator("#main-nav .nav-item.active")).to_have_text(label)
    page.screenshot(path=str(screenshot_dir / f"procurement-{role_key}.png"))

    # Only a technical lead is offered to add a pool.
    page.locator("#main-nav").get_by_role("link", name="Pools", exact=True).click()
    add_pool = page.get_by_role("link", name="Add a pool")
    if role_key in ("lead", "admin"):
        expect(add_pool).to_be_visible()
    else:
        expect(add_pool).to_have_count(0)

    page.locator("[aria-label='Open user menu']").click()
    page.locator("#logout-button").click()
    expect(page).to_have_url(f"{live_server.url}/login/")
    assert not console_errors, console_errors


@pytest.mark.browser
def test_pool_filter_updates_table_without_reload(page, live_server, make_user, demo_fleet):
    _sign_in(page, live_server, make_user("reader"))
    page.goto(f"{live_server.url}/pools/")
    page.evaluate("window.__noReload = true")
    demo_inference = [spec for spec in DEMO_POOLS if spec["purpose"] == "inference"]
    expect(page.locator("#pool-table tbody tr")).to_have_count(len(DEMO_POOLS))
    page.select_option("#id_purpose", "inference")
    expect(page.locator("#pool-table tbody tr")).to_have_count(len(demo_inference))
    expect(page.locator("#pool-totals")).to_contain_text(f"{len(demo_inference)} pools")
    gpus = sum(spec["gpu_count"] for spec in demo_inference)
    expect(page.locator("#pool-totals")).to_contain_text(f"{gpus} GPUs")
    # A second filter narrows further: inference pools that are owned on premises.
    page.select_option("#id_deployment", "on_premises")
    on_premises = [spec for spec in demo_inference if spec["deployment"] == "on_premises"]
    expect(page.locator("#pool-table tbody tr")).to_have_count(len(on_premises))
    # Sorting by GPUs, descending, keeps the filters.
    # The second click waits for the first sort to land: htmx ignores a click on an
    # element whose request is still loading.
    page.locator("#pool-table th a", has_text="GPUs").click()
    expect(page).to_have_url(re.compile(r"sort=gpus$"))
    page.locator("#pool-table th a", has_text="GPUs").click()
    first = max(on_premises, key=lambda spec: spec["gpu_count"])
    expect(page.locator("#pool-table tbody tr").first).to_contain_text(first["name"])
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    expect(page).to_have_url(
        f"{live_server.url}/pools/?purpose=inference&deployment=on_premises"
        "&region=&gpu_model=&team=&q=&archived=&sort=-gpus"
    )


@pytest.mark.browser
def test_the_user_menu_switches_to_chinese_and_to_dark_mode(
    page, live_server, make_user, demo_fleet, screenshot_dir
):
    page.set_viewport_size({"width": 1440, "height": 900})
    _sign_in(page, live_server, make_user("lead"))
    assert page.locator("html").get_attribute("lang") == "en"
    page.click("[aria-label='Open user menu']")
    page.click("#language-menu button[value='zh-hans']")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("#main-nav")).to_contain_text("资源池")
    expect(page.locator("#logout-button")).to_have_text("退出登录")

    # Chromium's headless default is a light system theme: the menu picks dark, and the
    # choice survives a reload.
    assert page.locator("html").get_attribute("data-bs-theme") == "light"
    page.click("[aria-label='打开用户菜单']")
    page.click("[data-theme-choice='dark']")
    expect(page.locator("html")).to_have_attribute("data-bs-theme", "dark")
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-bs-theme", "dark")
    chart = page.locator(".plotly-chart[data-drawn='true']").first
    expect(chart).to_be_attached()
    # Plotly formats dates with its zh-CN locale (month names in hovers; day ticks are
    # Y-m-d in both languages).
    assert chart.evaluate("element => element._context.locale") == "zh-CN"
    paper = chart.evaluate("element => element._fullLayout.paper_bgcolor")
    assert paper.replace(" ", "") == "rgba(0,0,0,0)", paper
    page.screenshot(path=str(screenshot_dir / "overview-zh-dark.png"), full_page=True)
    page.click("[aria-label='打开用户菜单']")
    page.click("[data-theme-choice='system']")
    expect(page.locator("html")).to_have_attribute("data-bs-theme", "light")


@pytest.mark.browser
def test_a_chart_downloads_its_data_as_csv(page, live_server, make_user, demo_fleet, tmp_path):
    page.set_viewport_size({"width": 1440, "height": 900})
    _sign_in(page, live_server, make_user("lead"))
    chart = page.locator(".plotly-chart[data-drawn='true']").first
    expect(chart).to_be_attached()
    # Points in the figure the page carries, counted from its JSON, not from the CSV code.
    points = chart.evaluate(
        """element => JSON.parse(document.getElementById(element.dataset.figureSource)
              .textContent).data.reduce((sum, trace) => sum + Math.max(
                  (trace.x || trace.labels || []).length, (trace.y || []).length), 0)"""
    )
    chart.hover()
    with page.expect_download() as download_info:
        chart.locator("[data-title='Download the data (CSV)']").click()
    path = tmp_path / "chart.csv"
    download_info.value.save_as(path)
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    assert lines[0] == "series,x,y,z"
    assert len(lines) - 1 == points > 0
    assert chart.locator("[data-title='Download as SVG']").count() == 1
