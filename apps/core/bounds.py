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

Messages are English by default (the API's); a caller passes ``translate`` (the forms
pass Django's ``gettext``) to have them, and the units and reasons they quote, in the
language of the request. The texts are marked for extraction with ``gettext_noop`` and
``_``, defined here as the identity so that this module keeps no Django import.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)", re.ASCII)
PLAIN_WHOLE_NUMBER = re.compile(r"-?\d+(?:\.0*)?", re.ASCII)
# Characters people put between groups of digits: comma, apostrophe (Swiss), underscore
# (Python), and the spaces a locale or a copied spreadsheet cell may carry.
GROUPING = ",'’_ \u00a0\u2009\u202f"


def _untranslated(text: str) -> str:
    return text


# makemessages extracts the arguments of these names; they return the text unchanged.
gettext_noop = _untranslated
_ = _untranslated


def number_text_error(
    text: str, *, whole: bool = False, translate: Callable[[str], str] = _untranslated
) -> str | None:
    """Why ``text`` is not a plain number to be read as typed, or None if it is one.
    Surrounding whitespace is ignored; an empty text is the caller's business."""
    text = text.strip()
    if not text or (PLAIN_WHOLE_NUMBER if whole else PLAIN_NUMBER).fullmatch(text):
        return None
    quoted = f'"{text}"'
    comma = re.fullmatch(r"(-?\d*),(\d+)", text, re.ASCII)
    if comma and len(comma[2]) != 3:
        if whole:
            return translate(_("%(quoted)s: enter a whole number, with no comma")) % {
                "quoted": quoted
            }
        return translate(_("%(quoted)s: use a decimal point, e.g. %(example)s")) % {
            "quoted": quoted,
            "example": f"{comma[1]}.{comma[2]}",
        }
    if comma and not whole:
        point, joined = f"{comma[1]}.{comma[2]}", f"{comma[1]}{comma[2]}"
        return translate(
            _(
                "%(quoted)s could be %(point)s or %(joined)s: type %(point)s (a decimal "
                "point) or %(joined)s (no thousands separator)"
            )
        ) % {"quoted": quoted, "point": point, "joined": joined}
    european = re.fullmatch(r"(-?\d{1,3}(?:\.\d{3})+),(\d+)", text, re.ASCII)
    if european and not whole:
        return translate(
            _("%(quoted)s: use a decimal point and no thousands separators, e.g. %(example)s")
        ) % {"quoted": quoted, "example": f"{european[1].replace('.', '')}.{european[2]}"}
    if re.fullmatch(f"-?\\d{{1,3}}(?:[{GROUPING}]\\d{{3}})+(?:\\.\\d+)?", text, re.ASCII):
        digits = re.sub(f"[{GROUPING}]", "", text)
        return translate(
            _("%(quoted)s: type the number without thousands separators, e.g. %(example)s")
        ) % {"quoted": quoted, "example": digits}
    if text.startswith("+") and (PLAIN_WHOLE_NUMBER if whole else PLAIN_NUMBER).fullmatch(text[1:]):
        return translate(_("%(quoted)s: leave out the plus sign, e.g. %(example)s")) % {
            "quoted": quoted,
            "example": text[1:],
        }
    if whole and PLAIN_NUMBER.fullmatch(text):
        return translate(_("%(quoted)s: enter a whole number")) % {"quoted": quoted}
    if re.fullmatch(r"-?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d{1,3}", text, re.ASCII):
        return translate(_("%(quoted)s: write the number out, e.g. %(example)s")) % {
            "quoted": quoted,
            "example": plain(text),
        }
    return translate(
        _("%(quoted)s is not a number: type digits with a decimal point, e.g. 1.4")
    ) % {"quoted": quoted}


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
    gettext_noop("USD per GPU-hour"),
    gettext_noop(
        "cloud GPUs rent for about 1–15 USD per GPU-hour; a larger figure is usually the "
        "price of a whole instance or of a month"
    ),
    money=True,
    confirm_above=_d("50"),
)
PURCHASE_PRICE = Bound(
    _d("0"),
    _d("1000000"),
    gettext_noop("USD per GPU"),
    gettext_noop("a datacentre GPU with its share of the server costs 10,000–80,000 USD"),
    money=True,
)
POWER_PRICE = Bound(
    _d("0"),
    _d("2"),
    gettext_noop("USD per kWh"),
    gettext_noop(
        "electricity costs about 0.05–0.40 USD per kWh; a larger figure is usually per MWh"
    ),
    money=True,
)
PUE = Bound(
    _d("1.0"),
    _d("3.0"),
    "",
    gettext_noop(
        "PUE is facility power ÷ IT power: 1.0 at the very best, 1.1–1.6 in most data centres"
    ),
)
MONTHS_OF_LIFE = Bound(
    _d("1"),
    _d("120"),
    gettext_noop("months"),
    gettext_noop("ten years is longer than any GPU stays in service"),
)
TERM_MONTHS = Bound(
    _d("1"), _d("120"), gettext_noop("months"), gettext_noop("reservations run for 1 to 36 months")
)
MONEY_PER_MONTH = Bound(
    _d("0"),
    None,
    gettext_noop("USD per month"),
    gettext_noop("a cost cannot be negative"),
    money=True,
)
MONEY_ONCE = Bound(
    _d("0"), None, gettext_noop("USD"), gettext_noop("a cost cannot be negative"), money=True
)
STORAGE_PRICE = Bound(
    _d("0"),
    _d("10"),
    gettext_noop("USD per GB-month"),
    gettext_noop(
        "object storage costs about 0.001–0.03 USD per GB-month; a larger figure is usually "
        "per TB-month"
    ),
)
EFFICIENCY = Bound(
    _d("0.01"),
    _d("1"),
    "",
    gettext_noop(
        "an efficiency is a share of the GPU's peak: 0.4 means 40 %, and it cannot pass 1"
    ),
)
MFU = Bound(
    _d("0.001"),
    _d("1"),
    "",
    gettext_noop("MFU is a share of the GPU's peak: 0.4 means 40 %, and it cannot pass 1"),
)
PERCENT = Bound(_d("0"), _d("100"), "%", gettext_noop("a share of the traffic is 0 to 100 %"))
POSITIVE_COUNT = Bound(_d("0"), None, "", gettext_noop("a count cannot be negative"))


def _positive(unit):
    return Bound(
        _d("0"),
        None,
        unit,
        gettext_noop("a datasheet figure is above 0 (empty when it does not apply)"),
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
        _d("0"),
        None,
        gettext_noop("requests per second"),
        gettext_noop("a request rate cannot be negative"),
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
        gettext_noop("USD per GPU"),
        gettext_noop("an upfront payment is at most the price of the GPU"),
        money=True,
    ),
    "purchase_price_per_gpu": PURCHASE_PRICE,
    "power_price_per_kwh": POWER_PRICE,
    "colocation_per_gpu_month": Bound(
        _d("0"),
        None,
        gettext_noop("USD per GPU-month"),
        gettext_noop("a cost cannot be negative"),
        money=True,
    ),
    "operations_per_month": MONEY_PER_MONTH,
    "storage_per_month": MONEY_PER_MONTH,
    "network_per_month": MONEY_PER_MONTH,
    "efficiency": EFFICIENCY,
    "reference_efficiency": EFFICIENCY,
    "baseline_gpus": POSITIVE_COUNT,
    "horizon_months": Bound(
        _d("1"),
        _d("120"),
        gettext_noop("months"),
        gettext_noop("a comparison runs for 1 month to 10 years"),
    ),
    "window_days": Bound(
        _d("1"), _d("366"), gettext_noop("days"), gettext_noop("the rollups cover up to a year")
    ),
    "usd_exchange_rate": Bound(
        _d("0.000001"),
        _d("1000000"),
        gettext_noop("per USD"),
        gettext_noop("units of the scenario's currency one US dollar buys"),
    ),
    "entered_gpu_hours_per_month": Bound(
        _d("0"),
        _d("1000000000"),
        gettext_noop("GPU-hours per month"),
        gettext_noop("a billion GPU-hours a month is over a million GPUs busy all month"),
    ),
    # Backups
    "hot_price_per_gb_month_usd": STORAGE_PRICE,
    "warm_price_per_gb_month_usd": STORAGE_PRICE,
    "cold_price_per_gb_month_usd": STORAGE_PRICE,
    "gray_ratio_percent": PERCENT,
    # Budgets (apps/showback)
    "amount_per_month": Bound(
        _d("0"),
        _d("100000000"),
        gettext_noop("per month, in the budget's currency"),
        gettext_noop("a budget is above 0, and 100 million a month is more than any fleet"),
        above_minimum=True,
    ),
    # Alert rules
    "threshold_usd": Bound(
        _d("0"), _d("100000000"), gettext_noop("USD"), gettext_noop("an amount cannot be negative")
    ),
    # Utilisation rules take 0–100 and budget rules may pass 100 (apps/alerts/models.py
    # rule_errors checks each kind); the column holds up to 999.99.
    "threshold_pct": Bound(
        _d("0"),
        _d("999.99"),
        "%",
        gettext_noop("a utilisation is at most 100, a budget's share used at most 999.99"),
    ),
    "window_hours": Bound(
        _d("1"), _d("2232"), gettext_noop("hours"), gettext_noop("a rule looks back up to 93 days")
    ),
    "stale_minutes": Bound(
        _d("1"), _d("10080"), gettext_noop("minutes"), gettext_noop("a week at most")
    ),
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

    def unit(self, bound: Bound, translate: Callable[[str], str] = _untranslated) -> str:
        """The bound's unit, translated (its translation keeps "USD"), in this currency."""
        unit = translate(bound.unit) if bound.unit else ""
        if bound.money and self.currency != "USD":
            return unit.replace("USD", self.currency)
        return unit


USD = Scale()


def _with_unit(number: str, unit: str) -> str:
    if not unit:
        return number
    return f"{number}{unit}" if unit == "%" else f"{number} {unit}"


def bound_error(
    label: str,
    value,
    bound: Bound,
    scale: Scale = USD,
    *,
    translate: Callable[[str], str] = _untranslated,
) -> str | None:
    """The message for a value outside its range (naming the field, the range with its
    unit and why), or None when it is inside."""
    if value is None:
        return None
    value = Decimal(value)
    low, high = scale.limit(bound, bound.minimum), scale.limit(bound, bound.maximum)
    unit = scale.unit(bound, translate)
    # Unscaled limits read as declared ("1.0 and 3.0" for the PUE).
    plain_limit = str if scale.usd_rate == 1 else plain
    too_low = low is not None and (value <= low if bound.above_minimum else value < low)
    too_high = high is not None and value > high
    if not (too_low or too_high):
        return None
    if low is not None and high is not None:
        expected = translate(_("between %(low)s and %(high)s")) % {
            "low": plain_limit(low),
            "high": _with_unit(plain_limit(high), unit),
        }
    elif bound.above_minimum:
        expected = translate(_("above %(limit)s")) % {"limit": _with_unit(plain_limit(low), unit)}
    elif too_low:
        expected = translate(_("at least %(limit)s")) % {
            "limit": _with_unit(plain_limit(low), unit)
        }
    else:
        expected = translate(_("at most %(limit)s")) % {
            "limit": _with_unit(plain_limit(high), unit)
        }
    return translate(_("%(label)s must be %(expected)s; got %(value)s: %(reason)s.")) % {
        "label": label,
        "expected": expected,
        "value": plain(value),
        "reason": translate(bound.reason),
    }


def needs_confirmation(value, bound: Bound, scale: Scale = USD) -> bool:
    """True when ``value`` is inside the range but high enough to be confirmed first."""
    limit = scale.limit(bound, bound.confirm_above)
    return limit is not None and value is not None and Decimal(value) > limit


# The "per …" parts of the money units that ask for a confirmation, for extraction.
PER_UNITS = (gettext_noop("per GPU-hour"),)


def _per(bound: Bound, translate: Callable[[str], str] = _untranslated) -> str:
    """ "per GPU-hour" of "USD per GPU-hour": the money part is said by money_text."""
    return translate(bound.unit.partition(" ")[2])


def confirmation_label(
    value, bound: Bound, scale: Scale = USD, *, translate: Callable[[str], str] = _untranslated
) -> str:
    """What the person ticks: "Yes, $62.00 per GPU-hour is right"."""
    return translate(_("Yes, %(price)s %(per)s is right")) % {
        "price": money_text(value, scale.currency),
        "per": _per(bound, translate),
    }


def confirmation_warning(
    label: str,
    value,
    bound: Bound,
    scale: Scale = USD,
    *,
    how: str | None = None,
    translate: Callable[[str], str] = _untranslated,
) -> str:
    """Why the value asks for a confirmation and how to give it (by default, the form's
    checkbox; the API passes its own ``how``)."""
    limit = scale.limit(bound, bound.confirm_above)
    how = how or translate(_("tick “%(label)s”")) % {
        "label": confirmation_label(value, bound, scale, translate=translate)
    }
    return translate(
        _(
            "%(label)s: %(price)s %(per)s is above %(limit)s %(per)s, which few GPUs rent "
            "for (%(reason)s). Check it, then %(how)s to save it."
        )
    ) % {
        "label": label,
        "price": money_text(value, scale.currency),
        "per": _per(bound, translate),
        "limit": money_text(limit, scale.currency),
        "reason": translate(bound.reason),
        "how": how,
    }
