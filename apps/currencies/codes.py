"""ISO 4217 currency codes, as the Unicode CLDR lists them (through babel, which Django's
translations and the docs site already bring): the one list the pools' currencies, the
exchange rates and ``REPORTING_CURRENCY`` are checked against."""

from functools import cache

from babel.numbers import get_currency_name, get_currency_symbol, list_currencies
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import get_language, gettext

USD = "USD"


@cache
def currency_codes() -> frozenset[str]:
    return frozenset(code for code in list_currencies() if len(code) == 3 and code.isalpha())


def is_currency(code: str) -> bool:
    return isinstance(code, str) and code in currency_codes()


def currency_problem(code) -> str | None:
    """Why ``code`` is not an ISO 4217 code, or None."""
    if is_currency(code):
        return None
    return gettext(
        "%(code)s is not an ISO 4217 currency code: three capital letters such as USD, EUR or CNY."
    ) % {"code": code or "''"}


def validate_currency(code) -> None:
    problem = currency_problem(code)
    if problem:
        raise ValidationError(problem, code="currency")


def _locale() -> str:
    return (get_language() or "en").replace("-", "_").replace("zh_hans", "zh_Hans")


def currency_name(code: str) -> str:
    try:
        return get_currency_name(code, locale=_locale())
    except Exception:  # an unknown locale: the English name
        return get_currency_name(code, locale="en")


@cache
def currency_choices() -> list[tuple[str, str]]:
    """(code, "CODE — English name") for forms, sorted by code."""
    return [
        (code, f"{code} — {get_currency_name(code, locale='en')}")
        for code in sorted(currency_codes())
    ]


def currency_symbol(code: str) -> str:
    return get_currency_symbol(code, locale="en")


def reporting_currency() -> str:
    """The installation's reporting currency (``REPORTING_CURRENCY``)."""
    return settings.REPORTING_CURRENCY
