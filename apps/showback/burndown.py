"""A budget's burn-down for the month: what is spent, the share used, a forecast at the
month's end and the state in words. Plain Python over numbers, no Django imports.

Forecast (a linear run-rate projection, as cloud billing consoles forecast a month):
forecast = spent so far + mean daily spend of the last complete days × days left, where
the mean is taken over the last 7 complete UTC days of the month, or over those there
are when the month has fewer, and days left run from the end of the current hour to the
month's end. Before the month's first complete day there is no rate to project: no
forecast.

Every amount is in one currency, the reporting currency the spend is read in (the
budget's own amount converted to it by the caller). A budget whose amount could not be
converted (its month's exchange rate is missing) has no amount: its share used, state and
forecast's share are unknown (``UNKNOWN``), never computed as if the rate were 1.

Money in, money out: amounts given as ``Decimal`` give a ``Decimal`` spend and forecast,
the days left read exactly through their decimal text (apps/core/money.py); floats give
floats. Shares (%) are floats either way.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from apps.core.money import as_decimal

FORECAST_DAYS = 7
# Used share (%) at or above which a budget enters each state, in rising order.
THRESHOLDS_PCT = (50, 75, 90, 100)
OK = "ok"
OVER = "over"
UNKNOWN = "unknown"
STATES = (OK, "50", "75", "90", OVER, UNKNOWN)


def month_start(day: date) -> datetime:
    return datetime(day.year, day.month, 1, tzinfo=UTC)


def next_month_start(day: date) -> datetime:
    if day.month == 12:
        return datetime(day.year + 1, 1, 1, tzinfo=UTC)
    return datetime(day.year, day.month + 1, 1, tzinfo=UTC)


def state_of(used_pct: float) -> str:
    """``ok`` below 50 %, then ``50``, ``75``, ``90``, and ``over`` from 100 %."""
    if used_pct >= 100:
        return OVER
    for threshold in reversed(THRESHOLDS_PCT[:-1]):
        if used_pct >= threshold:
            return str(threshold)
    return OK


@dataclass(frozen=True)
class ForecastWindow:
    """The complete days whose mean daily spend is projected: [start, end)."""

    start: datetime
    end: datetime

    @property
    def days(self) -> int:
        return (self.end - self.start).days


def forecast_window(now: datetime) -> ForecastWindow:
    """The last ``FORECAST_DAYS`` complete UTC days of ``now``'s month (fewer early on)."""
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    start = max(month_start(now.date()), today - timedelta(days=FORECAST_DAYS))
    return ForecastWindow(start, today)


def days_left(now: datetime) -> float:
    """Days from the end of the current hour (what "spent so far" covers) to the month's
    end, in fractions of a day."""
    hour_end = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    return max(0.0, (next_month_start(now.date()) - hour_end) / timedelta(days=1))


@dataclass(frozen=True)
class Burndown:
    # The budget's amount in ``currency``; None when it could not be converted to it.
    amount: float | Decimal | None
    spent: float | Decimal
    window_spent: float | Decimal  # spent over the forecast window's complete days
    window_days: int
    days_left: float
    currency: str = "USD"
    # (currency, month) of the exchange rates missing: to convert the budget's amount
    # (then ``amount`` is None), or some of the spend (then it is incomplete).
    missing_rates: frozenset = frozenset()

    @property
    def used_pct(self) -> float | None:
        if self.amount is None:
            return None
        return float(100 * as_decimal(self.spent) / as_decimal(self.amount))

    @property
    def state(self) -> str:
        used = self.used_pct
        return UNKNOWN if used is None else state_of(used)

    @property
    def mean_daily(self) -> float | Decimal | None:
        if not self.window_days:
            return None
        return self.window_spent / self.window_days

    @property
    def forecast(self) -> float | Decimal | None:
        """spent so far + mean daily spend × days left (None before a complete day)."""
        if self.mean_daily is None:
            return None
        if isinstance(self.spent, Decimal):
            return self.spent + as_decimal(self.mean_daily) * as_decimal(self.days_left)
        return self.spent + self.mean_daily * self.days_left

    @property
    def forecast_pct(self) -> float | None:
        forecast = self.forecast
        if forecast is None or self.amount is None:
            return None
        return float(100 * as_decimal(forecast) / as_decimal(self.amount))

    @property
    def missing_rates_sorted(self) -> list[tuple]:
        return sorted(self.missing_rates, key=lambda item: (item[1], item[0]))

    @property
    def short_window(self) -> bool:
        """The mean covers fewer than ``FORECAST_DAYS`` days: the page says so."""
        return self.window_days < FORECAST_DAYS
