"""Money as ``Decimal``: computed at full precision, rounded once where it is shown.

Amounts round to the cent and unit prices (per GPU-hour, per 1,000 requests, per 10⁶
tokens) to 4 decimals, half a step up (``ROUND_HALF_UP``): the commercial rule invoices,
spreadsheets' ROUND() and finance teams apply, so a figure here matches the one finance
recomputes by hand ($0.125 → $0.13). Banker's rounding (half to even) would answer $0.12
and a reader checking the arithmetic would see a one-cent error.

A float (a sum SQL or a ratio returns) is read through its shortest ``repr``:
510.72000000000014 is the number 510.72000000000014, never the 50 binary digits behind
it, so no artefact of binary floating point reaches a page, an export or the API.

A table whose rows are summed shows rows that add up to its total, or a rounding line
(``rounding_line``): the rounded total minus the sum of the rounded rows.

The API writes money through ``MoneyField`` and ``UnitPriceField`` (apps/core/
serializers.py), the pages through the ``usd`` filter (apps/core/templatetags/units.py),
both rounding here.
"""

import math
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal

MONEY_ROUNDING = ROUND_HALF_UP
CENT = Decimal("0.01")
UNIT_PRICE_STEP = Decimal("0.0001")
UNIT_PRICE_PLACES = 4
CENT_PLACES = 2


def as_decimal(value) -> Decimal | None:
    """The exact Decimal of a computed amount; None for None, NaN or an infinity (a ratio
    with nothing to divide by has no value to show)."""
    if value is None or value == "":
        return None
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    if isinstance(value, bool):
        raise TypeError("A boolean is not an amount of money.")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None
    amount = Decimal(str(value).strip())
    return amount if amount.is_finite() else None


def step_for(places: int) -> Decimal:
    return Decimal(1).scaleb(-int(places))


def rounded(value, places: int) -> Decimal | None:
    """The amount rounded half up to ``places`` decimals."""
    amount = as_decimal(value)
    if amount is None:
        return None
    return amount.quantize(step_for(places), rounding=MONEY_ROUNDING)


def to_cents(value) -> Decimal | None:
    """An amount of money as shown: to the cent, half up."""
    return rounded(value, CENT_PLACES)


def to_unit_price(value) -> Decimal | None:
    """A unit price (USD per GPU-hour, per 1,000 requests, per 10⁶ tokens) as shown: to
    4 decimals, half up."""
    return rounded(value, UNIT_PRICE_PLACES)


def money_text(value, places: int = CENT_PLACES) -> str | None:
    """The decimal string the API and the CSV exports give: "510.72"; None for no value."""
    amount = rounded(value, places)
    return None if amount is None else str(amount)


def rounding_difference(row_amounts: Iterable, total, places: int = CENT_PLACES) -> Decimal:
    """What a rounding line shows: the rounded total minus the sum of the rounded rows
    (0 when the rows as shown add up to the total as shown). Three rows of $1/3 and a
    total of $1.00: $1.00 − 3 × $0.33 = $0.01."""
    shown_rows = sum(
        (amount for amount in (rounded(value, places) for value in row_amounts) if amount),
        Decimal(0),
    )
    shown_total = rounded(total, places) or Decimal(0)
    return shown_total - shown_rows


def rounding_line(row_amounts: Iterable, total, places: int = CENT_PLACES) -> Decimal | None:
    """The rounding line's amount, or None when the rows as shown add up to the total as
    shown (no line)."""
    return rounding_difference(row_amounts, total, places) or None


def times(quantity, price) -> Decimal:
    """A quantity (hours, GPU-hours, kWh, a share: a float read through its shortest
    ``repr``) times an amount of money (``Decimal``), at full precision: 28 GPU-hours ×
    $2.3333 = $65.3324, never 65.33239999999999."""
    return (as_decimal(quantity) or Decimal(0)) * (as_decimal(price) or Decimal(0))
