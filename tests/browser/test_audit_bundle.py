"""A team member picks a month on the team page and downloads the audit bundle as PDF and
XLSX in Chromium; a month yet to come is refused beside the picker."""

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from tests.factories import TEST_PASSWORD, PoolFactory, TeamFactory, UserFactory


@pytest.mark.browser
def test_a_member_downloads_the_audit_bundle(page, live_server, transactional_db, screenshot_dir):
    team = TeamFactory(name="Serving 推理", slug="serving")
    PoolFactory(
        name="Serving pool", team=team, gpu_count=8, on_demand_price_per_gpu_hour_usd=Decimal("3")
    )
    member = UserFactory(role="lead", teams=[team])
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", member.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    page.goto(f"{live_server.url}/teams/serving/")
    card = page.locator("#team-audit")
    expect(card).to_contain_text("Audit bundle")
    page.screenshot(path=screenshot_dir / "team-audit-card.png", full_page=True)
    month = page.locator("#audit-month").input_value()
    for extension in ("pdf", "xlsx"):
        with page.expect_download() as download:
            page.click(f"#audit-{extension}")
        assert download.value.suggested_filename == f"gpufleet-audit-serving-{month}.{extension}"

    # The picker's max stops a month yet to come; the server refuses one typed in the URL.
    page.goto(f"{live_server.url}/teams/serving/audit/?month=2999-01&format=pdf")
    expect(page.locator("#audit-month-error")).to_contain_text("has not started yet")
