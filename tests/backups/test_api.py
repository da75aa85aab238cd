"""The version registry and the checkpoint-interval estimate over the REST API."""

from datetime import timedelta

import pytest
from django.urls import reverse

from apps.accounts.models import ApiToken
from tests.backups.factories import SHA_A, make_drill, make_policy, make_version

pytestmark = pytest.mark.django_db
ESTIMATE_URL = "/api/v1/estimates/checkpoint-interval/"


def _headers(user, read_only=False):
    _, plaintext = ApiToken.issue(
        user=user, description="test", lifetime=timedelta(hours=1), read_only=read_only
    )
    return {"Authorization": f"Bearer {plaintext}"}


@pytest.mark.parametrize(
    ("mtbf_minutes", "published_minutes"),
    # Daly (2006), Future Generation Computer Systems 22, 303–312, figs. 3–5: δ = 5 min.
    [(24 * 60, 117.0), (6 * 60, 57.0), (15, 9.1)],
)
def test_estimate_matches_dalys_published_examples(
    client, make_user, mtbf_minutes, published_minutes
):
    response = client.post(
        ESTIMATE_URL,
        {
            "checkpoint_write_seconds": 300,
            "mtbf_seconds": mtbf_minutes * 60,
            "restart_seconds": 600,
        },
        content_type="application/json",
        headers=_headers(make_user("reader"), read_only=True),
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["daly_seconds"] / 60 == pytest.approx(published_minutes, rel=0.01)
    assert body["young_seconds"] == pytest.approx((2 * 300 * mtbf_minutes * 60) ** 0.5)
    tau, m = body["daly_seconds"], mtbf_minutes * 60
    assert body["expected_lost_fraction"] == pytest.approx(
        min(1.0, 300 / tau + tau / (2 * m) + 600 / m)
    )


@pytest.mark.parametrize(
    "body",
    [
        {"checkpoint_write_seconds": 0, "mtbf_seconds": 10},
        {"mtbf_seconds": 10},
        {"checkpoint_write_seconds": 1, "mtbf_seconds": 1e300},
        {"checkpoint_write_seconds": 1, "mtbf_seconds": 10, "restart_seconds": -1},
    ],
)
def test_estimate_refuses_bad_input(client, make_user, body):
    response = client.post(
        ESTIMATE_URL, body, content_type="application/json", headers=_headers(make_user("reader"))
    )
    assert response.status_code == 400


def _version_body(workload, **overrides):
    body = {
        "workload": workload.slug,
        "kind": "training_checkpoint",
        "model_name": "llama-3-8b",
        "data_version": "corpus-v2",
        "precision": "bf16",
        "config_hash": "3f9a1c2b7d4e",
        "step": 5000,
        "tier": "hot",
        "location": "s3://ckpt/hot/step5000/",
        "size_bytes": 16_000_000_000,
        "checksums": [{"node": "node-0", "checksum": SHA_A}],
    }
    return {**body, **overrides}


def test_a_training_script_registers_a_version_and_its_checksums(client, make_user, workload):
    headers = _headers(make_user("ops"))
    response = client.post(
        "/api/v1/backup-versions/",
        _version_body(workload),
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "llama-3-8b-bf16-datacorpus-v2-cfg3f9a1c2b7d4e-step5000"
    assert body["registered_by"].startswith("ops-")
    url = f"/api/v1/backup-versions/{body['id']}/checksums/"
    response = client.post(
        url,
        {"checksums": [{"node": "node-1", "checksum": SHA_A}]},
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code == 200, response.content
    assert [row["node"] for row in response.json()] == ["node-0", "node-1"]
    bad = client.post(
        url,
        {"checksums": [{"node": "node-2", "checksum": "abc"}]},
        content_type="application/json",
        headers=headers,
    )
    assert bad.status_code == 400
    assert "has 3 hex digits" in bad.json()["checksums"]["0"]["checksum"][0]
    listed = client.get(f"/api/v1/backup-versions/?workload={workload.slug}", headers=headers)
    assert listed.json()["count"] == 1


def test_registry_refuses_date_only_names_and_duplicates(client, make_user, workload):
    headers = _headers(make_user("ops"))
    response = client.post(
        "/api/v1/backup-versions/",
        _version_body(workload, model_name="2024-06-01"),
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code == 400
    assert "is only a date" in response.json()["model_name"][0]
    client.post(
        "/api/v1/backup-versions/",
        _version_body(workload),
        content_type="application/json",
        headers=headers,
    )
    again = client.post(
        "/api/v1/backup-versions/",
        _version_body(workload),
        content_type="application/json",
        headers=headers,
    )
    assert again.status_code == 400 and "already has a version named" in again.json()["name"][0]


@pytest.mark.parametrize(
    ("role", "read_only", "status"),
    [("reader", False, 403), ("lead", False, 403), ("ops", True, 403), ("ops", False, 201)],
)
def test_only_ops_with_a_read_write_token_register_versions(
    client, make_user, workload, role, read_only, status
):
    response = client.post(
        "/api/v1/backup-versions/",
        _version_body(workload),
        content_type="application/json",
        headers=_headers(make_user(role), read_only=read_only),
    )
    assert response.status_code == status


def test_policies_and_drills_are_readable(client, make_user, workload):
    policy = make_policy(workload)
    make_drill(policy, make_version(workload))
    headers = _headers(make_user("lead"), read_only=True)
    body = client.get(
        reverse("backup-policy-detail", kwargs={"workload": workload.slug}), headers=headers
    ).json()
    assert body["coverage_summary"].startswith("The data version and training config are not kept")
    drills = client.get(
        f"/api/v1/restore-drills/?workload={workload.slug}&passed=true", headers=headers
    ).json()
    assert drills["count"] == 1 and drills["results"][0]["passed"] is True
    assert client.get("/api/v1/restore-drills/?passed=maybe", headers=headers).status_code == 400
