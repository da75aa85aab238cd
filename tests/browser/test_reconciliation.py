"""In Chromium: the reconciliation page lists a flagged pool-hour, filters without a reload,
and a lead backdates the pool's service period on its form; a real worker then counts
the kept sample and the flag goes."""

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from apps.pools.models import Deployment, Pool, Purpose
from apps.pools.services import save_pool
from apps.telemetry.models import PoolHourFlag, PoolHourlyUsage
from apps.telemetry.rollups import hourly
from tests.factories import TEST_PASSWORD

H100_CAPTURE = (
    Path(__file__).resolve().parent.parent
    / "data/nvidia-smi/query_gpu_csv/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv"
)
SAMPLE_HOUR = datetime(2026, 7, 14, 8, tzinfo=UTC)


def _sign_in(page, live_server, user):
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()


@pytest.mark.browser
@pytest.mark.worker
def test_reconciliation_then_a_backdated_service_period(
    page,
    live_server,
    make_user,
    gpu_model,
    celery_worker_process,
    screenshot_dir,
    transactional_db,
):
    pool = Pool(
        name="New H100",
        slug="new-h100",
        purpose=Purpose.INFERENCE,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=gpu_model,
        gpu_count=8,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.49"),
    )
    save_pool(pool)
    call_command(
        "import_telemetry", str(H100_CAPTURE), "--format", "nvidia-smi", "--pool", pool.slug
    )
    hourly.rollup_pool_hours(pool.pk, SAMPLE_HOUR, SAMPLE_HOUR + timedelta(hours=1))
    assert PoolHourFlag.objects.filter(pool=pool, kind="outside_service").exists()

    _sign_in(page, live_server, make_user("lead"))
    page.goto(f"{live_server.url}/telemetry/reconciliation/")
    table = page.locator("#reconciliation-table")
    expect(table).to_contain_text("2026-07-14")
    expect(table).to_contain_text("Samples outside the pool's service period: 1 h")
    page.locator("#reconciliation-table summary").first.click()
    expect(table).to_contain_text("1 sample(s) of 1 GPU(s) outside the pool's service period")
    page.screenshot(path=str(screenshot_dir / "reconciliation.png"), full_page=True)

    # Filtering swaps the table in place.
    page.evaluate("window.__noReload = true")
    page.select_option("#id_kind", "over_reported")
    expect(table).to_contain_text("Nothing to reconcile")
    assert page.evaluate("window.__noReload") is True
    page.select_option("#id_kind", "")
    expect(table).to_contain_text("2026-07-14")

    # The lead backdates the pool; the worker recomputes its history.
    page.goto(f"{live_server.url}/pools/{pool.slug}/edit/")
    page.fill("#id_in_service_from", "2026-07-01T00:00")
    page.locator("form button[type=submit]").last.click()
    expect(page).to_have_url(re.compile(rf"/pools/{pool.slug}/$"))
    expect(page.locator("#service-period")).to_contain_text("from 2026-07-01 00:00 UTC")
    deadline = 60
    for _ in range(deadline * 4):
        if PoolHourlyUsage.objects.filter(pool=pool, hour=SAMPLE_HOUR).exists():
            break
        page.wait_for_timeout(250)
    assert PoolHourlyUsage.objects.filter(pool=pool, hour=SAMPLE_HOUR).exists()
    assert not PoolHourFlag.objects.filter(pool=pool, kind="outside_service").exists()
    page.screenshot(path=str(screenshot_dir / "pool-service-period.png"), full_page=True)
    page.goto(f"{live_server.url}/telemetry/reconciliation/")
    expect(page.locator("#reconciliation-table")).to_contain_text("Nothing to reconcile")
