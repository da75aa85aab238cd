"""Finance closes last month in Chromium (with a confirmation), and a superuser reopens
it with a reason: the periods page says so at each step."""

from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.showback.months import last_complete_month
from tests.factories import TEST_PASSWORD, PoolFactory


def _sign_in(page, live_server, user):
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()


@pytest.mark.browser
def test_finance_closes_last_month_and_a_superuser_reopens_it(
    page, live_server, make_user, transactional_db, screenshot_dir
):
    PoolFactory(name="Cloud pool", gpu_count=8, on_demand_price_per_gpu_hour_usd=Decimal("3"))
    month = f"{last_complete_month(timezone.now()):%Y-%m}"
    _sign_in(page, live_server, make_user("finance"))
    page.locator("#main-nav").get_by_role("link", name="Closed months", exact=True).click()
    row = page.locator(f'#period-table tr[data-month="{month}"]')
    expect(row).to_contain_text("Open")
    row.get_by_role("link", name="Close…").click()
    expect(page.locator("#period-close")).to_contain_text("freezes its cost report")
    page.click("#confirm-close")
    row = page.locator(f'#period-table tr[data-month="{month}"]')
    expect(row).to_contain_text("Closed")
    expect(row.get_by_role("link", name="Reopen…")).to_have_count(0)
    page.screenshot(path=screenshot_dir / "periods-closed.png", full_page=True)

    page.context.clear_cookies()
    _sign_in(page, live_server, make_user("admin"))
    page.goto(f"{live_server.url}/periods/")
    page.locator(f'#period-table tr[data-month="{month}"]').get_by_role(
        "link", name="Reopen…"
    ).click()
    page.fill("#id_reason", "Late telemetry from the cloud pool")
    page.click("#confirm-reopen")
    row = page.locator(f'#period-table tr[data-month="{month}"]')
    expect(row).to_contain_text("Open")
    expect(row).to_contain_text("Late telemetry from the cloud pool")
