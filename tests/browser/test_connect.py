"""Connect your fleet in Chromium: from the empty Overview to the new pools' first hour,
against a real Prometheus holding an hour of the recorded GPUs and a real Celery worker."""

import re

import pytest
from playwright.sync_api import expect

from apps.catalog.models import GpuModel
from tests.factories import TEST_PASSWORD
from tests.telemetry.test_connect import backfilled_prometheus  # noqa: F401 - a fixture


def _sign_in(page, live_server, user):
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()


@pytest.mark.browser
@pytest.mark.worker
@pytest.mark.prometheus
def test_a_lead_connects_the_fleet_from_the_empty_overview(
    page,
    live_server,
    make_user,
    backfilled_prometheus,  # noqa: F811 - the fixture imported above
    celery_worker_process,
    screenshot_dir,
    transactional_db,
):
    _sign_in(page, live_server, make_user("lead"))
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="Connect your fleet").click()
    expect(page).to_have_url(re.compile(r"/telemetry/connect/$"))

    page.get_by_label("Prometheus or VictoriaMetrics URL").fill(backfilled_prometheus)
    page.get_by_role("button", name="Try it").click()
    expect(page.locator("#connect-gpu-count")).to_have_text("12", timeout=30_000)
    expect(page.locator("#connect-mig")).to_contain_text("No MIG slices")

    rows = page.locator("#connect-proposal-table tbody tr")
    expect(rows).to_have_count(5)
    h100 = rows.filter(has_text="NVIDIA H100 80GB HBM3")
    h100.get_by_label("Pool name").fill("Training H100")
    h100.get_by_label("Purpose").select_option("training")
    rows.filter(has_text=re.compile(r"NVIDIA L4(?!0)")).get_by_label("Create this pool").uncheck()
    # The vGPU profile fits several A100s: connecting without choosing says so.
    page.get_by_role("button", name="Connect the fleet").click()
    expect(page.locator("#connect-accept-error")).to_contain_text("Correct the pools marked")
    grid = rows.filter(has_text="GRID A100-40C")
    expect(grid).to_contain_text("Choose the catalog GPU model of GRID A100-40C")
    grid.get_by_label("Catalog GPU model").select_option(
        str(GpuModel.objects.get(slug="a100-pcie-40gb").pk)
    )
    page.screenshot(path=str(screenshot_dir / "connect-proposals.png"), full_page=True)
    page.get_by_role("button", name="Connect the fleet").click()

    expect(page).to_have_url(re.compile(r"/telemetry/connect/\d+/$"), timeout=15_000)
    table = page.locator("#connect-pool-table")
    expect(table).to_be_visible(timeout=90_000)
    expect(table.locator("tbody tr")).to_have_count(4)
    expect(table).to_contain_text("Training H100")
    page.screenshot(path=str(screenshot_dir / "connect-first-hour.png"), full_page=True)
    table.get_by_role("link", name="Training H100").click()
    expect(page.locator("h2.page-title")).to_contain_text("Training H100")
