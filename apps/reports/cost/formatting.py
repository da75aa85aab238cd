"""The numbers of an explanation, written as a reader checks them with a calculator:
quantities, hours, amounts and prices rounded as every page rounds them
(apps/core/money.py), and units that read as words in the reader's language
(framework-free)."""

from apps.core import money
from apps.core.sentences import gettext, gettext_noop

# Translated as the text is built, in the reader's language (apps/core/sentences.py).
_ = gettext


# The units that read as words, translated where a value is written with them.
UNIT_WORDS = {
    "requests": gettext_noop("requests"),
    "tokens": gettext_noop("tokens"),
    "GPUs": gettext_noop("GPUs"),
    "policies": gettext_noop("policies"),
}


# What a price is per, after "USD/": the ones that read as words.
PER_WORDS = {
    "1k requests": gettext_noop("1k requests"),
    "1M tokens": gettext_noop("1M tokens"),
}


def unit_word(unit: str) -> str:
    return _(UNIT_WORDS[unit]) if unit in UNIT_WORDS else unit


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def quantity(value: float) -> str:
    """GPU-hours, hours, kWh: whole numbers bare, else one or two decimals."""
    if value is None:
        return "—"
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"


def kilowatts(value: float) -> str:
    """A TDP in kW as the datasheet gives it in W: 700 W → "0.7"."""
    return _trim(f"{value:,.3f}")


def hours_text(value: float) -> str:
    """Hours: whole numbers bare, else to the minute's precision (50.75, not 50.8)."""
    if value is None:
        return "—"
    text = f"{float(value):,.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def usd(value: float) -> str:
    """An amount to the cent, rounded as every page rounds it (apps/core/money.py)."""
    amount = money.to_cents(value)
    if amount is None:
        return "—"
    sign = "−" if amount < 0 else ""
    return f"{sign}${abs(amount):,.2f}"


def price(value: float) -> str:
    """A price per unit: at least cents, up to four decimals ("$2.49", "$0.6849"),
    rounded as every page rounds it (apps/core/money.py)."""
    text = f"{money.to_unit_price(value):,.4f}"
    whole, decimals = text.split(".")
    decimals = decimals.rstrip("0").ljust(2, "0")
    return f"${whole}.{decimals}"


def count(value: int) -> str:
    return f"{value:,}"


def format_value(value, unit: str) -> str:
    if value is None:
        return _("undefined")
    if unit == "USD":
        return usd(value)
    if unit.startswith("USD/"):
        per = unit[4:]
        return f"{price(value)}/{_(PER_WORDS[per]) if per in PER_WORDS else per}"
    if unit == "%":
        return f"{value:,.2f} %"
    if unit in UNIT_WORDS:
        return f"{count(value)} {unit_word(unit)}"
    return f"{quantity(value)} {unit}"
