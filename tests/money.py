"""Hand-computed amounts written as the API and the exports write money: decimal strings
rounded half up, to the cent or, for unit prices, to 4 decimals."""

from decimal import ROUND_HALF_UP, Decimal


def cents(amount) -> str:
    """2 × 0.0625 = 0.125 → "0.13"; a float through its shortest text, 1008.0 → "1008.00"."""
    return str(Decimal(str(amount)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def unit_price(amount) -> str:
    """0.30170891 → "0.3017"."""
    return str(Decimal(str(amount)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


def within_a_cent(text: str, amount) -> bool:
    """The API's "1234.57" is the hand computation to the cent, give or take the cent that
    a price stored to 10⁻⁶ USD may move it."""
    return abs(Decimal(text) - Decimal(str(amount))) <= Decimal("0.01")
