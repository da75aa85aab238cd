"""Sessions end after an idle timeout as well as their absolute lifetime; sign-in is
throttled per username from an address and per address across usernames; every response
forbids the browser features the dashboard never uses."""

import time

import pytest
from axes.models import AccessAttempt
from django.urls import reverse

from apps.accounts.middleware import LAST_ACTIVITY_SESSION_KEY
from tests.factories import TEST_PASSWORD


def _sign_in(client, user):
    response = client.post(reverse("login"), {"username": user.username, "password": TEST_PASSWORD})
    assert response.status_code == 302


def _age_last_activity(client, seconds):
    session = client.session
    session[LAST_ACTIVITY_SESSION_KEY] = int(time.time()) - seconds
    session.save()


@pytest.mark.django_db
def test_idle_session_is_signed_out(client, make_user, settings):
    _sign_in(client, make_user("reader"))
    assert client.get(reverse("dashboard:overview")).status_code == 200
    _age_last_activity(client, int(settings.SESSION_IDLE_TIMEOUT.total_seconds()) + 60)
    response = client.get(reverse("dashboard:overview"))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    # Signed out for good, not just for one request.
    assert client.get(reverse("dashboard:overview")).status_code == 302


@pytest.mark.django_db
def test_activity_within_the_idle_timeout_keeps_the_session(client, make_user, settings):
    _sign_in(client, make_user("reader"))
    idle_seconds = int(settings.SESSION_IDLE_TIMEOUT.total_seconds())
    _age_last_activity(client, idle_seconds - 120)
    assert client.get(reverse("dashboard:overview")).status_code == 200
    # That request counted as activity: the clock starts again from it.
    assert time.time() - client.session[LAST_ACTIVITY_SESSION_KEY] < 60
    assert client.get(reverse("dashboard:overview")).status_code == 200


def test_idle_timeout_and_absolute_lifetime_defaults(settings):
    assert settings.SESSION_IDLE_TIMEOUT.total_seconds() == 8 * 3600
    assert settings.SESSION_COOKIE_AGE == 14 * 24 * 3600


@pytest.mark.django_db
def test_one_address_spraying_usernames_is_locked_out(client, make_user, settings):
    settings.AXES_ADDRESS_FAILURE_LIMIT = 6
    assert settings.AXES_FAILURE_LIMIT < settings.AXES_ADDRESS_FAILURE_LIMIT
    # One wrong password for each of six usernames: no username reaches its own limit.
    for attempt in range(settings.AXES_ADDRESS_FAILURE_LIMIT - 1):
        response = client.post(reverse("login"), {"username": f"u{attempt}", "password": "x"})
        assert response.status_code == 200
    locked = client.post(reverse("login"), {"username": "u-last", "password": "x"})
    assert locked.status_code == 429
    # A real user's right password from that address is refused too while it cools off...
    user = make_user("reader")
    again = client.post(reverse("login"), {"username": user.username, "password": TEST_PASSWORD})
    assert again.status_code == 429
    # ...but the same user signs in from another address.
    other = client.post(
        reverse("login"),
        {"username": user.username, "password": TEST_PASSWORD},
        REMOTE_ADDR="192.0.2.7",
    )
    assert other.status_code == 302


@pytest.mark.django_db
def test_address_limit_counts_only_within_the_cool_off(client, settings):
    settings.AXES_ADDRESS_FAILURE_LIMIT = 3
    for attempt in range(settings.AXES_ADDRESS_FAILURE_LIMIT - 1):
        client.post(reverse("login"), {"username": f"u{attempt}", "password": "x"})
    # Their failures are older than the cool-off: they no longer count.
    AccessAttempt.objects.update(attempt_time="2000-01-01T00:00:00Z")
    response = client.post(reverse("login"), {"username": "u-next", "password": "x"})
    assert response.status_code == 200


@pytest.mark.django_db
def test_permissions_policy_header(client):
    header = client.get(reverse("login"))["Permissions-Policy"]
    features = dict(item.split("=") for item in header.split(", "))
    for feature in ("camera", "microphone", "geolocation", "payment", "usb"):
        assert features[feature] == "()", header
