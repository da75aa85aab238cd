"""Ops records a restore drill in Chromium: the htmx form on the policy page refuses a
drill that finishes before it starts, then records one, and the compliance view (status,
actual RTO/RPO against target, the drill list) changes without a reload."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tests.backups.factories import SHA_A, make_policy, make_version
from tests.factories import TEST_PASSWORD

LOCAL = "%Y-%m-%dT%H:%M"  # datetime-local, read in TIME_ZONE (UTC in tests)


@pytest.fixture
def media_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.mark.browser
def test_ops_records_a_drill_and_the_compliance_view_changes_without_reload(
    page,
    live_server,
    make_user,
    workload,
    screenshot_dir,
    media_in_tmp,
    tmp_path,
    transactional_db,
):
    make_policy(workload, drill_frequency_days=7)
    make_version(workload)
    user = make_user("ops")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    page.goto(f"{live_server.url}/backups/{workload.slug}/")
    expect(page.locator("#drill-status")).to_contain_text("never drilled")
    expect(page.locator("#drill-table")).to_have_count(0)
    expect(page.locator("#history")).not_to_contain_text("Drill of")
    page.evaluate("window.__noReload = true")

    start = timezone.now() - timedelta(minutes=40)
    page.fill("#id_started_at", start.strftime(LOCAL))
    page.fill("#id_finished_at", (start - timedelta(minutes=10)).strftime(LOCAL))
    page.fill("#id_observed_checksums", f"node-0 {SHA_A}\nnode-1 {SHA_A}")
    page.click("#drill-submit")
    expect(page.locator("#error-finished_at")).to_contain_text("before it started")
    expect(page.locator("#drill-form-errors")).to_be_visible()

    page.fill("#id_finished_at", (start + timedelta(minutes=25)).strftime(LOCAL))
    evidence = tmp_path / "restore.log"
    evidence.write_text("step 1000 resumed, loss 1.92\n")
    page.set_input_files("#id_evidence", str(evidence))
    page.click("#drill-submit")

    expect(page.locator("#drill-recorded")).to_have_text("Drill recorded: it passed.")
    expect(page.locator("#latest-drill-result")).to_have_text("Passed")
    expect(page.locator("#latest-drill")).to_contain_text("25 min / 60 min")
    expect(page.locator("#drill-status")).to_contain_text("on schedule")
    expect(page.locator("#drill-table tbody tr")).to_have_count(1)
    expect(page.locator("#drill-table")).to_contain_text("Checksums match on 2 of 2 nodes/replicas")
    # The history card (outside the compliance column) lists the drill too, out of band.
    expect(page.locator("#history")).to_contain_text("Drill of")
    expect(page.locator("#history")).to_have_count(1)
    page.screenshot(path=str(screenshot_dir / "backups-drill-recorded.png"), full_page=True)
    assert page.evaluate("window.__noReload") is True, "the page reloaded"

    # The fleet view agrees.
    page.goto(f"{live_server.url}/backups/")
    row = page.locator(f"tr[data-workload='{workload.slug}']")
    expect(row).to_contain_text("passed")
    expect(page.locator("#summary-never")).to_have_text("0")
