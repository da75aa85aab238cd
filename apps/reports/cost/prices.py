"""The prices in force: each pool's price periods, and which one prices an hour.

A pool's current prices are its own columns (apps/pools/prices.py); its price periods
(``PoolPricePeriod``) say which prices held from when. A row of the rollups is priced at
the period in force at its start: in SQL, a CASE over the periods that differ from the
pool's current prices in the span (``price_case``); in Python, per pool and segment
(``in_force_at``)."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from django.db.models import Case, DecimalField, F, Q, Value, When
from django.utils import timezone

from apps.core.money import as_decimal, times
from apps.currencies.codes import USD
from apps.pools.models import Pool, PoolPricePeriod
from apps.reports.cost.rates import (
    AUTO,
    conversion_for,
    currencies_of,
    month_of,
    month_starts_inside,
)
from apps.reports.cost.service import day_read_hour_by_hour, paid_range
from apps.reports.span import ONE_DAY, ONE_HOUR, Span


def price_periods_of(pool_ids=None) -> dict[int, list]:
    """Each pool's price periods, oldest first (None: every pool's). One query."""
    periods = defaultdict(list)
    queryset = PoolPricePeriod.objects.order_by("effective_from")
    if pool_ids is not None:
        queryset = queryset.filter(pool_id__in=pool_ids)
    for period in queryset:
        periods[period.pool_id].append(period)
    return periods


def in_force_at(periods: list, moment: datetime):
    """The period of ``periods`` (oldest first) in force at ``moment``; None before the
    first."""
    found = None
    for period in periods:
        if period.effective_from <= moment:
            found = period
    return found


def mid_day_changes(span: Span, periods: dict[int, list]) -> tuple[Q, Q]:
    """(daily rows, hourly rows) of the pools' UTC days in the span on which a price
    period starts after midnight: such a day is priced hour by hour."""
    days, hours = Q(pk__in=[]), Q(pk__in=[])
    for pool_id, pool_periods in periods.items():
        for period in pool_periods:
            start = period.effective_from.astimezone(UTC)
            if start.hour and span.start <= start < span.end:
                day, day_hours = day_read_hour_by_hour(pool_id, start)
                days |= day
                hours |= day_hours
    return days, hours


def price_case(field: str, span: Span, periods: dict[int, list], on_or_after):
    """The pool's ``field`` in force for a row, as a CASE over the price periods that
    differ from the pool's current prices in the span (none for a pool whose prices did
    not change: the pool's own column). ``on_or_after(pool_id, start)``: the Q of the
    rows from ``start`` on."""
    whens = []
    for pool_id, pool_periods in periods.items():
        at_start = in_force_at(pool_periods, span.start)
        inside = [p for p in pool_periods if span.start < p.effective_from < span.end]
        for period in reversed(inside):  # latest first: a CASE takes the first match
            whens.append(
                When(
                    on_or_after(pool_id, period.effective_from), then=Value(getattr(period, field))
                )
            )
        # The period in force now is the pool's own prices (apps/pools/prices.py).
        now = in_force_at(pool_periods, timezone.now())
        if at_start is not None and (
            inside or now is None or getattr(at_start, field) != getattr(now, field)
        ):
            whens.append(When(pool_id=pool_id, then=Value(getattr(at_start, field))))
    # Hours no period covers, and pools with one price throughout: the current one.
    return Case(*whens, default=F(f"pool__{field}"), output_field=DecimalField())


def day_on_or_after(pool_id, start):
    """Daily rows of the days from ``start`` on (a change after midnight: from the next
    day, its own being read hour by hour)."""
    start = start.astimezone(UTC)
    day = start.date() if not start.hour else start.date() + ONE_DAY
    return Q(pool_id=pool_id, day__gte=day)


def hour_on_or_after(pool_id, start):
    return Q(pool_id=pool_id, hour__gte=start)


def pool_full_price(pool_or_period, tdp_watts: int) -> Decimal:
    fixed, per_kwh = price_split(pool_or_period)
    return fixed + per_kwh * Decimal(tdp_watts) / 1000


@dataclass(frozen=True)
class PaidPrices:
    """Σ over a pool's paid hours of the full price in force in each, USD per GPU, and
    the price split (fixed USD per GPU-hour, USD per GPU kWh) when one was in force
    throughout (None: the prices changed in the span). ``total`` and ``single`` are the
    same in the reporting currency; ``missing_rates`` the (currency, month) of the rates
    missing to convert them (those hours are left out)."""

    total_usd: Decimal
    single_split: tuple[Decimal, Decimal] | None
    total: Decimal | None = None
    single: tuple[Decimal, Decimal] | None = None
    missing_rates: frozenset = frozenset()

    def single_usd_per_gpu_hour(self, tdp_watts: int) -> Decimal | None:
        if self.single_split is None:
            return None
        fixed, per_kwh = self.single_split
        return fixed + per_kwh * Decimal(tdp_watts) / 1000

    def in_reporting(self) -> "PaidPrices":
        """These prices in the reporting currency (in the USD fields)."""
        if self.total is None:
            return self
        return PaidPrices(self.total, self.single, None, None, self.missing_rates)


def price_split(pool_or_period) -> tuple[Decimal, Decimal]:
    """(fixed USD per GPU-hour, USD per GPU kWh), as stored (Decimal)."""
    return (
        as_decimal(pool_or_period.fixed_price_per_gpu_hour_usd),
        as_decimal(pool_or_period.price_per_gpu_kwh_usd),
    )


def _converted_split(split, currency, month, target, conversion, missing):
    fixed, per_kwh = split
    fixed = conversion.convert(fixed, currency, month, target, missing)
    per_kwh = conversion.convert(per_kwh, currency, month, target, missing)
    return None if fixed is None or per_kwh is None else (fixed, per_kwh)


def paid_hours_full_price_usd(
    span: Span, pools: list[Pool], periods: dict[int, list], conversion=AUTO
) -> dict[int, PaidPrices]:
    """Per pool: Σ over the span's paid hours of the full price per GPU-hour in force in
    each (fixed + per kWh × TDP, what an hour without telemetry costs a GPU), in USD and
    in the reporting currency, each month's hours at its rates (apps/reports/cost/rates.py).

    Hours before a pool's first price period, or of a pool without any, are at its
    current prices, as ``pool_usage_totals`` does. ``periods``: ``price_periods_of``."""
    if conversion is AUTO:
        conversion = conversion_for(span, currencies_of(periods) | {p.currency for p in pools})
    months = month_starts_inside(span) if conversion is not None else []
    sums = {}
    for pool in pools:
        begin, finish = paid_range(pool, span)
        tdp = pool.gpu_model.tdp_watts
        # (start, split, currency) steps: the current prices until the first period, then
        # each one's; cut at each month's start when amounts are converted.
        steps = [(begin, price_split(pool), pool.currency)]
        steps += [
            (period.effective_from, price_split(period), period.currency)
            for period in periods.get(pool.id, [])
        ]
        pieces = []  # (from, until, split, currency) of the paid hours
        for index, (start, split, currency) in enumerate(steps):
            until = steps[index + 1][0] if index + 1 < len(steps) else finish
            low, high = max(start, begin), min(until, finish)
            for cut in [cut for cut in months if low < cut < high]:
                pieces.append((low, cut, split, currency))
                low = cut
            if high > low:
                pieces.append((low, high, split, currency))
        total, splits = Decimal(0), set()
        reporting_total, reporting_splits, missing = Decimal(0), set(), set()
        for low, high, split, currency in pieces:
            hours = (high - low) / ONE_HOUR
            if conversion is None:
                usd, reporting = split, split
            else:
                month = month_of(low)
                usd = _converted_split(split, currency, month, USD, conversion, missing)
                reporting = _converted_split(
                    split, currency, month, conversion.reporting, conversion, missing
                )
            for converted, amounts, kept in (
                (usd, splits, "usd"),
                (reporting, reporting_splits, "reporting"),
            ):
                if converted is None:
                    amounts.add(None)
                    continue
                fixed, per_kwh = converted
                amount = times(hours, fixed + per_kwh * Decimal(tdp) / 1000)
                if kept == "usd":
                    total += amount
                else:
                    reporting_total += amount
                amounts.add(converted)
        sums[pool.id] = PaidPrices(
            total,
            _single(splits),
            reporting_total,
            _single(reporting_splits),
            frozenset(missing),
        )
    return sums


def _single(splits: set):
    return next(iter(splits)) if len(splits) == 1 and None not in splits else None
