"""A superuser gives a team a budget in Chromium and reads its state on the team page:
numbers with units, the state in words, and the burn-down chart drawn."""

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from tests.factories import TEST_PASSWORD, PoolFactory, TeamFactory


@pytest.mark.browser
def test_a_superuser_creates_a_team_budget_and_sees_its_state(
    page, live_server, make_user, transactional_db, screenshot_dir
):
    team = TeamFactory(name="Serving", slug="serving")
    # A cloud pool in service since long before this month: it has cost money already.
    PoolFactory(
        name="Serving pool", team=team, gpu_count=8, on_demand_price_per_gpu_hour_usd=Decimal("3")
    )
    admin = make_user("admin")
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", admin.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    page.goto(f"{live_server.url}/teams/serving/")
    expect(page.locator("#team-budgets")).to_contain_text("No budgets yet.")
    page.click("#add-budget")
    expect(page.locator("#id_team")).to_have_value(str(team.pk))
    page.fill("#id_amount_per_month", "1")  # far below what the pool has cost
    page.fill("#id_note", "Launch month")
    page.click("#save-budget")

    expect(page).to_have_url(f"{live_server.url}/teams/serving/")
    state = page.locator("#team-budgets .budget-state")
    expect(state).to_have_attribute("data-state", "over")
    expect(state).to_contain_text("Over budget")
    expect(page.locator("#team-budgets")).to_contain_text("Launch month")
    expect(page.locator("#team-budgets")).to_contain_text("%")
    expect(page.locator("#chart-team-burndown svg.main-svg").first).to_be_attached()
    page.screenshot(path=screenshot_dir / "team-budget.png", full_page=True)
