"""A failure answers a plain page (or JSON) with a reference the log carries too, never a
traceback: what `make run` serves, with DEBUG off."""

import logging
import re

import pytest

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.failing_urls")]


@pytest.fixture
def failing_client(client, make_user, settings):
    settings.DEBUG = False
    client.raise_request_exception = False
    client.force_login(make_user("lead"))
    return client


def test_a_failed_page_shows_a_reference_that_the_log_carries(failing_client, caplog):
    with caplog.at_level(logging.ERROR, logger="gpufleet.errors"):
        response = failing_client.get("/fails/")

    assert response.status_code == 500
    body = response.content.decode()
    reference = re.search(r'id="error-reference">([0-9a-f]{12})<', body).group(1)
    assert "a failure the page must not show" not in body
    assert "Traceback" not in body
    logged = [record for record in caplog.records if reference in record.getMessage()]
    assert len(logged) == 1
    assert logged[0].exc_info[1].args == ("a failure the page must not show",)


def test_a_failed_api_call_answers_json_with_its_reference(failing_client, caplog):
    with caplog.at_level(logging.ERROR, logger="gpufleet.errors"):
        response = failing_client.get("/api/v1/fails/")

    assert response.status_code == 500
    reference = response.json()["reference"]
    assert response.json() == {"detail": "Server error.", "reference": reference}
    assert any(reference in record.getMessage() for record in caplog.records)


def test_the_page_is_in_chinese_for_a_chinese_reader(failing_client):
    response = failing_client.get("/fails/", headers={"accept-language": "zh-hans"})

    assert response.status_code == 500
    assert "出错" in response.content.decode()
