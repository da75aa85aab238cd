"""An archived pool takes no new workloads: the form does not offer it and refuses it by
name, the API answers 400 on its ``pool`` field; the workloads already on it keep
working, are shown and can still be edited."""

from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.pools.models import Pool, Workload
from apps.pools.services import save_pool

ARCHIVED_AT = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def archived_pool(pool, gpu_model):
    archived = Pool.objects.create(
        name="Retired A100s",
        slug="retired-a100s",
        purpose=pool.purpose,
        deployment=pool.deployment,
        gpu_model=gpu_model,
        gpu_count=16,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=pool.on_demand_price_per_gpu_hour_usd,
        in_service_from=pool.in_service_from,
        archived_at=ARCHIVED_AT,
    )
    save_pool(archived)
    return archived


@pytest.fixture
def lead(make_user):
    client = Client()
    client.force_login(make_user("lead"))
    return client


@pytest.fixture
def lead_api(make_user):
    client = APIClient()
    client.force_authenticate(make_user("lead"))
    return client


def _form_data(pool, **changes):
    return {
        "name": "New fine-tune",
        "slug": "new-fine-tune",
        "kind": "full_fine_tune",
        "model_architecture": "",
        "pool": pool.pk,
        "gpu_count": 8,
        "status": "planned",
        "precision": "bf16",
        "optimizer": "adamw",
        "zero_stage": 0,
        "data_parallel": 8,
        "tensor_parallel": 1,
        "pipeline_parallel": 1,
        "recompute": "none",
        "micro_batch_size": 1,
        "seq_len": 4096,
        "expected_mfu": "0.4",
        "weight_precision": "bf16",
        "kv_cache_precision": "bf16",
        "context_length": 4096,
        "concurrent_sequences": 1,
        "inference_tensor_parallel": 1,
        **changes,
    }


def _pool_options(page: str) -> str:
    return page.split('name="pool"', 1)[1].split("</select>", 1)[0]


@pytest.mark.django_db
def test_the_form_does_not_offer_an_archived_pool(lead, pool, archived_pool):
    options = _pool_options(lead.get(reverse("pools:workload_create")).content.decode())
    assert pool.name in options
    assert archived_pool.name not in options


@pytest.mark.django_db
def test_a_workload_is_not_created_on_an_archived_pool(lead, archived_pool):
    response = lead.post(reverse("pools:workload_create"), _form_data(archived_pool))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert set(errors) == {"pool"}, errors
    message = f"The pool {archived_pool.name} is archived: restore it first"
    assert message in errors["pool"][0]
    assert message in response.content.decode()
    assert not Workload.objects.filter(slug="new-fine-tune").exists()


@pytest.mark.django_db
def test_a_workload_is_not_moved_to_an_archived_pool(lead, workload, archived_pool):
    url = reverse("pools:workload_edit", args=[workload.slug])
    data = _form_data(archived_pool, name=workload.name, slug=workload.slug)
    response = lead.post(url, data)
    assert response.status_code == 200
    assert "is archived: restore it first" in response.context["form"].errors["pool"][0]
    workload.refresh_from_db()
    assert workload.pool_id != archived_pool.pk


@pytest.mark.django_db
def test_a_workload_on_an_archived_pool_is_shown_and_still_edited(lead, workload):
    pool = workload.pool
    pool.archived_at = ARCHIVED_AT
    pool.save()

    assert workload.name in lead.get(pool.get_absolute_url()).content.decode()
    assert pool.name in lead.get(workload.get_absolute_url()).content.decode()
    url = reverse("pools:workload_edit", args=[workload.slug])
    assert pool.name in _pool_options(lead.get(url).content.decode())
    data = _form_data(pool, name=workload.name, slug=workload.slug, description="kept")
    response = lead.post(url, data)
    assert response.status_code == 302, response.context["form"].errors
    workload.refresh_from_db()
    assert workload.description == "kept" and workload.pool_id == pool.pk
    # The archived pool's page offers no new workload.
    assert "Add a workload" not in lead.get(pool.get_absolute_url()).content.decode()


# --- API -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_api_refuses_a_workload_on_an_archived_pool(lead_api, archived_pool):
    response = lead_api.post(
        "/api/v1/workloads/",
        {
            "slug": "api-job",
            "name": "API job",
            "kind": "full_fine_tune",
            "pool": archived_pool.slug,
            "gpu_count": 8,
            "data_parallel": 8,
        },
        format="json",
    )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"pool"}, body
    assert body["pool"] == [
        f"The pool {archived_pool.name} is archived: restore it first, or choose a pool "
        "that is not archived."
    ]
    assert not Workload.objects.filter(slug="api-job").exists()


@pytest.mark.django_db
def test_api_refuses_to_move_a_workload_to_an_archived_pool(lead_api, workload, archived_pool):
    response = lead_api.patch(
        f"/api/v1/workloads/{workload.slug}/", {"pool": archived_pool.slug}, format="json"
    )
    assert response.status_code == 400
    assert "is archived: restore it first" in response.json()["pool"][0]
    workload.refresh_from_db()
    assert workload.pool_id != archived_pool.pk


@pytest.mark.django_db
def test_api_still_edits_a_workload_on_its_archived_pool(lead_api, workload):
    pool = workload.pool
    pool.archived_at = ARCHIVED_AT
    pool.save()
    response = lead_api.patch(
        f"/api/v1/workloads/{workload.slug}/",
        {"pool": pool.slug, "description": "kept"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    workload.refresh_from_db()
    assert workload.description == "kept" and workload.pool_id == pool.pk
    assert lead_api.get(f"/api/v1/workloads/{workload.slug}/").json()["pool"] == pool.slug
