"""A NUL character in a query parameter or a form field answers 400 with a sentence, on
pages and on the API: PostgreSQL cannot compare text holding one, and answered 500."""

import pytest
from django.urls import reverse

PAGES = [
    "/telemetry/reconciliation/?pool=%00&start=2026-01-01&end=2026-01-02",
    "/reports/?pool=%00",
    "/telemetry/imports/?page=%00",
]
API = [
    "/api/v1/pools/?pool=%00",
    "/api/v1/workloads/?pool=%00",
    "/api/v1/reconciliation/?pool=%00&start=2026-01-01T00:00:00Z&end=2026-01-02T00:00:00Z",
]


@pytest.fixture
def lead_client(client, make_user):
    client.force_login(make_user("lead"))
    client.raise_request_exception = False
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("url", PAGES)
def test_a_nul_in_a_page_query_is_a_400(lead_client, url):
    response = lead_client.get(url)
    assert response.status_code == 400
    assert "holds a NUL character (\\x00)" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("url", API)
def test_a_nul_in_an_api_query_is_a_400_in_json(lead_client, url):
    response = lead_client.get(url)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("The query parameter “pool” holds a NUL character (\\x00)")


@pytest.mark.django_db
def test_a_nul_in_a_posted_form_field_is_a_400(lead_client):
    response = lead_client.post(reverse("reports:recompute_create"), {"start": "2026-01-01\x00"})
    assert response.status_code == 400
    assert "The form field “start” holds a NUL character" in response.content.decode()
