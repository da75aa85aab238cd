"""Effective price per GPU-hour (FORMULAS.md, "Cost of owned GPUs per hour")."""

import pytest

from apps.pools import costing


def test_owned_breakdown_matches_a_hand_computation():
    # $30,000 per GPU over 48 months of 730 h; 700 W × PUE 1.3 at $0.09/kWh;
    # $65,000 a month of operations and colocation shared by 64 GPUs.
    breakdown = costing.owned_price_breakdown(
        purchase_price_per_gpu_usd=30_000,
        amortisation_months=48,
        tdp_watts=700,
        pue=1.3,
        power_price_per_kwh_usd=0.09,
        operations_per_month_usd=40_000,
        colocation_per_month_usd=25_000,
        gpu_count=64,
    )
    amortisation = 30_000 / (48 * 730)  # 0.856164…
    power = 0.7 * 1.3 * 0.09  # 0.0819
    operations = 65_000 / 730 / 64  # 1.391267…
    assert [line.usd_per_gpu_hour for line in breakdown.lines] == pytest.approx(
        [amortisation, power, operations]
    )
    assert breakdown.usd_per_gpu_hour == pytest.approx(2.329331, abs=1e-6)
    assert "48 months" in breakdown.lines[0].formula
    assert "PUE 1.30" in breakdown.lines[1].formula


def test_cloud_breakdown_is_the_price_itself():
    breakdown = costing.cloud_price_breakdown(price_per_gpu_hour_usd=2.99, label="On-demand")
    assert breakdown.usd_per_gpu_hour == 2.99
    assert breakdown.lines[0].label == "On-demand"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"amortisation_months": 0}, "amortisation_months"),
        ({"gpu_count": 0}, "gpu_count"),
        ({"pue": 0.9}, "pue"),
        ({"power_price_per_kwh_usd": -0.1}, "power_price_per_kwh_usd"),
    ],
)
def test_owned_breakdown_refuses_impossible_inputs(override, message):
    inputs = {
        "purchase_price_per_gpu_usd": 1000,
        "amortisation_months": 36,
        "tdp_watts": 300,
        "pue": 1.2,
        "power_price_per_kwh_usd": 0.1,
        "operations_per_month_usd": 0,
        "colocation_per_month_usd": 0,
        "gpu_count": 8,
    } | override
    with pytest.raises(ValueError, match=message):
        costing.owned_price_breakdown(**inputs)
