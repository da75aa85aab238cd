"""Money is rounded once, half up, from its exact value (apps/core/money.py): to the cent,
unit prices to 4 decimals; a float's binary artefact never shows; a summed table whose
rounded rows miss its total by a cent gets a rounding line."""

from decimal import Decimal

import pytest
from django.template import Context, Template

from apps.core import money
from apps.core.serializers import MoneyField, UnitPriceField
from apps.core.templatetags.units import usd


def test_the_float_artefact_of_a_sum_is_the_amount_it_stands_for():
    # The week at half price, summed hour by hour in floats: 510.72000000000014.
    assert money.to_cents(510.72000000000014) == Decimal("510.72")
    assert money.money_text(510.72000000000014) == "510.72"
    assert money.to_cents(0.1 + 0.2) == Decimal("0.30")  # 0.30000000000000004
    assert usd(510.72000000000014) == "$510.72"


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        # Half a cent rounds up, by hand: 0.125 → 0.13, 0.135 → 0.14 (half-even would give
        # 0.12 and 0.14).
        (Decimal("0.125"), "0.13"),
        (Decimal("0.135"), "0.14"),
        (Decimal("0.124999"), "0.12"),
        # A float keeps its decimal reading: 2.675 is "2.675", so $2.68, where
        # round(2.675, 2) answers 2.67 from the binary 2.67499999….
        (2.675, "2.68"),
        (1.005, "1.01"),
        # Below zero, half rounds away from zero: −0.125 → −0.13.
        (Decimal("-0.125"), "-0.13"),
        (1008, "1008.00"),
        ("1.555", "1.56"),
    ],
)
def test_amounts_round_half_up_to_the_cent(amount, shown):
    assert money.money_text(amount) == shown


def test_unit_prices_round_to_four_decimals():
    # $2.99 × 4 GPUs ÷ (11,011.35 tokens/s × 3,600 s) × 10⁶ = $0.301708…/1M tokens: 0.3017.
    assert money.to_unit_price(2.99 * 4 / (11011.349280220396 * 3600) * 1e6) == Decimal("0.3017")
    assert money.to_unit_price(Decimal("0.00005")) == Decimal("0.0001")
    assert money.money_text(2.33, money.UNIT_PRICE_PLACES) == "2.3300"


def test_no_value_stays_no_value():
    assert money.to_cents(None) is None
    assert money.to_cents(float("nan")) is None
    assert money.to_cents(float("inf")) is None
    assert usd(None) == "—"
    with pytest.raises(TypeError):
        money.to_cents(True)


def test_three_thirds_of_a_dollar_need_a_rounding_line_of_one_cent():
    # Rows $0.333… × 3 are shown $0.33 each = $0.99; the total $1.00: rounding $0.01.
    third = 1 / 3
    assert [money.to_cents(third)] * 3 == [Decimal("0.33")] * 3
    assert money.rounding_line([third] * 3, 1.0) == Decimal("0.01")
    # Two-thirds × 3: rows $0.67 × 3 = $2.01, total $2.00: rounding −$0.01.
    assert money.rounding_line([2 / 3] * 3, 2.0) == Decimal("-0.01")
    # Rows that add up need no line.
    assert money.rounding_line([Decimal("0.25")] * 4, 1) is None
    assert money.rounding_difference([Decimal("0.25")] * 4, 1) == Decimal("0.00")


def test_the_rounding_tag_shows_the_line_only_when_the_rows_miss_the_total():
    template = Template(
        '{% load units %}{% rounding_usd rows "cost_usd" total as rounding %}'
        "{% if rounding %}{{ rounding|usd }}{% else %}none{% endif %}"
    )
    thirds = [{"cost_usd": 1 / 3}] * 3
    assert template.render(Context({"rows": thirds, "total": 1.0})) == "$0.01"
    quarters = [{"cost_usd": 0.25}] * 4
    assert template.render(Context({"rows": quarters, "total": 1.0})) == "none"
    assert template.render(Context({"rows": thirds, "total": None})) == "none"


def test_the_api_field_writes_a_decimal_string_and_the_schema_says_so():
    from drf_spectacular.openapi import AutoSchema

    assert MoneyField().to_representation(510.72000000000014) == "510.72"
    assert UnitPriceField().to_representation(Decimal("2.5")) == "2.5000"
    schema = AutoSchema()._map_serializer_field(MoneyField(read_only=True), "response")
    assert schema["type"] == "string" and schema["format"] == "decimal"


def test_a_price_breakdown_rounds_to_four_decimals_with_its_own_line():
    # Lines $0.33335, $0.33335 and $0.3333 are shown 0.3334 + 0.3334 + 0.3333 = 1.0001;
    # their sum $1.0000 is shown 1.0000: rounding −$0.0001.
    template = Template(
        '{% load units %}{% rounding_usd rows "usd_per_gpu_hour" total 4 as rounding %}'
        "{{ rounding|usd:4 }}"
    )
    rows = [{"usd_per_gpu_hour": Decimal(value)} for value in ("0.33335", "0.33335", "0.3333")]
    assert template.render(Context({"rows": rows, "total": Decimal("1.0000")})) == "−$0.0001"
