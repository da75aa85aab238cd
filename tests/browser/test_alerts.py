"""Alerts in Chromium: Ops make a webhook channel, send it a test notification, make an
idle-cost rule whose form shows only the thresholds of the kind chosen, and see the
alert it raises with its notification; then silence it from its page."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.alerts import services
from apps.pools.hours import floor_hour
from tests.alerts.conftest import write_usage
from tests.alerts.peers import start_http_receiver
from tests.factories import TEST_PASSWORD, PoolFactory
from tests.reports.test_pool_list_columns import _wait_for_next_hour_if_at_its_end


def _sign_in(page, live_server, user):
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()


@pytest.fixture
def receiver():
    receiver, server = start_http_receiver()
    yield receiver
    server.shutdown()
    server.server_close()


@pytest.mark.browser
def test_ops_set_up_a_channel_and_a_rule_and_read_the_alert(
    page, live_server, make_user, transactional_db, receiver, screenshot_dir
):
    _wait_for_next_hour_if_at_its_end()
    hour_end = floor_hour(timezone.now()) + timedelta(hours=1)
    pool = PoolFactory(
        name="Idle H100",
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("3.00"),
        in_service_from=hour_end - timedelta(days=60),
    )
    write_usage(pool, hours=48, busy_fraction=0.1, end=hour_end)
    _sign_in(page, live_server, make_user("ops"))

    page.goto(f"{live_server.url}/alerts/channels/new/")
    page.fill("#id_name", "Pager bridge")
    page.select_option("#id_kind", "email")
    expect(page.locator("#id_url")).to_be_hidden()
    expect(page.locator("#id_to")).to_be_visible()
    page.select_option("#id_kind", "webhook")
    expect(page.locator("#id_to")).to_be_hidden()
    page.fill("#id_url", receiver.url("/hook"))
    page.locator("form.card button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/alerts/channels/pager-bridge/$"))
    page.locator("#channel-test").click()
    expect(page.locator("#messages")).to_contain_text("A test notification went to Pager bridge.")
    assert len(receiver.received("/hook")) == 1

    page.goto(f"{live_server.url}/alerts/rules/new/")
    page.fill("#id_name", "Idle pools")
    page.select_option("#id_kind", "drill_overdue")
    expect(page.locator("#id_threshold_usd")).to_be_hidden()
    expect(page.locator("#id_window_hours")).to_be_hidden()
    page.select_option("#id_kind", "idle_cost")
    expect(page.locator("#id_threshold_usd")).to_be_visible()
    expect(page.locator("#id_stale_minutes")).to_be_hidden()
    page.select_option("#id_channel", label="Pager bridge")
    page.fill("#id_threshold_usd", "300")
    page.fill("#id_window_hours", "24")
    page.locator("form.card button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/alerts/rules/idle-pools/$"))
    expect(page.locator("#rule-condition")).to_have_text(
        "a pool's idle cost is above $300.00 over 24 h"
    )

    services.evaluate_and_deliver()
    page.goto(f"{live_server.url}/alerts/")
    # 8 GPUs × $3.00 × (1 − 0.1 busy) × 24 h = $518.40.
    alert_link = page.get_by_role("link", name="Idle H100: idle cost $518.40 over the last 24 h")
    expect(alert_link).to_be_visible()
    alert_link.click()
    expect(page.locator("#alert-deliveries")).to_contain_text("Pager bridge")
    expect(page.locator("#alert-deliveries")).to_contain_text("Sent")
    page.screenshot(path=str(screenshot_dir / "alerts-alert.png"), full_page=True)
    firing = [body for body in receiver.received("/hook") if body["status"] == "firing"]
    assert len(firing) == 2  # the test notification and the alert

    page.locator("#silence-alert").click()
    expect(page.locator("#id_matchers_text")).to_have_value(re.compile("pool=idle-h100"))
    page.fill("#id_comment", "Reserved for the launch")
    page.locator("form.card button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/alerts/silences/$"))
    expect(page.locator("#silences")).to_contain_text("Reserved for the launch")
    expect(page.locator("#silences")).to_contain_text("Active")
