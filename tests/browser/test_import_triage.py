"""The journey an import that forgives makes short, in Chromium on a real worker: an
nvidia-smi CSV uploaded with the default "Detect from the file" is imported, its GPU waits
on the triage page with a suggested pool, and select-all (by keyboard) and one click
assign every waiting GPU to its suggestion."""

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import expect

from apps.telemetry.models import GpuDevice, HostnameRule
from tests.factories import TEST_PASSWORD

NVIDIA_SMI_H100 = (
    Path(__file__).resolve().parent.parent
    / "data"
    / "nvidia-smi"
    / "query_gpu_csv"
    / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv"
)


def _sign_in(page, live_server, user):
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()


@pytest.mark.browser
@pytest.mark.worker
def test_detect_upload_then_select_all_and_assign_the_suggestions(
    page, live_server, make_user, pool, celery_worker_process, screenshot_dir, transactional_db
):
    # A GPU already waiting, which a hostname rule made since then would place.
    HostnameRule.objects.create(pool=pool, hostname_pattern="gpu-sh-*")
    moment = datetime(2026, 11, 1, 10, tzinfo=UTC)
    GpuDevice.objects.create(
        key="GPU-waiting", uuid="GPU-waiting", hostname="gpu-sh-01", gpu_index=0,
        model_name="NVIDIA L40S", first_seen_at=moment, last_seen_at=moment,
    )  # fmt: skip
    _sign_in(page, live_server, make_user("lead"))

    page.goto(f"{live_server.url}/telemetry/imports/new/")
    expect(page.locator("#id_format")).to_have_value("detect")
    page.set_input_files("#id_file", str(NVIDIA_SMI_H100))
    page.locator("#import-form button[type=submit]").click()

    expect(page).to_have_url(re.compile(r"/telemetry/imports/\d+/$"), timeout=15_000)
    expect(page.locator("#import-format")).to_have_text("Detected: nvidia-smi CSV")
    expect(page.locator("#rows-accepted")).to_have_text("1", timeout=60_000)
    expect(page.locator("#import-message")).to_contain_text("1 waiting for a pool")
    page.get_by_role("link", name="Unassigned GPUs").first.click()

    expect(page.locator("h2.page-title, .page-title").first).to_contain_text("Unassigned GPUs")
    rows = page.locator("#unassigned-devices tbody tr")
    expect(rows).to_have_count(2)
    waiting = rows.filter(has_text="gpu-sh-01").locator("[data-suggestion]")
    expect(waiting).to_contain_text("matches hostname rule gpu-sh-*")
    expect(waiting).to_contain_text("but it reports NVIDIA L40S")
    uploaded = rows.filter(has_text="NVIDIA H100 80GB HBM3").locator("[data-suggestion]")
    expect(uploaded).to_contain_text(f"same GPU model as pool {pool.name} (H100 SXM)")

    select_all = page.locator("#select-all-devices")
    boxes = page.locator('#unassigned-devices input[name="devices"]')
    expect(select_all).to_be_visible()
    # By keyboard: Space on the focused box ticks every GPU on the page.
    select_all.focus()
    page.keyboard.press("Space")
    expect(boxes.nth(0)).to_be_checked()
    expect(boxes.nth(1)).to_be_checked()
    expect(page.locator("#selected-count")).to_have_text("2 of 2 ticked")
    # One unticked: the box says "some" (indeterminate), then ticks all again.
    boxes.nth(1).uncheck()
    assert select_all.evaluate("box => box.indeterminate") is True
    expect(select_all).not_to_be_checked()
    select_all.focus()
    page.keyboard.press("Space")
    assert select_all.evaluate("box => box.indeterminate") is False
    expect(boxes.nth(1)).to_be_checked()
    page.screenshot(path=str(screenshot_dir / "telemetry-triage.png"), full_page=True)

    page.locator("#assign-suggested").click()
    expect(page.locator("#messages")).to_contain_text(f"2 GPUs assigned to {pool.name}")
    expect(page.get_by_text("Every GPU has a pool")).to_be_visible()
    assert set(GpuDevice.objects.values_list("pool_id", "assignment")) == {
        (pool.pk, "rule"),
        (pool.pk, "manual"),
    }
