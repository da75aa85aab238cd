"""A team's lead in Chromium: the pool list holds the shared pools and their team's, the
team filter narrows it in place, and the pool form offers their teams only."""

import pytest
from playwright.sync_api import expect

from tests.factories import TEST_PASSWORD, PoolFactory, TeamFactory, UserFactory


@pytest.fixture
def speech_lead_page(page, live_server, transactional_db):
    vision, speech = TeamFactory(name="Vision"), TeamFactory(name="Speech")
    PoolFactory(name="Vision training", team=vision)
    PoolFactory(name="Speech inference", team=speech, gpu_count=24)
    PoolFactory(name="Shared batch", gpu_count=8)
    user = UserFactory(role="lead", teams=[speech])
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()
    return page


def _pool_names(page) -> list[str]:
    return page.locator("#pool-table tbody tr td:first-child a").all_inner_texts()


@pytest.mark.browser
def test_a_leads_pool_list_and_pool_form_hold_their_team_and_the_shared(
    speech_lead_page, live_server, screenshot_dir
):
    page = speech_lead_page
    page.goto(f"{live_server.url}/pools/")
    expect(page.locator("#pool-totals")).to_contain_text("2 pools")
    assert _pool_names(page) == ["Shared batch", "Speech inference"]
    expect(page.locator("#pool-totals")).to_contain_text("32 GPUs")
    expect(page.locator("#pool-table")).not_to_contain_text("Vision")
    team_options = page.locator("#id_team option").all_inner_texts()
    assert team_options == ["All teams", "Shared (no team)", "Speech"]

    # The team filter swaps the table in place.
    page.evaluate("window.__noReload = true")
    page.select_option("#id_team", "shared")
    expect(page.locator("#pool-totals")).to_contain_text("1 pool")
    assert _pool_names(page) == ["Shared batch"]
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    page.screenshot(path=str(screenshot_dir / "team-pool-list.png"), full_page=True)

    page.goto(f"{live_server.url}/pools/new/")
    options = page.locator("#id_team option")
    assert options.all_inner_texts() == ["Shared (no team)", "Speech"]
    # Their one team is chosen for them.
    expect(page.locator("#id_team option:checked")).to_have_text("Speech")
    page.screenshot(path=str(screenshot_dir / "team-pool-form.png"), full_page=True)

    # Another team's pool is not there for them.
    response = page.goto(f"{live_server.url}/pools/vision-training/")
    assert response.status == 404
