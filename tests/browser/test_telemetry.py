"""An upload in Chromium runs on a real Celery worker; the detail page's progress card
polls until the run is done, without a reload."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import TEST_PASSWORD

SCRAPE = (
    Path(__file__).resolve().parent.parent
    / "data"
    / "dcgm-exporter"
    / "scrapes"
    / "kops_aws_L4_driver580.prom"
)


@pytest.mark.browser
@pytest.mark.worker
def test_upload_progress_then_summary(
    page, live_server, make_user, pool, celery_worker_process, screenshot_dir, transactional_db
):
    user = make_user("lead")
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    page.goto(f"{live_server.url}/telemetry/imports/new/")
    page.set_input_files("#id_file", str(SCRAPE))
    page.select_option("#id_format", "dcgm")
    page.select_option("#id_pool", str(pool.pk))
    page.locator("#import-form button[type=submit]").click()

    expect(page).to_have_url(re.compile(r"/telemetry/imports/\d+/$"), timeout=15_000)
    page.evaluate("window.__noReload = true")
    # The worker finishes the run; the polled card shows the counts by itself.
    expect(page.locator("#rows-accepted")).to_have_text("1", timeout=60_000)
    expect(page.locator("#import-message")).to_contain_text("1 rows accepted")
    assert page.evaluate("window.__noReload") is True
    page.screenshot(path=str(screenshot_dir / "telemetry-import.png"), full_page=True)
