"""POST /api/v1/estimates/capacity-mix/ against a brute-force minimum over every baseline
size, computed here independently of comparison/maths.py."""

import math
import random
import re
from datetime import timedelta

import pytest
from django.urls import reverse

from apps.accounts.models import ApiToken

URL = "/api/v1/estimates/capacity-mix/"


@pytest.fixture
def post(client, make_user):
    _, plaintext = ApiToken.issue(
        user=make_user("reader"), description="t", lifetime=timedelta(days=1), read_only=True
    )

    def call(payload):
        return client.post(
            URL,
            payload,
            content_type="application/json",
            headers={"Authorization": f"Bearer {plaintext}"},
        )

    return call


def brute_force(demand, reserved_price, on_demand_price):
    """Cost of every whole baseline 0 … ⌈max⌉, each summed hour by hour."""
    costs = []
    for reserved in range(math.ceil(max(demand)) + 1):
        cost = 0.0
        for hour_demand in demand:
            cost += reserved * reserved_price
            if hour_demand > reserved:
                cost += (hour_demand - reserved) * on_demand_price
        costs.append(cost)
    return costs


@pytest.mark.django_db
def test_url_is_the_documented_one():
    assert reverse("api-estimate-capacity-mix") == URL


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(6))
def test_matches_a_brute_force_minimum_over_every_baseline(post, seed):
    rng = random.Random(seed)
    hours = rng.randint(1, 24 * 14)
    peak = rng.choice([1, 5, 40, 300])
    # A daily curve with noise, fractions included.
    daily = [peak * (0.5 + 0.45 * math.sin(hour / 24 * 2 * math.pi)) for hour in range(hours)]
    demand = [round(max(0.0, value + rng.gauss(0, 2)), 2) for value in daily]
    if max(demand) == 0:
        demand[0] = 1.0
    reserved_price = round(rng.uniform(0.2, 3.0), 3)
    on_demand_price = round(reserved_price * rng.uniform(1.05, 4.0), 3)

    response = post(
        {
            "hourly_demand_gpus": demand,
            "reserved_price_per_gpu_hour": reserved_price,
            "on_demand_price_per_gpu_hour": on_demand_price,
        }
    )
    assert response.status_code == 200, response.content
    body = response.json()
    expected = brute_force(demand, reserved_price, on_demand_price)
    # Money travels as decimal strings to the cent: each within half a cent of the sum.
    assert all(re.fullmatch(r"\d+\.\d\d", cost) for cost in body["cost_by_reserved_gpus"])
    assert [float(cost) for cost in body["cost_by_reserved_gpus"]] == pytest.approx(
        expected, abs=0.005 + 1e-9
    )
    assert re.fullmatch(r"\d+\.\d\d", body["total_cost"])
    assert float(body["total_cost"]) == pytest.approx(min(expected), abs=0.005 + 1e-9)
    best = body["optimal_reserved_gpus"]
    assert expected[best] == pytest.approx(min(expected), rel=1e-9)
    assert body["break_even_utilization"] == pytest.approx(reserved_price / on_demand_price)
    assert body["hours"] == hours


@pytest.mark.django_db
def test_newsvendor_quantile_on_a_known_curve(post):
    # 10 hours: 1 … 10 GPUs, r/o = 0.3: reserve up to the 70 % quantile → 7 GPUs.
    response = post(
        {
            "hourly_demand_gpus": list(range(1, 11)),
            "reserved_price_per_gpu_hour": 0.3,
            "on_demand_price_per_gpu_hour": 1.0,
        }
    )
    body = response.json()
    assert body["optimal_reserved_gpus"] == 7
    assert body["break_even_utilization"] == pytest.approx(0.3)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"hourly_demand_gpus": []}, "hourly_demand_gpus"),
        ({"hourly_demand_gpus": [1, -2]}, "hourly_demand_gpus"),
        ({"on_demand_price_per_gpu_hour": 0}, "on_demand_price_per_gpu_hour"),
        # Found by the schema fuzzer: r ÷ 5e-324 is infinity, which JSON cannot carry.
        ({"on_demand_price_per_gpu_hour": 5e-324}, "on_demand_price_per_gpu_hour"),
        ({"reserved_price_per_gpu_hour": -1}, "reserved_price_per_gpu_hour"),
        ({"hourly_demand_gpus": "12"}, "hourly_demand_gpus"),
        # Numbers only, as the schema says: DRF's FloatField took true and "1.5".
        ({"hourly_demand_gpus": [1, True]}, "hourly_demand_gpus"),
        ({"reserved_price_per_gpu_hour": "1.5"}, "reserved_price_per_gpu_hour"),
        ({"on_demand_price_per_gpu_hour": True}, "on_demand_price_per_gpu_hour"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(post, payload, field):
    base = {
        "hourly_demand_gpus": [1, 2],
        "reserved_price_per_gpu_hour": 1,
        "on_demand_price_per_gpu_hour": 2,
    }
    response = post({**base, **payload})
    assert response.status_code == 400
    assert field in response.json()


@pytest.mark.django_db
def test_anonymous_is_refused(client):
    response = client.post(URL, {}, content_type="application/json")
    assert response.status_code in (401, 403)
