"""An upload in Chromium runs on a real Celery worker; the detail page's progress card
polls until the run is done, without a reload."""

import os
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from tests.factories import TEST_PASSWORD

SCRAPE = (
    Path(__file__).resolve().parent.parent
    / "data"
    / "dcgm-exporter"
    / "scrapes"
    / "kops_aws_L4_driver580.prom"
)


@pytest.mark.browser
@pytest.mark.worker
def _sign_in(page, live_server, user):
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()


def test_upload_progress_then_summary(
    page, live_server, make_user, pool, celery_worker_process, screenshot_dir, transactional_db
):
    _sign_in(page, live_server, make_user("lead"))

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


@pytest.mark.browser
@pytest.mark.worker
def test_scrape_time_is_prefilled_and_a_second_upload_is_refused(
    page,
    live_server,
    make_user,
    pool,
    celery_worker_process,
    screenshot_dir,
    transactional_db,
    tmp_path,
):
    # The pool entered service after the scrape was taken, two hours before (service is
    # counted by the hour): its sample is kept, not charged.
    pool.in_service_from = datetime.now(UTC).replace(second=0, microsecond=0)
    pool.save()
    scrape = tmp_path / SCRAPE.name
    shutil.copyfile(SCRAPE, scrape)
    taken = (pool.in_service_from - timedelta(hours=2)).timestamp()
    os.utime(scrape, (taken, taken))
    _sign_in(page, live_server, make_user("lead"))
    page.goto(f"{live_server.url}/telemetry/imports/new/")
    scrape_time = page.locator("#id_scraped_at")
    page.select_option("#id_format", "nvidia-smi")
    expect(scrape_time).to_be_hidden()  # only dcgm scrapes need it
    page.select_option("#id_format", "dcgm")
    expect(scrape_time).to_be_visible()

    # Choosing the file fills in its modification time, in the form's zone (UTC)…
    page.set_input_files("#id_file", str(scrape))
    modified = datetime.fromtimestamp(scrape.stat().st_mtime, UTC).replace(microsecond=0)
    expect(scrape_time).to_have_value(re.compile(f"^{modified:%Y-%m-%dT%H:%M}(:{modified:%S})?$"))
    # …and a change of zone rewrites the time it filled in, as wall-clock time there.
    page.fill("#id_time_zone", "Asia/Shanghai")
    page.locator("#id_time_zone").dispatch_event("change")
    shanghai = modified.astimezone(ZoneInfo("Asia/Shanghai"))
    expect(scrape_time).to_have_value(re.compile(f"^{shanghai:%Y-%m-%dT%H:%M}(:{shanghai:%S})?$"))
    page.select_option("#id_pool", str(pool.pk))
    page.locator("#import-form button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/telemetry/imports/\d+/$"), timeout=15_000)
    expect(page.locator("#rows-accepted")).to_have_text("1", timeout=60_000)
    expect(page.locator("#import-details")).to_contain_text(f"{modified:%Y-%m-%d %H:%M:%S} UTC")
    expect(page.locator("#import-warnings")).to_contain_text(
        f"1 sample before pool {pool.name} entered service ({pool.in_service_from:%Y-%m-%d %H:%M}"
        " UTC): kept, not charged"
    )
    page.screenshot(path=str(screenshot_dir / "telemetry-import-warnings.png"), full_page=True)
    first_import = page.url

    # The same file again: refused on the form, naming and linking the first import.
    page.goto(f"{live_server.url}/telemetry/imports/new/")
    page.select_option("#id_format", "dcgm")
    page.set_input_files("#id_file", str(scrape))
    page.select_option("#id_pool", str(pool.pk))
    page.locator("#import-form button[type=submit]").click()
    refusal = page.locator(".invalid-feedback", has_text="nothing added")
    expect(refusal).to_contain_text("This file was already imported on")
    page.screenshot(path=str(screenshot_dir / "telemetry-import-refused.png"), full_page=True)
    refusal.get_by_role("link").click()
    expect(page).to_have_url(first_import)
