"""Typed numbers are read as typed or refused with what to type; every range is declared
once (apps/core/bounds.py) and applied by forms and the API alike; a GPU-hour price above
$50 is saved only once confirmed."""

from decimal import Decimal

import pytest
from django.urls import reverse

from apps.catalog.forms import GpuModelForm
from apps.catalog.models import GpuModel
from apps.core.bounds import BOUNDS, Scale, bound_error, number_text_error
from apps.pools.forms import PoolForm

GPU_POST = {
    "name": "Test GPU",
    "slug": "test-gpu",
    "vendor": "NVIDIA",
    "memory_gb": "80",
    "memory_bandwidth_gb_per_second": "3350",
    "bf16_dense_tflops": "989",
    "tdp_watts": "700",
}


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("1,4", '"1,4": use a decimal point, e.g. 1.4'),
        ("12,50", '"12,50": use a decimal point, e.g. 12.50'),
        ("1,234", '"1,234" could be 1.234 or 1234'),
        ("1,234.5", '"1,234.5": type the number without thousands separators, e.g. 1234.5'),
        ("1 234", '"1 234": type the number without thousands separators, e.g. 1234'),
        ("1\u00a0234", "without thousands separators, e.g. 1234"),
        ("1_000", "without thousands separators, e.g. 1000"),
        ("1.234,5", "use a decimal point and no thousands separators, e.g. 1234.5"),
        ("+1.4", '"+1.4": leave out the plus sign, e.g. 1.4'),
        ("1e3", '"1e3": write the number out, e.g. 1000'),
        ("NaN", '"NaN" is not a number'),
        ("١٫٤", "is not a number"),  # Arabic-Indic digits are not guessed at either
    ],
)
def test_ambiguous_text_is_refused_with_what_to_type(typed, message):
    assert message in number_text_error(typed)


@pytest.mark.parametrize("typed", ["1.4", "14", ".5", "0.40", " 2.99 ", "-3"])
def test_plain_numbers_pass(typed):
    assert number_text_error(typed) is None


def test_whole_numbers_refuse_fractions_and_separators():
    assert number_text_error("48", whole=True) is None
    assert "whole number" in number_text_error("1.5", whole=True)
    assert "e.g. 1000" in number_text_error("1,000", whole=True)


def test_a_range_message_names_the_field_the_range_its_unit_and_why():
    message = bound_error("PUE", Decimal("14"), BOUNDS["pue"])
    assert message.startswith("PUE must be between 1.0 and 3.0; got 14: ")
    assert "facility power ÷ IT power" in message
    assert bound_error("PUE", Decimal("1.4"), BOUNDS["pue"]) is None


def test_money_bounds_follow_the_currency_the_form_is_priced_in():
    # 2 USD per kWh at 150 JPY per USD is 300 JPY per kWh: 300 passes, 301 does not.
    yen = Scale("JPY", Decimal("150"))
    assert bound_error("Power", Decimal("300"), BOUNDS["power_price_per_kwh"], yen) is None
    message = bound_error("Power", Decimal("301"), BOUNDS["power_price_per_kwh"], yen)
    assert "between 0 and 300 JPY per kWh; got 301" in message


@pytest.mark.django_db
def test_number_inputs_are_text_inputs_so_the_server_sees_what_was_typed(gpu_model):
    # Chromium's <input type="number"> submits "1,4" as 14: the root of the bug.
    html = str(PoolForm()["pue"])
    assert 'type="text"' in html and 'inputmode="decimal"' in html
    assert 'type="number"' not in str(PoolForm())
    assert 'inputmode="numeric"' in str(PoolForm()["amortisation_months"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "typed", "message"),
    [
        ("pue", "1,4", '"1,4": use a decimal point, e.g. 1.4'),
        ("pue", "14", "PUE must be between 1.0 and 3.0; got 14"),
        ("power_price_per_kwh_usd", "1 234", "without thousands separators, e.g. 1234"),
        ("power_price_per_kwh_usd", "90", "between 0 and 2 USD per kWh; got 90"),
        ("amortisation_months", "121", "between 1 and 120 months; got 121"),
        ("amortisation_months", "1,000", "without thousands separators, e.g. 1000"),
        ("purchase_price_per_gpu_usd", "-1", "between 0 and 1000000 USD per GPU; got -1"),
    ],
)
def test_pool_form_refuses_the_value_with_one_clear_message(gpu_model, field, typed, message):
    form = PoolForm({"deployment": "bare_metal", field: typed})
    assert not form.is_valid()
    assert len(form.errors[field]) == 1
    assert message in form.errors[field][0]


@pytest.mark.django_db
def test_the_same_words_come_from_the_api(client, make_user, pool):
    client.force_login(make_user("lead"))
    url = reverse("pool-detail", args=[pool.slug])
    typed_comma = client.patch(url, {"pue": "1,4"}, content_type="application/json")
    assert typed_comma.status_code == 400
    assert typed_comma.json()["pue"] == ['"1,4": use a decimal point, e.g. 1.4']
    out_of_range = client.patch(
        url, {"power_price_per_kwh_usd": "90"}, content_type="application/json"
    )
    assert out_of_range.status_code == 400
    assert (
        "between 0 and 2 USD per kWh; got 90" in out_of_range.json()["power_price_per_kwh_usd"][0]
    )
    pool.refresh_from_db()
    assert pool.pue is None and pool.power_price_per_kwh_usd is None


@pytest.mark.django_db
def test_a_high_gpu_hour_price_on_the_pool_form_waits_for_its_checkbox(gpu_model):
    data = {"deployment": "cloud_on_demand", "on_demand_price_per_gpu_hour_usd": "62"}
    form = PoolForm(data)
    assert not form.is_valid()
    (warning,) = form.errors["on_demand_price_per_gpu_hour_usd"]
    assert "$62.00 per GPU-hour is above $50.00 per GPU-hour" in warning
    confirmation = form.confirmations["on_demand_price_per_gpu_hour_usd"]
    assert confirmation.label == "Yes, $62.00 per GPU-hour is right"
    assert confirmation.value == "62"
    # Ticked for another value, it does not count; ticked for this one, it does.
    stale = PoolForm({**data, "confirm_on_demand_price_per_gpu_hour_usd": "61"})
    assert "on_demand_price_per_gpu_hour_usd" in stale.errors
    ticked = PoolForm({**data, "confirm_on_demand_price_per_gpu_hour_usd": "62"})
    assert "on_demand_price_per_gpu_hour_usd" not in ticked.errors
    # $50 itself needs no confirmation.
    fifty = PoolForm({**data, "on_demand_price_per_gpu_hour_usd": "50"})
    assert "on_demand_price_per_gpu_hour_usd" not in fifty.errors


@pytest.mark.django_db
def test_the_catalog_form_draws_the_checkbox_and_saves_once_ticked(client, make_user, catalog):
    client.force_login(make_user("lead"))
    url = reverse("catalog:gpu_model_create")
    data = {**GPU_POST, "reference_price_per_gpu_hour_usd": "62.5"}
    first = client.post(url, data)
    assert first.status_code == 200
    body = first.content.decode()
    assert 'name="confirm_reference_price_per_gpu_hour_usd" value="62.5"' in body
    assert "Yes, $62.50 per GPU-hour is right" in body
    assert not GpuModel.objects.filter(slug="test-gpu").exists()
    second = client.post(url, {**data, "confirm_reference_price_per_gpu_hour_usd": "62.5"})
    assert second.status_code == 302
    saved = GpuModel.objects.get(slug="test-gpu")
    assert saved.reference_price_per_gpu_hour_usd == Decimal("62.5")
    # Editing something else keeps the confirmed price without asking again.
    form = GpuModelForm({**data, "name": "Test GPU renamed"}, instance=saved)
    assert form.is_valid(), form.errors


@pytest.mark.django_db
def test_the_api_refuses_a_high_gpu_hour_price_unless_confirmed(client, make_user, pool):
    client.force_login(make_user("lead"))
    url = reverse("pool-detail", args=[pool.slug])
    refused = client.patch(
        url, {"on_demand_price_per_gpu_hour_usd": "62"}, content_type="application/json"
    )
    assert refused.status_code == 400
    (message,) = refused.json()["on_demand_price_per_gpu_hour_usd"]
    assert "$62.00 per GPU-hour is above $50.00" in message
    assert 'send "confirm_high_price": true' in message
    pool.refresh_from_db()
    assert pool.on_demand_price_per_gpu_hour_usd == Decimal("2.99")
    confirmed = client.patch(
        url,
        {"on_demand_price_per_gpu_hour_usd": "62", "confirm_high_price": True},
        content_type="application/json",
    )
    assert confirmed.status_code == 200, confirmed.content
    assert "confirm_high_price" not in confirmed.json()
    pool.refresh_from_db()
    assert pool.on_demand_price_per_gpu_hour_usd == Decimal("62")
    assert pool.effective_price_per_gpu_hour_usd == Decimal("62")


@pytest.mark.django_db
def test_the_catalog_api_refuses_a_zero_datasheet_figure(client, make_user, catalog):
    client.force_login(make_user("lead"))
    response = client.post(
        reverse("gpu-model-list"),
        {**GPU_POST, "tdp_watts": 700, "fp8_dense_tflops": "0"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "above 0 TFLOP/s; got 0" in response.json()["fp8_dense_tflops"][0]
