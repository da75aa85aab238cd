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


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/telemetry/gpu/", "/reports/recompute/"])
def test_a_multipart_body_without_its_boundary_is_a_400_not_an_error(make_user, path):
    """Found by the schema fuzzer: "multipart/form-data" with no boundary could not be
    parsed by the check above, and the request ended in an exception."""
    from django.test import Client

    client = Client(raise_request_exception=True)
    client.force_login(make_user("ops"))
    response = client.generic("POST", path, b"--x\r\n\r\n", content_type="multipart/form-data")
    assert response.status_code == 400
    text = response.json()["detail"] if path.startswith("/api/") else response.content.decode()
    assert text.startswith("The request body could not be read as multipart/form-data (")
    assert "with its boundary in the Content-Type, or as JSON." in text
