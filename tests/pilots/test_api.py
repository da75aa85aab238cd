"""``/api/v1/pilots/``: one workload's results with per-GPU throughput and cost; POST of a
file's text imports it once, refuses a bad one naming the key, and refuses another team's
workload as a slug of nothing."""

import pytest
from django.urls import reverse

from apps.pilots.models import PilotResult
from tests.factories import TeamFactory, UserFactory

URL = "/api/v1/pilots/"


def _body(workload, text, **fields):
    return {
        "workload": workload.slug,
        "gpu_model": "h100-sxm",
        "gpus": 4,
        "format": "vllm",
        "text": text,
        "filename": "vllm.json",
        **fields,
    }


@pytest.mark.django_db
def test_post_then_get_by_workload(client, workload, sample):
    assert reverse("pilot-list") == URL
    client.force_login(UserFactory(role="lead"))
    text = sample("vllm").decode()
    created = client.post(
        URL, _body(workload, text, name="kvcache"), content_type="application/json"
    )
    assert created.status_code == 201, created.content
    again = client.post(URL, _body(workload, text, name="renamed"), content_type="application/json")
    assert again.status_code == 200
    assert again.json()["id"] == created.json()["id"]
    assert again.json()["name"] == "kvcache"

    listed = client.get(URL, {"workload": workload.slug}).json()
    [result] = listed["results"]
    assert result["workload"] == workload.slug
    assert result["gpu_model"] == "h100-sxm"
    assert result["output_tokens_per_second"] == 11011.349280220396
    assert result["output_tokens_per_second_per_gpu"] == pytest.approx(11011.349280220396 / 4)
    assert result["ttft_p99_ms"] == 1249.6421772296253
    assert result["price_source"] == "pool"
    assert result["price_per_gpu_hour_usd"] == "2.9900"
    # $2.99 × 4 ÷ (11011.349280220396 × 3600) × 10⁶ = $0.301708…, to 4 decimals
    assert result["cost_per_million_output_tokens_usd"] == "0.3017"
    assert client.get(URL, {"workload": "another"}).json()["results"] == []


@pytest.mark.django_db
def test_a_bad_text_is_refused_naming_the_key_and_stores_nothing(client, workload):
    client.force_login(UserFactory(role="ops"))
    response = client.post(
        URL, _body(workload, '{"request_throughput": 1}'), content_type="application/json"
    )
    assert response.status_code == 400
    assert "key “output_throughput” is missing" in response.json()["text"][0]
    assert not PilotResult.objects.exists()


@pytest.mark.django_db
def test_roles_without_the_permission_cannot_post(client, workload, sample):
    client.force_login(UserFactory(role="procurement"))
    response = client.post(
        URL, _body(workload, sample("vllm").decode()), content_type="application/json"
    )
    assert response.status_code == 403
    assert not PilotResult.objects.exists()


@pytest.mark.django_db
def test_another_teams_workload_is_refused_and_its_results_hidden(client, workload, sample):
    team_a, team_b = TeamFactory(name="Team A"), TeamFactory(name="Team B")
    workload.pool.team = team_a
    workload.pool.save(update_fields=["team"])
    client.force_login(UserFactory(role="lead", teams=[team_a]))
    created = client.post(
        URL, _body(workload, sample("vllm").decode()), content_type="application/json"
    )
    assert created.status_code == 201
    detail = f"{URL}{created.json()['id']}/"

    client.force_login(UserFactory(role="lead", teams=[team_b]))
    refused = client.post(
        URL,
        _body(workload, sample("mlperf").decode(), format="mlperf"),
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert "does not exist" in refused.json()["workload"][0]
    assert client.get(URL, {"workload": workload.slug}).json()["results"] == []
    assert client.get(detail).status_code == 404
    assert PilotResult.objects.count() == 1
