"""What a typed number may be: how its text is read, and the range each input may take.

Both the web forms (apps/core/forms.py) and the API serializers (apps/core/serializers.py)
read numbers and check ranges through this module, so a PUE of 14 is refused with the
same words wherever it is typed. Plain Python: no Django imports.

Text: digits with at most one decimal point ("1.4", "1200", ".5", "-3"). Anything a
person might mean as another number is refused with what to type instead, never
guessed at: a decimal comma ("1,4" is 1.4 in Europe and 14 to a US browser), thousands
separators ("1,234.5", "1 234", "1'234", "1_000"), exponents ("1e3") and signs ("+1").

Ranges are keyed by the field's name as forms and serializers spell it; the money ones
are in USD, and a form whose prices are in another currency scales them by its
exchange rate (procurement scenarios).
"""

import re
from dataclasses import dataclass
from decimal import Decimal

PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)", re.ASCII)
PLAIN_WHOLE_NUMBER = re.compile(r"-?\d+(?:\.0*)?", re.ASCII)
# Characters people put between groups of digits: comma, apostrophe (Swiss), underscore
# (Python), and the spaces a locale or a copied spreadsheet cell may carry.
GROUPING = ",'’_ \u00a0\u2009\u202f"


def number_text_error(text: str, *, whole: bool = False) -> str | None:
    """Why ``text`` is not a plain number to be read as typed, or None if it is one.
    Surrounding whitespace is ignored; an empty text is the caller's business."""
    text = text.strip()
    if not text or (PLAIN_WHOLE_NUMBER if whole else PLAIN_NUMBER).fullmatch(text):
        return None
    quoted = f'"{text}"'
    comma = re.fullmatch(r"(-?\d*),(\d+)", text, re.ASCII)
    if comma and len(comma[2]) != 3:
        if whole:
            return f"{quoted}: enter a whole number, with no comma"
        return f"{quoted}: use a decimal point, e.g. {comma[1]}.{comma[2]}"
    if comma and not whole:
        point, joined = f"{comma[1]}.{comma[2]}", f"{comma[1]}{comma[2]}"
        return (
            f"{quoted} could be {point} or {joined}: type {point} (a decimal point) "
            f"or {joined} (no thousands separator)"
        )
    european = re.fullmatch(r"(-?\d{1,3}(?:\.\d{3})+),(\d+)", text, re.ASCII)
    if european and not whole:
        return (
            f"{quoted}: use a decimal point and no thousands separators, "
            f"e.g. {european[1].replace('.', '')}.{european[2]}"
        )
    if re.fullmatch(f"-?\\d{{1,3}}(?:[{GROUPING}]\\d{{3}})+(?:\\.\\d+)?", text, re.ASCII):
        digits = re.sub(f"[{GROUPING}]", "", text)
        return f"{quoted}: type the number without thousands separators, e.g. {digits}"
    if text.startswith("+") and (PLAIN_WHOLE_NUMBER if whole else PLAIN_NUMBER).fullmatch(text[1:]):
        return f"{quoted}: leave out the plus sign, e.g. {text[1:]}"
    if whole and PLAIN_NUMBER.fullmatch(text):
        return f"{quoted}: enter a whole number"
    if re.fullmatch(r"-?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d{1,3}", text, re.ASCII):
        return f"{quoted}: write the number out, e.g. {plain(text)}"
    return f"{quoted} is not a number: type digits with a decimal point, e.g. 1.4"


@dataclass(frozen=True)
class Bound:
    minimum: Decimal | None
    maximum: Decimal | None
    unit: str  # after the number in messages: "USD per GPU-hour", "months", "" for ratios
    reason: str  # why the range is what it is, said to the person who typed the number
    above_minimum: bool = False  # the minimum itself is refused (a memory of 0 GB)
    money: bool = False  # in USD: scaled by the exchange rate of a form priced otherwise
    confirm_above: Decimal | None = None  # saved above this only once confirmed


def _d(text):
    return Decimal(text)


GPU_HOUR_PRICE = Bound(
    _d("0"),
    _d("1000"),
    "USD per GPU-hour",
    "cloud GPUs rent for about 1–15 USD per GPU-hour; a larger figure is usually the "
    "price of a whole instance or of a month",
    money=True,
    confirm_above=_d("50"),
)
PURCHASE_PRICE = Bound(
    _d("0"),
    _d("1000000"),
    "USD per GPU",
    "a datacentre GPU with its share of the server costs 10,000–80,000 USD",
    money=True,
)
POWER_PRICE = Bound(
    _d("0"),
    _d("2"),
    "USD per kWh",
    "electricity costs about 0.05–0.40 USD per kWh; a larger figure is usually per MWh",
    money=True,
)
PUE = Bound(
    _d("1.0"),
    _d("3.0"),
    "",
    "PUE is facility power ÷ IT power: 1.0 at the very best, 1.1–1.6 in most data centres",
)
MONTHS_OF_LIFE = Bound(
    _d("1"), _d("120"), "months", "ten years is longer than any GPU stays in service"
)
TERM_MONTHS = Bound(_d("1"), _d("120"), "months", "reservations run for 1 to 36 months")
MONEY_PER_MONTH = Bound(_d("0"), None, "USD per month", "a cost cannot be negative", money=True)
MONEY_ONCE = Bound(_d("0"), None, "USD", "a cost cannot be negative", money=True)
STORAGE_PRICE = Bound(
    _d("0"),
    _d("10"),
    "USD per GB-month",
    "object storage costs about 0.001–0.03 USD per GB-month; a larger figure is usually "
    "per TB-month",
)
EFFICIENCY = Bound(
    _d("0.01"),
    _d("1"),
    "",
    "an efficiency is a share of the GPU's peak: 0.4 means 40 %, and it cannot pass 1",
)
MFU = Bound(
    _d("0.001"),
    _d("1"),
    "",
    "MFU is a share of the GPU's peak: 0.4 means 40 %, and it cannot pass 1",
)
PERCENT = Bound(_d("0"), _d("100"), "%", "a share of the traffic is 0 to 100 %")
POSITIVE_COUNT = Bound(_d("0"), None, "", "a count cannot be negative")


def _positive(unit):
    return Bound(
        _d("0"),
        None,
        unit,
        "a datasheet figure is above 0 (empty when it does not apply)",
        above_minimum=True,
    )


BOUNDS: dict[str, Bound] = {
    # Pools (USD)
    "on_demand_price_per_gpu_hour_usd": GPU_HOUR_PRICE,
    "reserved_price_per_gpu_hour_usd": GPU_HOUR_PRICE,
    "reserved_term_months": TERM_MONTHS,
    "purchase_price_per_gpu_usd": PURCHASE_PRICE,
    "amortisation_months": MONTHS_OF_LIFE,
    "power_price_per_kwh_usd": POWER_PRICE,
    "pue": PUE,
    "operations_per_month_usd": MONEY_PER_MONTH,
    "colocation_per_month_usd": MONEY_PER_MONTH,
    # Workloads
    "expected_mfu": MFU,
    "expected_peak_requests_per_second": Bound(
        _d("0"), None, "requests per second", "a request rate cannot be negative"
    ),
    # Catalog
    "reference_price_per_gpu_hour_usd": GPU_HOUR_PRICE,
    "memory_gb": _positive("GB"),
    "memory_bandwidth_gb_per_second": _positive("GB/s"),
    "bf16_dense_tflops": _positive("TFLOP/s"),
    "fp16_dense_tflops": _positive("TFLOP/s"),
    "fp8_dense_tflops": _positive("TFLOP/s"),
    "int8_dense_tops": _positive("TOPS"),
    "tdp_watts": _positive("W"),
    "interconnect_gb_per_second": _positive("GB/s"),
    # Procurement: the same inputs in the scenario's currency (``money`` ones scaled)
    "on_demand_price_per_gpu_hour": GPU_HOUR_PRICE,
    "reserved_price_per_gpu_hour": GPU_HOUR_PRICE,
    "reserved_upfront_per_gpu": Bound(
        _d("0"),
        _d("1000000"),
        "USD per GPU",
        "an upfront payment is at most the price of the GPU",
        money=True,
    ),
    "purchase_price_per_gpu": PURCHASE_PRICE,
    "power_price_per_kwh": POWER_PRICE,
    "colocation_per_gpu_month": Bound(
        _d("0"), None, "USD per GPU-month", "a cost cannot be negative", money=True
    ),
    "operations_per_month": MONEY_PER_MONTH,
    "storage_per_month": MONEY_PER_MONTH,
    "network_per_month": MONEY_PER_MONTH,
    "efficiency": EFFICIENCY,
    "reference_efficiency": EFFICIENCY,
    "baseline_gpus": POSITIVE_COUNT,
    "horizon_months": Bound(
        _d("1"), _d("120"), "months", "a comparison runs for 1 month to 10 years"
    ),
    "window_days": Bound(_d("1"), _d("366"), "days", "the rollups cover up to a year"),
    "usd_exchange_rate": Bound(
        _d("0.000001"),
        _d("1000000"),
        "per USD",
        "units of the scenario's currency one US dollar buys",
    ),
    "entered_gpu_hours_per_month": Bound(
        _d("0"),
        _d("1000000000"),
        "GPU-hours per month",
        "a billion GPU-hours a month is over a million GPUs busy all month",
    ),
    # Backups
    "hot_price_per_gb_month_usd": STORAGE_PRICE,
    "warm_price_per_gb_month_usd": STORAGE_PRICE,
    "cold_price_per_gb_month_usd": STORAGE_PRICE,
    "gray_ratio_percent": PERCENT,
}


def plain(value) -> str:
    """A number as typed back to the person: no exponent, no trailing zeros, no grouping."""
    text = format(Decimal(value), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def money_text(value, currency: str = "USD") -> str:
    """12.5 → "$12.50" in USD, "12.50 JPY" otherwise."""
    amount = f"{Decimal(value):.2f}"
    return f"${amount}" if currency == "USD" else f"{amount} {currency}"


@dataclass(frozen=True)
class Scale:
    """The currency a form's money inputs are typed in; bounds are in USD."""

    currency: str = "USD"
    usd_rate: Decimal = Decimal("1")

    def limit(self, bound: Bound, value: Decimal | None) -> Decimal | None:
        if value is None or not bound.money:
            return value
        return value * self.usd_rate

    def unit(self, bound: Bound) -> str:
        if bound.money and self.currency != "USD":
            return bound.unit.replace("USD", self.currency)
        return bound.unit


USD = Scale()


def _with_unit(number: str, unit: str) -> str:
    if not unit:
        return number
    return f"{number}{unit}" if unit == "%" else f"{number} {unit}"


def bound_error(label: str, value, bound: Bound, scale: Scale = USD) -> str | None:
    """The message for a value outside its range (naming the field, the range with its
    unit and why), or None when it is inside."""
    if value is None:
        return None
    value = Decimal(value)
    low, high = scale.limit(bound, bound.minimum), scale.limit(bound, bound.maximum)
    unit = scale.unit(bound)
    # Unscaled limits read as declared ("1.0 and 3.0" for the PUE).
    plain_limit = str if scale.usd_rate == 1 else plain
    too_low = low is not None and (value <= low if bound.above_minimum else value < low)
    too_high = high is not None and value > high
    if not (too_low or too_high):
        return None
    if low is not None and high is not None:
        expected = f"between {plain_limit(low)} and {_with_unit(plain_limit(high), unit)}"
    elif bound.above_minimum:
        expected = f"above {_with_unit(plain_limit(low), unit)}"
    elif too_low:
        expected = f"at least {_with_unit(plain_limit(low), unit)}"
    else:
        expected = f"at most {_with_unit(plain_limit(high), unit)}"
    return f"{label} must be {expected}; got {plain(value)}: {bound.reason}."


def needs_confirmation(value, bound: Bound, scale: Scale = USD) -> bool:
    """True when ``value`` is inside the range but high enough to be confirmed first."""
    limit = scale.limit(bound, bound.confirm_above)
    return limit is not None and value is not None and Decimal(value) > limit


def _per(bound: Bound) -> str:
    """ "per GPU-hour" of "USD per GPU-hour": the money part is said by money_text."""
    return bound.unit.partition(" ")[2]


def confirmation_label(value, bound: Bound, scale: Scale = USD) -> str:
    """What the person ticks: "Yes, $62.00 per GPU-hour is right"."""
    return f"Yes, {money_text(value, scale.currency)} {_per(bound)} is right"


def confirmation_warning(
    label: str, value, bound: Bound, scale: Scale = USD, *, how: str | None = None
) -> str:
    """Why the value asks for a confirmation and how to give it (by default, the form's
    checkbox; the API passes its own ``how``)."""
    limit = scale.limit(bound, bound.confirm_above)
    how = how or f"tick “{confirmation_label(value, bound, scale)}”"
    return (
        f"{label}: {money_text(value, scale.currency)} {_per(bound)} is above "
        f"{money_text(limit, scale.currency)} {_per(bound)}, which few GPUs rent for "
        f"({bound.reason}). Check it, then {how} to save it."
    )
