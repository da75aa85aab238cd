"""Amounts with their currency, the same way on every page: ``{{ row.cost|money_in }}``
(the reporting currency) or ``{{ price|money_in:pool.currency }}``."""

from django import template

from apps.core import money
from apps.currencies.codes import currency_symbol
from apps.currencies.codes import reporting_currency as reporting_code

register = template.Library()


@register.filter
def money_in(value, currency=None, places=2):
    """An amount with its currency, rounded half up to the cent (apps/core/money.py):
    "$1,234.50", "€1,234.50", "CN¥8,768.00"; the code where the currency has no sign of
    its own ("1,234.50 CHF"). ``currency``: ISO 4217, default the reporting currency."""
    currency = currency or reporting_code()
    amount = money.rounded(value, int(places))
    if amount is None:
        return "—"
    symbol = currency_symbol(currency)
    sign = "−" if amount < 0 else ""
    number = f"{abs(amount):,.{int(places)}f}"
    if symbol == currency:
        return f"{sign}{number} {currency}"
    return f"{sign}{symbol}{number}"


@register.filter
def unit_price_in(value, currency=None):
    """A unit price (per GPU-hour) with its currency, to 4 decimals."""
    return money_in(value, currency, money.UNIT_PRICE_PLACES)


@register.simple_tag
def reporting_currency():
    """The code of the installation's reporting currency, for column headers."""
    return reporting_code()
