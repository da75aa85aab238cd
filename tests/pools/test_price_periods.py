"""Editing a pool's prices asks from which hour: the form, the API and the history."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.forms.models import model_to_dict
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from apps.pools.hours import floor_hour
from apps.pools.models import Pool, PoolPricePeriod
from tests.factories import SERVICE_START

ONE_HOUR = timedelta(hours=1)


@pytest.fixture
def lead(make_user):
    return make_user("lead")


@pytest.fixture
def lead_api(lead):
    client = APIClient()
    client.force_authenticate(lead)
    return client


def _edit(client, pool, **changes):
    form = {
        name: value
        for name, value in model_to_dict(pool).items()
        if value is not None and name not in ("id", "owner", "team")
    }
    form.update({"gpu_model": pool.gpu_model.pk, **changes})
    return client.post(reverse("pools:pool_edit", kwargs={"slug": pool.slug}), form)


def _periods(pool):
    return list(
        PoolPricePeriod.objects.filter(pool=pool)
        .order_by("effective_from")
        .values_list("effective_from", "effective_price_per_gpu_hour_usd")
    )


@pytest.mark.django_db
def test_the_edit_form_starts_a_period_at_the_hour_given(client, lead, pool):
    """A pool priced before periods existed keeps $2.99 from its service start; $2.49
    runs from the hour given, 1 March 2026 09:00 UTC."""
    client.force_login(lead)
    start = datetime(2026, 3, 1, 9, tzinfo=UTC)
    response = _edit(
        client,
        pool,
        on_demand_price_per_gpu_hour_usd="2.49",
        price_effective_from="2026-03-01T09:00",
    )
    assert response.status_code == 302, response.context["form"].errors

    assert _periods(pool) == [(SERVICE_START, Decimal("2.9900")), (start, Decimal("2.4900"))]
    pool.refresh_from_db()
    assert pool.effective_price_per_gpu_hour_usd == Decimal("2.4900")
    page = client.get(pool.get_absolute_url()).content.decode()
    assert 'id="price-history"' in page
    assert "2026-03-01 09:00" in page
    assert lead.username in page or lead.get_full_name() in page


@pytest.mark.django_db
def test_the_edit_form_defaults_to_the_current_hour(client, lead, pool):
    client.force_login(lead)
    response = _edit(client, pool, on_demand_price_per_gpu_hour_usd="1.99")
    assert response.status_code == 302, response.context["form"].errors
    assert _periods(pool)[-1] == (floor_hour(timezone.now()), Decimal("1.9900"))


@pytest.mark.django_db
def test_saving_without_a_price_change_adds_no_period(client, lead, pool):
    client.force_login(lead)
    response = _edit(client, pool, description="Renamed racks")
    assert response.status_code == 302, response.context["form"].errors
    assert PoolPricePeriod.objects.filter(pool=pool).count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("start", "wanted"),
    [
        ("2026-03-01T09:30", "must be on a whole hour"),
        ("2021-12-31T23:00", "cannot be before the pool's service start"),
    ],
)
def test_the_edit_form_refuses_a_start_naming_the_field(client, lead, pool, start, wanted):
    client.force_login(lead)
    response = _edit(
        client, pool, on_demand_price_per_gpu_hour_usd="2.49", price_effective_from=start
    )
    assert response.status_code == 200
    errors = response.context["form"].errors["price_effective_from"]
    assert any(wanted in error and "Prices in force from" in error for error in errors)
    assert PoolPricePeriod.objects.filter(pool=pool).count() == 0


@pytest.mark.django_db
def test_an_earlier_service_start_moves_the_first_period_back(lead_api, pool):
    """No hour of the service period is left without a price: the first period
    (from 2022-01-01) follows the service start back to 2020-01-01 when the next price
    edit, from 2021-01-01, is saved."""
    Pool.objects.filter(pk=pool.pk).update(in_service_from=datetime(2020, 1, 1, tzinfo=UTC))
    response = lead_api.patch(
        f"/api/v1/pools/{pool.slug}/",
        {"on_demand_price_per_gpu_hour_usd": "2.00", "price_effective_from": "2021-01-01T00:00Z"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert _periods(pool) == [
        (datetime(2020, 1, 1, tzinfo=UTC), Decimal("2.9900")),
        (datetime(2021, 1, 1, tzinfo=UTC), Decimal("2.0000")),
    ]


@pytest.mark.django_db
def test_the_api_takes_a_start_and_lists_the_periods(lead_api, pool):
    """$2.99 from the service start until 1 June 2026, $1.50 from then on."""
    response = lead_api.patch(
        f"/api/v1/pools/{pool.slug}/",
        {"on_demand_price_per_gpu_hour_usd": "1.50", "price_effective_from": "2026-06-01T00:00Z"},
        format="json",
    )
    assert response.status_code == 200, response.content

    listed = lead_api.get(f"/api/v1/pools/{pool.slug}/prices/")
    assert listed.status_code == 200
    periods = listed.json()
    assert [
        (p["effective_from"], p["effective_until"], p["effective_price_per_gpu_hour_usd"])
        for p in periods
    ] == [
        ("2022-01-01T00:00:00Z", "2026-06-01T00:00:00Z", "2.9900"),
        ("2026-06-01T00:00:00Z", None, "1.5000"),
    ]
    assert periods[1]["on_demand_price_per_gpu_hour_usd"] == "1.5000"
    assert periods[1]["deployment"] == "cloud_on_demand"


@pytest.mark.django_db
def test_the_api_refuses_a_start_off_the_hour(lead_api, pool):
    response = lead_api.patch(
        f"/api/v1/pools/{pool.slug}/",
        {"on_demand_price_per_gpu_hour_usd": "1.50", "price_effective_from": "2026-06-01T00:15Z"},
        format="json",
    )
    assert response.status_code == 400
    (message,) = response.json()["price_effective_from"]
    assert "Prices in force from must be on a whole hour" in message
    assert PoolPricePeriod.objects.filter(pool=pool).count() == 0


@pytest.mark.django_db
def test_a_pool_created_through_the_api_is_priced_from_its_service_start(lead_api, gpu_model):
    response = lead_api.post(
        "/api/v1/pools/",
        {
            "slug": "new-pool",
            "name": "New pool",
            "purpose": "training",
            "deployment": "cloud_on_demand",
            "gpu_model": gpu_model.slug,
            "gpu_count": 8,
            "on_demand_price_per_gpu_hour_usd": "3.10",
            "in_service_from": "2026-02-01T10:20:00Z",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    periods = lead_api.get("/api/v1/pools/new-pool/prices/").json()
    assert [(p["effective_from"], p["effective_price_per_gpu_hour_usd"]) for p in periods] == [
        ("2026-02-01T10:00:00Z", "3.1000")
    ]


@pytest.mark.django_db
def test_a_scheduled_price_becomes_current_when_its_hour_comes(lead_api, pool):
    """Scheduled from the next hour, $1.00 is not the pool's price yet; once that hour
    is past (the period moved back to stand for time passing), the beat task applies it."""
    next_hour = floor_hour(timezone.now()) + ONE_HOUR
    response = lead_api.patch(
        f"/api/v1/pools/{pool.slug}/",
        {"on_demand_price_per_gpu_hour_usd": "1.00", "price_effective_from": next_hour},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["effective_price_per_gpu_hour_usd"] == "2.9900"

    from apps.pools.tasks import apply_due_prices_task

    assert apply_due_prices_task() == 0
    PoolPricePeriod.objects.filter(pool=pool, effective_from=next_hour).update(
        effective_from=next_hour - 2 * ONE_HOUR
    )
    assert apply_due_prices_task() == 1
    pool.refresh_from_db()
    assert pool.effective_price_per_gpu_hour_usd == Decimal("1.0000")
    assert pool.on_demand_price_per_gpu_hour_usd == Decimal("1.0000")


@pytest.mark.django_db
def test_the_edit_page_asks_from_when_defaulting_to_the_current_hour(client, lead, pool):
    client.force_login(lead)
    page = client.get(reverse("pools:pool_edit", kwargs={"slug": pool.slug}))
    form = page.context["form"]
    assert form["price_effective_from"].initial == floor_hour(timezone.now())
    body = page.content.decode()
    assert 'name="price_effective_from"' in body
    assert "Prices in force from" in body
    # A new pool's prices run from its service start: the create page does not ask.
    create = client.get(reverse("pools:pool_create")).content.decode()
    assert 'name="price_effective_from"' not in create
