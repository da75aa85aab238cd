"""A request whose Content-Length header is not a number is answered as any other (as
Django reads it: no body), not with a 500 from the request metrics; schemathesis found
``Content-Length: 1/0`` on ``GET /api/v1/workloads/{slug}/``."""

import pytest
from django.urls import reverse

from tests.factories import UserFactory, WorkloadFactory


@pytest.mark.django_db
@pytest.mark.parametrize("content_length", ["1/0", "twelve", "-"])
def test_a_content_length_that_is_not_a_number_is_read_as_no_body(client, content_length):
    client.force_login(UserFactory(role="reader"))
    workload = WorkloadFactory()

    api = client.get(f"/api/v1/workloads/{workload.slug}/", CONTENT_LENGTH=content_length)
    page = client.get(reverse("pools:pool_list"), CONTENT_LENGTH=content_length)

    assert api.status_code == 200 and api.json()["slug"] == workload.slug
    assert page.status_code == 200


@pytest.mark.django_db
def test_the_request_is_still_counted_for_metrics(client):
    from prometheus_client import REGISTRY

    def body_bytes_count():
        return REGISTRY.get_sample_value("django_http_requests_body_total_bytes_count") or 0

    client.force_login(UserFactory(role="reader"))
    before = body_bytes_count()
    client.get(reverse("pools:pool_list"), CONTENT_LENGTH="1/0")
    assert body_bytes_count() == before + 1
