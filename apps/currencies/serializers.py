from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.serializers import StrictModelSerializer, UnitPriceField
from apps.currencies.codes import USD, currency_problem
from apps.currencies.models import ExchangeRate
from apps.currencies.services import parse_month


@extend_schema_field({"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$", "example": "2026-10"})
class MonthField(serializers.Field):
    """A month as ``YYYY-MM`` (its first day is stored)."""

    default_error_messages = {"invalid": "Expected a month as YYYY-MM."}

    def to_representation(self, value):
        return f"{value:%Y-%m}"

    def to_internal_value(self, data):
        month = parse_month(data if isinstance(data, str) else "")
        if month is None:
            self.fail("invalid")
        return month


class ExchangeRateSerializer(StrictModelSerializer):
    month = MonthField(help_text="YYYY-MM: the rate holds for the whole UTC month.")
    units_per_usd = serializers.DecimalField(
        max_digits=24,
        decimal_places=10,
        min_value=0,
        coerce_to_string=True,
        help_text="How many units of the currency one US dollar buys, e.g. 7.1 for CNY.",
    )
    changed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ExchangeRate
        fields = ["id", "month", "currency", "units_per_usd", "source", "changed_by", "updated_at"]
        read_only_fields = ["id", "changed_by", "updated_at"]

    def validate_currency(self, value):
        value = (value or "").upper()
        problem = currency_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        if value == USD:
            raise serializers.ValidationError("USD needs no rate: it is 1 by definition.")
        return value

    def validate_units_per_usd(self, value):
        if value <= 0:
            raise serializers.ValidationError("A rate is above 0.")
        return value


class MissingRateSerializer(serializers.Serializer):
    """An exchange rate a figure needs and no one recorded: the figure leaves out (or
    has no value for) what it would convert."""

    currency = serializers.CharField(help_text="ISO 4217 code.")
    month = serializers.CharField(help_text="YYYY-MM.")


def usd_price_field() -> UnitPriceField:
    """A pool's price per GPU-hour converted to USD (apps/currencies/rates.py)."""
    return UnitPriceField(
        allow_null=True,
        help_text="The pool's effective price in USD at the month's exchange rate; null when "
        "that rate is missing (missing_exchange_rate).",
    )


def missing_rate_field() -> MissingRateSerializer:
    return MissingRateSerializer(
        allow_null=True,
        help_text="The exchange rate the dollar figures need and no one recorded: they are "
        "null then, never the pool's own amount read as dollars.",
    )
