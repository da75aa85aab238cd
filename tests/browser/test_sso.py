"""Single sign-on in Chromium, end to end with the real OIDC provider of
tests/oidc_provider/: alice clicks "Sign in with Test IdP" on gpufleet's sign-in page,
signs in at the provider, lands on the Overview as a technical lead of team vision (the
group mapping gives ml-vision both), sees vision's pools and the shared ones and not
speech's, then signs out of gpufleet and of the provider.

Each step is a helper, so that checks of what alice sees once signed in can be added
between them."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import expect

from apps.accounts.models import AuditEvent
from tests.factories import PoolFactory, TeamFactory
from tests.oidc_provider.fixtures import ACCOUNTS, GROUP_MAPPING


def load_the_group_mapping():
    """Team vision, and the mapping as OIDC_GROUP_MAPPING gives it."""
    vision = TeamFactory(name="Vision", slug="vision")
    call_command("sync_group_mapping", mapping=GROUP_MAPPING, verbosity=0)
    return vision


def sign_in_with_sso(page, live_server, provider, username, screenshot_dir=None):
    """From gpufleet's sign-in page, through the provider's form, back to the Overview."""
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(f"{live_server.url}/login/?next=/")
    expect(page.locator("#id_username")).to_be_visible()  # the local form stays
    if screenshot_dir:
        page.screenshot(path=str(screenshot_dir / "sso-sign-in-page.png"))
    page.get_by_role("link", name=f"Sign in with {provider.name}").click()
    expect(page).to_have_url(re.compile(rf"^{re.escape(provider.issuer)}/interaction/"))
    page.fill("#provider-username", username)
    page.fill("#provider-password", provider.password_of(username))
    page.click("#provider-sign-in")
    expect(page).to_have_url(f"{live_server.url}/")


def expect_signed_in_as(page, name, roles):
    page.set_viewport_size({"width": 1400, "height": 900})  # the header names them from xl
    expect(page.locator("#current-user")).to_have_text(name)
    expect(page.locator("#current-roles")).to_have_text(roles)
    expect(page.locator(".page-title").first).to_be_visible()


def sign_out_of_gpufleet_and_the_provider(page, live_server, provider):
    """The user menu's sign-out ends gpufleet's session, then the provider asks to end
    its own and sends the browser back to gpufleet's sign-in page."""
    page.locator("[aria-label='Open user menu']").click()
    page.locator("#logout-button").click()
    expect(page).to_have_url(re.compile(rf"^{re.escape(provider.issuer)}/session/end"))
    page.click("#provider-logout")
    expect(page).to_have_url(f"{live_server.url}/login/")


def pools_of_two_teams_and_a_shared_one(vision):
    speech = TeamFactory(name="Speech", slug="speech")
    return {
        "vision": PoolFactory(name="Vision H100", slug="vision-h100", team=vision),
        "speech": PoolFactory(name="Speech A100", slug="speech-a100", team=speech),
        "shared": PoolFactory(name="Shared L40S", slug="shared-l40s"),
    }


def expect_only_the_teams_pools(page, live_server, pools):
    """The pool list, the API and a typed URL: alice sees vision's pool and the shared
    one; speech's is not listed and its page answers 404, as if it did not exist."""
    page.goto(f"{live_server.url}/pools/")
    table = page.locator("#pool-table")
    expect(table).to_contain_text(pools["vision"].name)
    expect(table).to_contain_text(pools["shared"].name)
    expect(table).not_to_contain_text(pools["speech"].name)
    listed = page.request.get(f"{live_server.url}/api/v1/pools/").json()
    assert sorted(pool["slug"] for pool in listed["results"]) == ["shared-l40s", "vision-h100"]
    hidden = page.request.get(f"{live_server.url}{pools['speech'].get_absolute_url()}")
    assert hidden.status == 404
    # Costs and exports hold the same two pools: the cost report's rows through the API,
    # and the CSV the reports page downloads.
    costs = page.request.get(f"{live_server.url}/api/v1/reports/cost/?group_by=pool").json()
    assert sorted(row["key"] for row in costs) == ["shared-l40s", "vision-h100"]
    with page.expect_download() as download:
        page.goto(f"{live_server.url}/reports/")
        page.evaluate("url => { window.location.href = url }", "/reports/?export=csv")
    exported = download.value.path().read_text(encoding="utf-8-sig")
    assert pools["vision"].name in exported and pools["shared"].name in exported
    assert pools["speech"].name not in exported


def expect_signed_out(page, live_server, provider):
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(f"{live_server.url}/login/?next=/")
    # The provider's session ended too: signing in again asks for the password.
    page.get_by_role("link", name=f"Sign in with {provider.name}").click()
    expect(page.locator("#provider-password")).to_be_visible()


@pytest.mark.browser
def test_alice_signs_in_with_sso_as_a_lead_of_vision_and_signs_out(
    page, live_server, oidc_provider, transactional_db, screenshot_dir
):
    vision = load_the_group_mapping()
    pools = pools_of_two_teams_and_a_shared_one(vision)

    sign_in_with_sso(page, live_server, oidc_provider, "alice", screenshot_dir)
    expect_signed_in_as(page, ACCOUNTS["alice"]["name"], "Technical lead")
    page.screenshot(path=str(screenshot_dir / "sso-overview-alice.png"))
    expect_only_the_teams_pools(page, live_server, pools)

    alice = get_user_model().objects.get(username="alice")
    assert set(alice.groups.values_list("name", flat=True)) == {"Technical lead"}
    assert list(alice.teams.all()) == [vision]
    assert alice.oidc_identities.get().subject == ACCOUNTS["alice"]["sub"]

    sign_out_of_gpufleet_and_the_provider(page, live_server, oidc_provider)
    expect_signed_out(page, live_server, oidc_provider)
    assert list(
        AuditEvent.objects.filter(subject_user=alice, kind__in=["sign_in", "sign_out"])
        .order_by("pk")
        .values_list("kind", "method")
    ) == [("sign_in", "sso"), ("sign_out", "sso")]
