"""The API is throttled per user (DRF's UserRateThrottle, counted in the Redis cache)."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.urls import reverse
from rest_framework.throttling import SimpleRateThrottle

from apps.accounts.models import ApiToken


@pytest.mark.django_db
def test_token_user_is_throttled_after_the_configured_rate(client, make_user, monkeypatch):
    # Rates are read into the class when DRF loads; lower them for this test only.
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "3/minute"}
    )
    user = make_user("reader")
    # Only this user's counter: clearing the whole cache would also wipe the Celery
    # broker's keys, which share the Redis database in tests.
    throttle_key = f"throttle_user_{user.pk}"
    cache.delete(throttle_key)
    _, plaintext = ApiToken.issue(
        user=user, description="t", lifetime=timedelta(days=1), read_only=True
    )
    headers = {"Authorization": f"Bearer {plaintext}"}
    statuses = [client.get(reverse("api-me"), headers=headers).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    cache.delete(throttle_key)
