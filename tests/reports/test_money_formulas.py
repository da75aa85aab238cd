"""The cost formulas keep money exact: a Decimal amount in gives a Decimal out, computed
at full precision (apps/reports/cost/costmodel.py, apps/pools/costing.py, apps/showback/
burndown.py); a float in still gives a float for the callers that sum floats. Every
expected figure is worked out by hand in the comments."""

from decimal import Decimal

from apps.catalog.models import GpuModel
from apps.core import money
from apps.pools.models import Deployment, Pool
from apps.reports.cost import costmodel
from apps.showback.burndown import Burndown


def test_idle_cost_of_a_decimal_cost_is_exact():
    # $100.00 × (1 − 3 ÷ 8 busy) = $62.50
    idle = costmodel.idle_cost_usd(Decimal("100.00"), 3, 8)
    assert isinstance(idle, Decimal) and idle == Decimal("62.5")
    # A third busy: $10.00 × (1 − 1 ÷ 3) = $6.666…, shown $6.67
    assert money.to_cents(costmodel.idle_cost_usd(Decimal("10.00"), 1.0, 3.0)) == Decimal("6.67")
    assert costmodel.idle_cost_usd(Decimal("10.00"), 1, 0) == Decimal(0)
    # Floats stay floats: $100 × (1 − 0.5) = $50.
    assert costmodel.idle_cost_usd(100.0, 4.0, 8.0) == 50.0


def test_unit_costs_of_a_decimal_cost_are_exact():
    # $65.3324 ÷ 7 requests × 1,000 = $9,333.20 per 1k requests
    per_1k = costmodel.cost_per_thousand_requests_usd(Decimal("65.3324"), 7)
    assert isinstance(per_1k, Decimal) and per_1k == Decimal("9333.2")
    # $1.00 ÷ 3,000,000 tokens × 10⁶ = $0.3333… per 1M tokens, shown 0.3333
    per_1m = costmodel.cost_per_million_tokens_usd(Decimal("1.00"), 3_000_000)
    assert money.to_unit_price(per_1m) == Decimal("0.3333")
    assert costmodel.cost_per_thousand_requests_usd(Decimal("1.00"), 0) is None


def test_an_owned_pools_effective_price_is_computed_in_decimal():
    """$30,000 ÷ (36 × 730 h) = $1.1415525…; 0.7 kW × PUE 1.3 × $0.12 = $0.1092;
    $1,460 colocation ÷ 730 h ÷ 8 GPUs = $0.25: $1.5007525… per GPU-hour → 1.5008."""
    pool = Pool(
        deployment=Deployment.BARE_METAL,
        gpu_model=GpuModel(tdp_watts=700),
        gpu_count=8,
        purchase_price_per_gpu_usd=Decimal("30000"),
        amortisation_months=36,
        pue=Decimal("1.30"),
        power_price_per_kwh_usd=Decimal("0.1200"),
        colocation_per_month_usd=Decimal("1460"),
    )
    breakdown = pool.price_breakdown()
    assert all(isinstance(line.usd_per_gpu_hour, Decimal) for line in breakdown.lines)
    assert [line.usd_per_gpu_hour for line in breakdown.lines][1:] == [
        Decimal("0.1092"),
        Decimal("0.25"),
    ]
    pool.refresh_effective_price()
    assert pool.effective_price_per_gpu_hour_usd == Decimal("1.5008")
    # Power: 1.3 × $0.12 = $0.156 per GPU kWh; fixed: $1.5007525… − 0.7 × $0.156 =
    # $1.3915525… → 1.391553 to the stored 6 places.
    assert pool.price_per_gpu_kwh_usd == Decimal("0.156000")
    assert pool.fixed_price_per_gpu_hour_usd == Decimal("1.391553")


def test_a_cloud_price_stays_the_typed_decimal():
    pool = Pool(
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=GpuModel(tdp_watts=700),
        gpu_count=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.3333"),
    )
    pool.refresh_effective_price()
    assert pool.effective_price_per_gpu_hour_usd == Decimal("2.3333")


def test_a_decimal_burndown_forecasts_to_the_cent():
    """$250.10 spent; $70.07 over 7 days = $10.01 a day; 10.5 days left:
    $250.10 + $10.01 × 10.5 = $355.205, shown $355.21 (half up); used 25.01 %."""
    figures = Burndown(
        amount=Decimal("1000"),
        spent=Decimal("250.10"),
        window_spent=Decimal("70.07"),
        window_days=7,
        days_left=10.5,
    )
    assert figures.forecast == Decimal("355.205")
    assert money.to_cents(figures.forecast) == Decimal("355.21")
    assert figures.used_pct == 25.01
    assert figures.forecast_pct == 35.5205
    # Float amounts keep working: 50 of 100 is 50 %.
    assert Burndown(100.0, 50.0, 0.0, 0, 3.0).used_pct == 50.0
