"""Procurement in Chromium: changing a what-if input recomputes the comparison table and
its charts through htmx, without reloading the page."""

import pytest
from playwright.sync_api import expect

from tests.factories import TEST_PASSWORD
from tests.procurement.conftest import add_measurements, make_scenario


@pytest.fixture
def signed_in_procurement(page, live_server, make_user, transactional_db, role_groups):
    user = make_user("procurement")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()
    return page


@pytest.fixture
def scenario(pool, workload):
    return make_scenario(add_measurements(pool, workload))


@pytest.mark.browser
def test_changing_an_input_updates_the_table_without_reload(
    signed_in_procurement, live_server, scenario, screenshot_dir
):
    page = signed_in_procurement
    page.goto(f"{live_server.url}/procurement/{scenario.slug}/")
    page.evaluate("window.__noReload = true")
    rent_total = page.locator('tr[data-option="Rent H100"] td[data-col="total"]')
    expect(rent_total).to_have_text("7,300 USD")
    expect(page.locator("#chart-cost-by-option svg.main-svg").first).to_be_attached()

    page.fill("#id_horizon_months", "3")
    expect(rent_total).to_have_text("21,900 USD")  # three months of 7,300
    expect(page.locator("#chart-hybrid-curve svg.main-svg").first).to_be_attached()

    # The measured GPUs ran at 0.8 efficiency, the option's GPUs at 0.4: twice the GPUs.
    page.fill("#id_reference_efficiency", "0.8")
    expect(rent_total).to_have_text("43,800 USD")
    page.screenshot(path=str(screenshot_dir / "procurement-scenario.png"), full_page=True)
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    assert "horizon_months=3" in page.url, "the URL keeps the inputs so they can be shared"
