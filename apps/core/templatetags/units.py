"""Numbers with their units, the same way on every page."""

from django import template
from django.contrib.humanize.templatetags.humanize import intword
from django.utils.translation import get_language, gettext

from apps.core import money

register = template.Library()


@register.filter
def gigabytes(value_bytes):
    """Bytes as GB (10⁹ bytes, the vendors' unit): 80000000000 → "80.0 GB"."""
    if value_bytes is None or value_bytes == "":
        return "—"
    return f"{value_bytes / 1e9:,.1f} GB"


@register.filter
def gibibytes(value_bytes):
    if value_bytes is None or value_bytes == "":
        return "—"
    return f"{value_bytes / 2**30:,.1f} GiB"


@register.filter
def duration(seconds):
    """Seconds as the largest sensible unit: "3.2 days", "5.0 h", "12 min"."""
    if seconds is None:
        return "—"
    seconds = float(seconds)
    if seconds >= 2 * 86400:
        return gettext("%(days)s days") % {"days": f"{seconds / 86400:,.1f}"}
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:,.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:,.0f} min"
    return f"{seconds:,.0f} s"


@register.filter
def usd(value, places=2):
    """Dollars rounded half up to ``places`` decimals (apps/core/money.py): 0.125 → "$0.13",
    510.72000000000014 → "$510.72", −0.01 → "−$0.01"; "—" for no value."""
    amount = money.rounded(value, int(places))
    if amount is None:
        return "—"
    if amount < 0:
        # The sign before the currency, as the explanations write it: −$0.01.
        return f"−${-amount:,.{int(places)}f}"
    return f"${amount:,.{int(places)}f}"


@register.filter
def percent(fraction, places=0):
    if fraction is None:
        return "—"
    return f"{float(fraction) * 100:,.{int(places)}f} %"


@register.filter
def pct(value_pct, places=1):
    """A value already in percent (0–100): ``56.25|pct`` → "56.3 %"."""
    if value_pct is None or value_pct == "":
        return "—"
    return f"{float(value_pct):,.{int(places)}f} %"


@register.filter
def number(value, places=0):
    """Thousands separators and fixed decimals; "—" for a missing value."""
    if value is None or value == "":
        return "—"
    return f"{float(value):,.{int(places)}f}"


# Chinese counts large numbers in 万 (10⁴) and 亿 (10⁸), not in thousands and billions.
_CHINESE_LARGE_UNITS = ((1e8, "亿"), (1e4, "万"))


@register.filter
def large_count(value):
    """A large count in words, the reader's way: 200000000000 → "200.0 billion" in
    English (Django's ``intword``), "2,000 亿" in Chinese; below 10,000 the number itself."""
    if value is None or value == "":
        return "—"
    value = float(value)
    if (get_language() or "").startswith("zh"):
        for size, unit in _CHINESE_LARGE_UNITS:
            if abs(value) >= size:
                scaled = value / size
                places = 0 if scaled >= 100 or scaled == int(scaled) else 1
                return f"{scaled:,.{places}f} {unit}"
        return f"{value:,.0f}"
    return intword(int(value)) if abs(value) >= 1e6 else f"{value:,.0f}"


def _figure_of(row, name):
    return row.get(name) if isinstance(row, dict) else getattr(row, name, None)


@register.simple_tag
def rounding_usd(rows, figure, total, places=2):
    """The rounding line of a table whose ``figure`` column is summed into ``total``
    (apps/core/money.py): the total as shown minus the sum of the rows as shown, or None
    when they add up. ``{% rounding_usd rows "cost_usd" total_usd as rounding %}``."""
    if total is None or total == "":
        return None
    return money.rounding_line((_figure_of(row, figure) for row in rows), total, int(places))
