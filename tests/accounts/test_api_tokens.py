"""API tokens: the secret is shown once and stored only as a SHA-256 digest; expired
tokens get 401; read-only tokens cannot write; write tokens still need the role."""

import hashlib
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.pools.models import Pool

NEW_POOL = {
    "slug": "api-made-pool",
    "name": "API-made pool",
    "purpose": "inference",
    "deployment": "cloud_on_demand",
    "gpu_model": "l4",
    "gpu_count": 8,
    "gpus_per_node": 8,
    "on_demand_price_per_gpu_hour_usd": "0.80",
}


def _bearer(plaintext):
    return {"Authorization": f"Bearer {plaintext}"}


@pytest.mark.django_db
def test_token_created_in_the_ui_is_shown_once_and_stored_only_as_a_hash(client, make_user):
    user = make_user("lead")
    client.force_login(user)
    response = client.post(
        reverse("accounts:token_create"),
        {"description": "scraper on node-17", "lifetime_days": 30, "read_only": "on"},
    )
    assert response.status_code == 200
    plaintext = response.context["plaintext"]
    assert plaintext.startswith("gpf_") and plaintext in response.content.decode()
    secret = plaintext.split("_", 2)[2]

    token = ApiToken.objects.get(user=user)
    assert token.secret_sha256 == hashlib.sha256(secret.encode()).hexdigest()
    # No column of any row holds the secret, whatever its name.
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_apitoken")
        stored = " ".join(str(value) for row in cursor.fetchall() for value in row)
    assert secret not in stored and plaintext not in stored
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)

    # The list page never shows the secret again.
    listing = client.get(reverse("accounts:token_list")).content.decode()
    assert secret not in listing and token.key_id in listing


@pytest.mark.django_db
def test_valid_token_authenticates_and_records_last_use(client, make_user):
    user = make_user("ops")
    token, plaintext = ApiToken.issue(
        user=user, description="t", lifetime=timedelta(days=1), read_only=True
    )
    response = client.get(reverse("api-me"), headers=_bearer(plaintext))
    assert response.status_code == 200
    assert response.json()["username"] == user.username
    assert response.json()["roles"] == ["Ops"]
    token.refresh_from_db()
    assert token.last_used_at is not None


@pytest.mark.django_db
def test_expired_token_gets_401(client, make_user):
    token, plaintext = ApiToken.issue(
        user=make_user("lead"), description="old", lifetime=timedelta(days=1), read_only=False
    )
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client.get(reverse("pool-list"), headers=_bearer(plaintext))
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


@pytest.mark.django_db
def test_wrong_secret_and_malformed_tokens_get_401(client, make_user):
    token, plaintext = ApiToken.issue(
        user=make_user("lead"), description="t", lifetime=timedelta(days=1), read_only=False
    )
    tampered = plaintext[:-2] + ("AA" if not plaintext.endswith("AA") else "BB")
    for bad in (tampered, "not-a-token", f"gpf_{token.key_id}"):
        assert client.get(reverse("pool-list"), headers=_bearer(bad)).status_code == 401


@pytest.mark.django_db
def test_read_only_token_cannot_write_even_for_a_lead(client, make_user):
    _, plaintext = ApiToken.issue(
        user=make_user("lead"), description="ro", lifetime=timedelta(days=1), read_only=True
    )
    assert client.get(reverse("pool-list"), headers=_bearer(plaintext)).status_code == 200
    response = client.post(
        reverse("pool-list"), NEW_POOL, content_type="application/json", headers=_bearer(plaintext)
    )
    assert response.status_code == 403
    assert not Pool.objects.filter(slug=NEW_POOL["slug"]).exists()


@pytest.mark.django_db
def test_write_token_writes_with_the_users_role_only(client, make_user):
    _, lead_token = ApiToken.issue(
        user=make_user("lead"), description="rw", lifetime=timedelta(days=1), read_only=False
    )
    _, ops_token = ApiToken.issue(
        user=make_user("ops"), description="rw", lifetime=timedelta(days=1), read_only=False
    )
    refused = client.post(
        reverse("pool-list"), NEW_POOL, content_type="application/json", headers=_bearer(ops_token)
    )
    assert refused.status_code == 403
    created = client.post(
        reverse("pool-list"), NEW_POOL, content_type="application/json", headers=_bearer(lead_token)
    )
    assert created.status_code == 201, created.content
    assert created.json()["effective_price_per_gpu_hour_usd"] == "0.8000"
    assert created.json()["price_per_hour_usd"] == "6.4000"  # 8 GPUs × $0.80
    assert Pool.objects.get(slug=NEW_POOL["slug"]).gpu_count == 8


@pytest.mark.django_db
def test_user_cannot_revoke_someone_elses_token(client, make_user):
    owner, other = make_user("lead"), make_user("lead")
    token, _ = ApiToken.issue(
        user=owner, description="t", lifetime=timedelta(days=1), read_only=True
    )
    client.force_login(other)
    url = reverse("accounts:token_delete", kwargs={"key_id": token.key_id})
    assert client.post(url).status_code == 404
    assert ApiToken.objects.filter(pk=token.pk).exists()
    client.force_login(owner)
    assert client.post(url).status_code == 302
    assert not ApiToken.objects.filter(pk=token.pk).exists()
