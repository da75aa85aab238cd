"""The exchange rates of months, read in one query."""

from datetime import date
from decimal import Decimal

from apps.currencies.codes import USD
from apps.currencies.models import ExchangeRate


def rates_of(currencies, months) -> dict[tuple[str, date], Decimal]:
    """(currency, month's first day) → units per US dollar, for the rates recorded. One
    query (none when every currency is USD)."""
    wanted = {code for code in currencies if code != USD}
    if not wanted or not months:
        return {}
    rows = ExchangeRate.objects.filter(currency__in=wanted, month__in=list(months)).values_list(
        "currency", "month", "units_per_usd"
    )
    return {(currency, month): rate for currency, month, rate in rows}
