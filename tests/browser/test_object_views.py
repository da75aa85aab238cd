"""A declared object's create, edit and delete in Chromium (apps/core/crud.py): an
interruption recorded, corrected and deleted by a technical lead, the delete confirmed
first."""

import re

import pytest
from playwright.sync_api import expect

from apps.pools.models import Interruption
from tests.factories import TEST_PASSWORD


@pytest.mark.browser
def test_lead_records_corrects_and_deletes_an_interruption(
    page, live_server, make_user, transactional_db, demo
):
    user = make_user("lead")
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    page.goto(f"{live_server.url}/interruptions/new/")
    page.select_option("#id_workload", index=1)
    page.select_option("#id_cause", "hardware")
    page.fill("#id_restart_minutes", "25")
    page.locator("form.card button[type=submit]").click()
    expect(page.locator("#messages .alert-success")).to_contain_text("created")
    interruption = Interruption.objects.get(recorded_by=user)
    assert page.url.endswith(f"/interruptions/{interruption.pk}/")

    page.goto(f"{live_server.url}/interruptions/{interruption.pk}/edit/")
    page.fill("#id_restart_minutes", "40")
    page.locator("form.card button[type=submit]").click()
    expect(page.locator("#messages .alert-success")).to_contain_text("saved")
    interruption.refresh_from_db()
    assert interruption.restart_minutes == 40
    assert interruption.recorded_by == user

    page.goto(f"{live_server.url}/interruptions/{interruption.pk}/delete/")
    expect(page).to_have_title(re.compile("^Delete "))
    assert Interruption.objects.filter(pk=interruption.pk).exists()  # asked, not done
    page.locator("form button.btn-danger").click()
    expect(page.locator("#messages .alert-success")).to_contain_text("deleted")
    assert page.url.endswith("/interruptions/")
    assert not Interruption.objects.filter(pk=interruption.pk).exists()
