"""An option priced from its source pool: the pool's prices are in the pool's currency,
converted to USD at this month's rate and then to the scenario's currency
(apps/procurement/comparison/options.py), never read as dollars.

Hand computation: 21.50 CNY per GPU-hour at 7.10 CNY per USD = 3.0281690… USD; in a EUR
scenario typed at 0.92 EUR per USD: 3.0281690… × 0.92 = 2.7859154… EUR; in a CNY
scenario: 21.50 as it is."""

from decimal import Decimal

import pytest
from django.utils import timezone

from apps.currencies.rates import month_of
from apps.procurement.comparison.options import OptionProblem, option_value
from tests.currencies.test_currencies import _rate
from tests.factories import PoolFactory, ScenarioFactory, ScenarioOptionFactory

CNY_PRICE = Decimal("21.50")
RATE = Decimal("7.10")
FIELD = "on_demand_price_per_gpu_hour"


def _option(currency="USD", typed_rate=None):
    pool = PoolFactory(currency="CNY", on_demand_price_per_gpu_hour_usd=CNY_PRICE)
    scenario = ScenarioFactory(currency=currency, usd_exchange_rate=typed_rate)
    return ScenarioOptionFactory(scenario=scenario, source_pool=pool), scenario


@pytest.mark.django_db
def test_a_cny_pools_price_is_converted_to_usd_then_to_the_scenarios_currency():
    _rate(month_of(timezone.now()), "CNY", RATE)
    option, scenario = _option()
    assert option_value(option, FIELD, float(scenario.exchange_rate)) == pytest.approx(
        float(CNY_PRICE / RATE)
    )
    option, scenario = _option("EUR", Decimal("0.92"))
    assert option_value(option, FIELD, float(scenario.exchange_rate)) == pytest.approx(
        float(CNY_PRICE / RATE * Decimal("0.92"))
    )


@pytest.mark.django_db
def test_a_scenario_in_the_pools_currency_takes_its_price_as_it_is():
    option, scenario = _option("CNY", Decimal("7.00"))
    assert option_value(option, FIELD, float(scenario.exchange_rate)) == float(CNY_PRICE)


@pytest.mark.django_db
def test_without_the_months_rate_the_option_says_which_rate_is_missing():
    option, scenario = _option()
    with pytest.raises(OptionProblem) as problem:
        option_value(option, FIELD, float(scenario.exchange_rate))
    assert f"no CNY exchange rate for {timezone.now():%Y-%m}" in str(problem.value)
