"""The cost API's money fields are decimal strings: amounts to the cent, unit prices to 4
decimals, rounded half up from the exact figure (apps/core/money.py), each checked
against a hand computation; the schema says ``type: string, format: decimal``."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from tests.reports.test_prices_in_force import ONE_HOUR, _cloud_pool, _telemetry

START = datetime(2026, 3, 10, 8, tzinfo=UTC)
HOURS = 7


@pytest.mark.django_db
def test_cost_fields_are_decimal_strings_equal_to_the_hand_computation(gpu_model, make_user):
    """4 GPUs × 7 h × $2.3333 = $65.3324 → "65.33"; half busy, so idle = $65.3324 × 0.5 =
    $32.6662 → "32.67"; per busy GPU-hour $65.3324 ÷ 14 GPU-h = $4.66660 → "4.6666"."""
    pool = _cloud_pool(gpu_model, "2.3333", START - timedelta(days=30))
    _telemetry(pool, START, START + HOURS * ONE_HOUR)
    api = APIClient()
    api.force_authenticate(make_user("reader"))
    response = api.get(
        reverse("api-report-cost"),
        {"start": START.isoformat(), "end": (START + HOURS * ONE_HOUR).isoformat()},
    )
    assert response.status_code == 200, response.content
    (row,) = response.json()
    assert re.fullmatch(r"-?\d+\.\d{2}", row["cost_usd"])
    assert row["cost_usd"] == "65.33"
    assert row["idle_cost_usd"] == "32.67"
    assert row["unmeasured_cost_usd"] == "0.00"
    assert row["cost_per_busy_gpu_hour_usd"] == "4.6666"
    assert row["cost_per_1k_requests_usd"] is None


@pytest.mark.django_db
def test_the_schema_calls_money_a_decimal_string(client, make_user):
    client.force_login(make_user("reader"))
    schema = client.get(reverse("api-schema"), {"format": "json"}).json()
    components = schema["components"]["schemas"]
    for component, field in (
        ("CostRow", "cost_usd"),
        ("CostRow", "cost_per_1m_tokens_usd"),
        ("Showback", "total_usd"),
        ("ShowbackRow", "cost_usd"),
        ("AuditTotals", "not_in_a_workload_usd"),
        ("Budget", "spent_usd"),
        ("Lendable", "value_usd_per_week"),
    ):
        properties = components[component]["properties"][field]
        assert (properties["type"], properties["format"]) == ("string", "decimal"), (
            component,
            field,
        )
