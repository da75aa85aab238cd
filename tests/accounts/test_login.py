"""Sign-in: every page requires it, and repeated failures lock out (django-axes)."""

import pytest
from django.urls import reverse

from tests.factories import TEST_PASSWORD


@pytest.mark.django_db
def test_login_then_logout(client, make_user):
    user = make_user("reader")
    response = client.post(reverse("login"), {"username": user.username, "password": TEST_PASSWORD})
    assert response.status_code == 302 and response.url == reverse("dashboard:overview")
    assert client.get(reverse("dashboard:overview")).status_code == 200
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("dashboard:overview")).status_code == 302


@pytest.mark.django_db
def test_repeated_failures_lock_the_account_out(client, make_user, settings):
    user = make_user("reader")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = client.post(reverse("login"), {"username": user.username, "password": "wrong"})
        assert response.status_code == 200
        assert "correct username and password" in response.content.decode()
    locked = client.post(reverse("login"), {"username": user.username, "password": "wrong"})
    assert locked.status_code == 429
    # Even the right password is refused while locked out.
    again = client.post(reverse("login"), {"username": user.username, "password": TEST_PASSWORD})
    assert again.status_code == 429
    assert client.get(reverse("dashboard:overview")).status_code == 302
