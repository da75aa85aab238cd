"""Currency conversion in the cost engine: a pool-hour's cost, in the currency of the
price period in force in it, is converted to US dollars at the rate of the hour's UTC
month, then to the reporting currency (``REPORTING_CURRENCY``) at that month's rate.

The engine prices each pool's sums per segment (apps/reports/cost/pool_usage.py); when
any currency other than USD is involved, segments are cut at every month's start, so a
segment lies in one month and is converted at one rate: converting the sum of a
month's hours equals converting each hour (the rate is a constant factor).

A closed month keeps the rates it closed with (``ClosedMonth.exchange_rates``): the
figures of a closed month recomputed later use those, never a rate edited since.

A rate that is missing is never taken as 1: the amount it would convert is left out of
the converted figures, and the figures carry the (currency, month) in ``missing_rates``
so pages and the API say they are incomplete and which rate to add."""

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal

from apps.currencies.codes import USD, reporting_currency
from apps.currencies.rates import month_of, rates_of
from apps.reports.models import ClosedMonth
from apps.reports.span import Span

# A function's default that builds the conversion itself.
AUTO = object()


def currencies_of(periods: dict) -> set[str]:
    """The currencies of the price periods (``price_periods_of``)."""
    return {period.currency for pool_periods in periods.values() for period in pool_periods}


def _next_month(day: date) -> date:
    return date(day.year + 1, 1, 1) if day.month == 12 else date(day.year, day.month + 1, 1)


def _first_instant(month: date) -> datetime:
    return datetime(month.year, month.month, 1, tzinfo=UTC)


def months_of(span: Span) -> list[date]:
    """The first days of the months [start, end) touches, in order."""
    months, cursor = [], month_of(span.start)
    while _first_instant(cursor) < span.end:
        months.append(cursor)
        cursor = _next_month(cursor)
    return months


def month_starts_inside(span: Span) -> list[datetime]:
    """The months' first instants strictly inside (start, end): where segments are cut."""
    return [
        _first_instant(month)
        for month in months_of(span)
        if span.start < _first_instant(month) < span.end
    ]


@dataclass
class Conversion:
    """The rates a span's figures are converted at: (currency, month) → units per USD."""

    reporting: str
    rates: dict = field(default_factory=dict)

    def units_per_usd(self, currency: str, month: date) -> Decimal | None:
        if currency == USD:
            return Decimal(1)
        return self.rates.get((currency, month))

    def convert(self, amount: Decimal, currency: str, month: date, target: str, missing: set):
        """``amount`` in ``currency`` as ``target`` at the month's rates; None, with the
        missing (currency, month) added to ``missing``, when a rate is missing."""
        if currency == target:
            return amount
        source_rate = self.units_per_usd(currency, month)
        target_rate = self.units_per_usd(target, month)
        if source_rate is None:
            missing.add((currency, month))
        if target_rate is None:
            missing.add((target, month))
        if source_rate is None or target_rate is None:
            return None
        return amount * target_rate / source_rate


def needs_conversion(currencies) -> bool:
    return reporting_currency() != USD or any(code != USD for code in currencies)


def conversion_for(span: Span, currencies) -> Conversion | None:
    """The conversion of ``span``'s figures in ``currencies``; None when every amount is
    USD and so is the reporting currency (no query then). Two queries otherwise: the
    months' rates, and the rates closed months froze.

    A closed month converts at the rates it closed with. A currency it closed without a
    rate for (a rate recorded since, or a reporting currency chosen since) takes the rate
    recorded now: no figure of the month was signed in it, and what it converts of the
    month's live figures is booked as an adjustment, never into the frozen ones."""
    currencies = set(currencies)
    if not needs_conversion(currencies):
        return None
    months = months_of(span)
    wanted = {*currencies, reporting_currency()}
    rates = rates_of(wanted, months)
    for closed in ClosedMonth.objects.filter(is_closed=True, month__in=months).only(
        "month", "exchange_rates"
    ):
        for currency, text in (closed.exchange_rates or {}).items():
            rates[(currency, closed.month)] = Decimal(text)
    return Conversion(reporting_currency(), rates)


def frozen_rates(month: date) -> dict[str, str]:
    """The rates recorded for ``month``, as a closed month stores them: {currency: text}."""
    from apps.currencies.models import ExchangeRate

    rows = ExchangeRate.objects.filter(month=month).values_list("currency", "units_per_usd")
    return {currency: str(rate) for currency, rate in sorted(rows)}


def missing_text(missing) -> list[dict]:
    """The missing rates as the API gives them: [{"currency", "month"}], sorted."""
    return [
        {"currency": currency, "month": f"{month:%Y-%m}"}
        for currency, month in sorted(missing, key=lambda item: (item[1], item[0]))
    ]
