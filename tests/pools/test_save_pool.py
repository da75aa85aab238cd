"""Every write of a pool goes through ``pools.services.save_pool``: whichever channel
saves it (the pages, the API, the admin, the connect flow, the demo, the factories), its
stored effective price is the one its cost inputs give."""

from decimal import Decimal

import pytest
from django.contrib.admin.sites import site
from django.urls import reverse
from rest_framework.test import APIClient

from apps.pools.admin import PoolAdmin
from apps.pools.models import Pool
from apps.pools.services import save_pool
from tests.factories import PoolFactory, UserFactory
from tests.pools.test_pool_views import POOL_FORM

DERIVED = (
    "effective_price_per_gpu_hour_usd",
    "fixed_price_per_gpu_hour_usd",
    "price_per_gpu_kwh_usd",
)


def assert_priced_from_its_inputs(slug: str, usd_per_gpu_hour: Decimal) -> None:
    stored = Pool.objects.get(slug=slug)
    rederived = Pool.objects.get(slug=slug)
    rederived.refresh_effective_price()
    assert [getattr(stored, name) for name in DERIVED] == [
        getattr(rederived, name) for name in DERIVED
    ]
    assert stored.effective_price_per_gpu_hour_usd == usd_per_gpu_hour


@pytest.fixture
def lead(db):
    return UserFactory(role="lead")


@pytest.fixture
def lead_api(lead):
    client = APIClient()
    client.force_authenticate(lead)
    return client


def _edit_form(pool, **changes):
    return {
        **POOL_FORM,
        "name": pool.name,
        "slug": pool.slug,
        "deployment": "cloud_on_demand",
        "gpu_model": pool.gpu_model.pk,
        "on_demand_price_per_gpu_hour_usd": str(pool.on_demand_price_per_gpu_hour_usd),
        **changes,
    }


@pytest.mark.django_db
def test_the_create_page(client, lead, gpu_model):
    client.force_login(lead)
    response = client.post(reverse("pools:pool_create"), {**POOL_FORM, "gpu_model": gpu_model.pk})
    assert response.status_code == 302
    # 30000/(48×730) + 0.7 kW × 1.3 × $0.09 + (10000 + 6000)/730/16 = 2.30793…, to 4 places.
    assert_priced_from_its_inputs("owned-h100", Decimal("2.3079"))


@pytest.mark.django_db
def test_the_edit_page(client, lead, pool):
    client.force_login(lead)
    url = reverse("pools:pool_edit", kwargs={"slug": pool.slug})
    response = client.post(url, _edit_form(pool, on_demand_price_per_gpu_hour_usd="3.75"))
    assert response.status_code == 302, response.context["form"].errors
    assert_priced_from_its_inputs(pool.slug, Decimal("3.75"))


@pytest.mark.django_db
def test_the_api_create_and_update(lead_api, gpu_model):
    response = lead_api.post(
        "/api/v1/pools/",
        {
            "slug": "api-pool",
            "name": "API pool",
            "purpose": "training",
            "deployment": "cloud_on_demand",
            "gpu_model": gpu_model.slug,
            "gpu_count": 8,
            "on_demand_price_per_gpu_hour_usd": "3.10",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert_priced_from_its_inputs("api-pool", Decimal("3.10"))
    response = lead_api.patch(
        "/api/v1/pools/api-pool/", {"on_demand_price_per_gpu_hour_usd": "2.40"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert_priced_from_its_inputs("api-pool", Decimal("2.40"))


@pytest.mark.django_db
def test_the_admin(rf, pool):
    request = rf.post("/admin/")
    request.user = UserFactory(role="admin")
    pool.on_demand_price_per_gpu_hour_usd = Decimal("4.20")
    PoolAdmin(Pool, site).save_model(request, pool, form=None, change=True)
    assert_priced_from_its_inputs(pool.slug, Decimal("4.20"))


@pytest.mark.django_db
def test_the_factories_and_the_service_itself(gpu_model):
    pool = PoolFactory(gpu_model=gpu_model, on_demand_price_per_gpu_hour_usd=Decimal("1.99"))
    assert_priced_from_its_inputs(pool.slug, Decimal("1.99"))
    pool.on_demand_price_per_gpu_hour_usd = Decimal("2.49")
    save_pool(pool)
    assert_priced_from_its_inputs(pool.slug, Decimal("2.49"))


@pytest.mark.django_db
def test_the_demo(gpu_model):
    from apps.demo.management.commands.seed_demo import _save_demo_object
    from apps.demo.registry import DemoRegistry

    values = {
        "slug": "demo-priced",
        "name": "Demo priced",
        "purpose": "training",
        "deployment": "cloud_on_demand",
        "gpu_model": gpu_model,
        "gpu_count": 8,
        "gpus_per_node": 8,
        "on_demand_price_per_gpu_hour_usd": Decimal("2.22"),
    }
    pool = _save_demo_object(DemoRegistry(), Pool, values, save=save_pool)
    assert_priced_from_its_inputs(pool.slug, Decimal("2.22"))


def test_no_caller_derives_the_price_by_hand():
    """Only the service (and the price history it calls) derives a pool's price."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "apps"
    callers = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "migrations" not in path.parts
        and ".refresh_effective_price()" in path.read_text(encoding="utf-8")
    )
    assert callers == [
        # Replacing a month's typed price with the billed cost writes the month's price
        # periods from an unsaved draft, not the pool.
        "bills/reconciliation.py",
        # The demo's price cut writes two price periods of an unsaved price, not the pool.
        "demo/management/commands/seed_demo.py",
        "pools/prices.py",
        "pools/services.py",
    ]
