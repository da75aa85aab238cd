"""The exchange rates of months, read in one query, and the one conversion every page
outside the cost engine uses for a pool's price: its effective price per GPU-hour, in the
pool's (or price period's) currency, as US dollars at the month's rate (``usd_price``)."""

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal

from django.utils.translation import gettext

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


def month_of(moment: datetime) -> date:
    """The first day of ``moment``'s UTC month: the month whose rate converts it."""
    moment = moment.astimezone(UTC)
    return date(moment.year, moment.month, 1)


@dataclass(frozen=True)
class UsdPrice:
    """A price converted to US dollars: ``usd`` (unrounded), or None with ``missing``,
    the (currency, month) of the rate to add. A missing rate is never taken as 1."""

    usd: Decimal | None
    missing: tuple[str, date] | None = None

    @property
    def missing_text(self) -> str:
        """ "no CNY rate for 2026-03": what the page says instead of the figure."""
        if self.missing is None:
            return ""
        currency, month = self.missing
        return gettext("no %(currency)s exchange rate for %(month)s") % {
            "currency": currency,
            "month": f"{month:%Y-%m}",
        }


@dataclass(frozen=True)
class UsdRates:
    """One month's rates, read once for every price a computation converts."""

    month: date
    rates: dict[str, Decimal] = field(default_factory=dict)

    def to_usd(self, amount, currency: str) -> UsdPrice:
        """``amount`` in ``currency`` as US dollars at the month's rate (unrounded: the
        figure built from it is rounded once, where it is shown)."""
        if amount is None:
            return UsdPrice(None)
        amount = Decimal(str(amount)) if isinstance(amount, float) else Decimal(amount)
        if currency == USD:
            return UsdPrice(amount)
        rate = self.rates.get(currency)
        if rate is None:
            return UsdPrice(None, (currency, self.month))
        return UsdPrice(amount / rate)


def usd_rates_at(currencies, moment: datetime) -> UsdRates:
    """The rates of ``moment``'s month for ``currencies``: one query, none when every
    currency is USD."""
    month = month_of(moment)
    rates = rates_of(set(currencies), [month])
    return UsdRates(month, {currency: rate for (currency, _), rate in rates.items()})


def usd_price(
    pool_or_period,
    moment: datetime,
    rates: UsdRates | None = None,
    price_field: str = "effective_price_per_gpu_hour_usd",
) -> UsdPrice:
    """A pool's (or price period's) effective price per GPU-hour (or its ``price_field``:
    the fixed part, the price per GPU kWh), stored in its own currency whatever the
    field's ``_usd`` says, as US dollars at the rate of ``moment``'s month. ``rates``: read
    once by the caller (``usd_rates_at``) when it converts many prices; read here
    otherwise."""
    currency = pool_or_period.currency or USD
    if rates is None or (currency != USD and rates.month != month_of(moment)):
        rates = usd_rates_at({currency}, moment)
    return rates.to_usd(getattr(pool_or_period, price_field), currency)


def usd_per_gpu_hour(pool_or_period, moment: datetime, rates: UsdRates | None = None):
    """``usd_price(...).usd``: Decimal, or None when the month's rate is missing."""
    return usd_price(pool_or_period, moment, rates).usd


def missing_rate_data(missing: tuple[str, date] | None) -> dict | None:
    """A missing (currency, month) as the API gives it: {"currency", "month": "YYYY-MM"}."""
    if missing is None:
        return None
    currency, month = missing
    return {"currency": currency, "month": f"{month:%Y-%m}"}
