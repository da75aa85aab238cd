"""``slug`` is optional on every API create: left out, it is derived from the name as the
pages derive it (pinyin for Chinese, apps/core/slugs.py), with -2, -3… when taken; a slug
sent is kept as sent, and refused when taken."""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, Team
from apps.alerts.models import AlertChannel
from apps.pools.models import Pool, Workload

POOL = {
    "purpose": "inference",
    "deployment": "cloud_on_demand",
    "gpu_model": "h100-sxm",
    "gpu_count": 8,
    "on_demand_price_per_gpu_hour_usd": "2.99",
    "in_service_from": "2024-01-01T00:00:00Z",
}


@pytest.fixture
def api(make_user):
    client = APIClient()
    _, plaintext = ApiToken.issue(
        user=make_user("admin"), description="t", lifetime=timedelta(days=1), read_only=False
    )
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


def _create(api, path, body):
    response = api.post(path, body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.mark.django_db
def test_a_pool_named_in_chinese_is_created_with_a_pinyin_slug(api, gpu_model):
    body = _create(api, "/api/v1/pools/", {**POOL, "name": "北京推理池"})
    assert body["slug"] == "bei-jing-tui-li-chi"
    assert Pool.objects.get(slug="bei-jing-tui-li-chi").name == "北京推理池"
    assert api.get("/api/v1/pools/bei-jing-tui-li-chi/").status_code == 200


@pytest.mark.django_db
def test_slugs_are_derived_for_teams_workloads_and_alert_channels(api, pool, architecture):
    team = _create(api, "/api/v1/teams/", {"name": "上海训练组"})
    assert team["slug"] == "shang-hai-xun-lian-zu"
    assert Team.objects.filter(slug="shang-hai-xun-lian-zu").exists()
    workload = _create(
        api,
        "/api/v1/workloads/",
        {
            "name": "重庆微调",
            "kind": "full_fine_tune",
            "pool": pool.slug,
            "model_architecture": architecture.slug,
            "gpu_count": 8,
            "data_parallel": 8,
        },
    )
    assert workload["slug"] == "chong-qing-wei-diao"
    assert Workload.objects.filter(slug="chong-qing-wei-diao").exists()
    channel = _create(
        api,
        "/api/v1/alert-channels/",
        {"name": "值班群", "kind": "webhook", "url": "https://hooks.example.com/oncall"},
    )
    assert channel["slug"] == "zhi-ban-qun"
    assert AlertChannel.objects.filter(slug="zhi-ban-qun").exists()


@pytest.mark.django_db
def test_a_slug_sent_is_kept(api, gpu_model):
    body = _create(api, "/api/v1/pools/", {**POOL, "name": "北京推理池", "slug": "bj-infer"})
    assert body["slug"] == "bj-infer"


@pytest.mark.django_db
def test_a_derived_slug_is_unique_and_a_taken_slug_sent_is_refused(api, gpu_model):
    _create(api, "/api/v1/pools/", {**POOL, "name": "北京推理池"})
    # Another name with the same spelling gets the next free slug.
    second = _create(api, "/api/v1/pools/", {**POOL, "name": "北京 推理池"})
    assert second["slug"] == "bei-jing-tui-li-chi-2"
    third = _create(api, "/api/v1/pools/", {**POOL, "name": "北京·推理池"})
    assert third["slug"] == "bei-jing-tui-li-chi-3"
    # A reserved page address is never derived: /pools/new/ is the create page.
    assert _create(api, "/api/v1/pools/", {**POOL, "name": "New"})["slug"] == "new-2"

    taken = api.post(
        "/api/v1/pools/", {**POOL, "name": "Other", "slug": "bei-jing-tui-li-chi"}, format="json"
    )
    assert taken.status_code == 400
    assert "slug" in taken.json()


@pytest.mark.django_db
def test_a_name_with_nothing_to_spell_needs_a_slug(api):
    response = api.post("/api/v1/teams/", {"name": "：！"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"slug": ["Enter a slug or a name it can be made from."]}


def test_the_schema_documents_slug_as_optional_on_every_create():
    from tests.test_api_schema import RAW_SCHEMA

    components = RAW_SCHEMA["components"]["schemas"]
    creates = {
        name: component
        for name, component in components.items()
        if name.endswith("Request")
        and not name.startswith("Patched")
        and "slug" in component.get("properties", {})
        and "name" in component.get("properties", {})
    }
    assert {"PoolRequest", "WorkloadRequest", "TeamRequest", "GpuModelRequest"} <= set(creates)
    for name, component in creates.items():
        assert "slug" not in component.get("required", []), name
        assert "derived from the name" in component["properties"]["slug"]["description"], name
