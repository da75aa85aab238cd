"""The cost and busy GPU-hours of every UTC day of a span, by pool purpose: the daily
split charts of the Overview, the report and the pool page."""

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.db.models import F, FloatField, Sum
from django.db.models.functions import Coalesce, TruncDate

from apps.accounts.scope import EVERYTHING, Scope
from apps.core.money import as_decimal
from apps.currencies.codes import USD
from apps.pools.models import Pool, Purpose
from apps.reports.cost.prices import (
    day_on_or_after,
    hour_on_or_after,
    mid_day_changes,
    price_case,
    price_periods_of,
)
from apps.reports.cost.rates import conversion_for, currencies_of
from apps.reports.cost.service import (
    day_read_hour_by_hour,
    service_edge_hours,
    service_periods_of,
    service_share_of,
)
from apps.reports.span import ONE_HOUR, Span
from apps.telemetry.models import PoolDailyUsage, PoolHourlyUsage
from apps.telemetry.rollups.days import in_service_q


@dataclass
class DailySplit:
    days: list[date]
    busy_gpu_hours: dict[str, list[float]]  # purpose → per day
    measured_cost_usd: dict[str, list[Decimal]]
    # (currency, month) of the exchange rates missing to convert some pools' days to USD:
    # those costs are left out (apps/reports/cost/rates.py).
    missing_rates: set = field(default_factory=set)


def daily_split(
    start: datetime,
    end: datetime,
    *,
    pool: Pool | None = None,
    cluster: str | None = None,
    scope: Scope = EVERYTHING,
) -> DailySplit:
    """Busy GPU-hours and the cost of measured hours per UTC day and pool purpose, of the
    pools in ``scope``, at the prices in force. Four queries: the price periods, the
    service periods, the daily rows, and the hourly rows of the days a price changed, or
    a service period started or ended, after midnight (an hour the service period starts
    or ends inside of counts for its fraction in service, as the report counts it).
    ``cluster``: a cluster's slug, its pools only."""
    span = Span.of(start, end)
    first, last = span.start.date(), (span.end - ONE_HOUR).date()
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    index = {day: position for position, day in enumerate(days)}
    busy = {value: [0.0] * len(days) for value in Purpose.values}
    cost = {value: [Decimal(0)] * len(days) for value in Purpose.values}
    periods = price_periods_of()
    mid_day_days, mid_day_hours = mid_day_changes(span, periods)
    edges = service_edge_hours(span, service_periods_of(None if pool is None else [pool.pk]))
    for pool_id, hour in edges:
        day, hours = day_read_hour_by_hour(pool_id, hour)
        mid_day_days |= day
        mid_day_hours |= hours
    service_share = service_share_of(edges)
    rows = PoolDailyUsage.objects.filter(
        scope.team_filter("pool__team"), day__gte=first, day__lte=last
    ).exclude(mid_day_days)
    # A pool's day with a price change after midnight is summed from its hourly rows.
    hourly = (
        PoolHourlyUsage.objects.filter(
            mid_day_hours, scope.team_filter("pool__team"), in_service_q(), reporting_gpus__gt=0
        )
        .annotate(day_utc=TruncDate("hour", tzinfo=UTC))
        .values("pool__purpose", "pool__currency", day=F("day_utc"))
    )
    if pool is not None:
        rows = rows.filter(pool=pool)
        hourly = hourly.filter(pool=pool)
    if cluster:
        rows = rows.filter(pool__cluster__slug=cluster)
        hourly = hourly.filter(pool__cluster__slug=cluster)
    tdp_kw = F("pool__gpu_model__tdp_watts") / 1000.0
    daily_cost = price_case("fixed_price_per_gpu_hour_usd", span, periods, day_on_or_after) * F(
        "measured_capacity_gpu_hours"
    ) + price_case("price_per_gpu_kwh_usd", span, periods, day_on_or_after) * (
        F("energy_kwh") + tdp_kw * F("busy_gpu_hours_without_energy")
    )
    hourly_cost = price_case("fixed_price_per_gpu_hour_usd", span, periods, hour_on_or_after) * F(
        "capacity_gpu_hours"
    ) + price_case("price_per_gpu_kwh_usd", span, periods, hour_on_or_after) * Coalesce(
        "energy_kwh", tdp_kw * F("busy_gpu_hours")
    )
    # Each pool's day is priced in its currency and converted to USD at the day's month.
    conversion = conversion_for(span, currencies_of(periods))
    missing = set()
    for row in [
        *rows.values("day", "pool__purpose", "pool__currency").annotate(
            busy=Sum("busy_gpu_hours"), cost=Sum(daily_cost, output_field=FloatField())
        ),
        *hourly.annotate(
            busy=Sum(F("busy_gpu_hours") * service_share),
            cost=Sum(hourly_cost * service_share, output_field=FloatField()),
        ),
    ]:
        position = index[row["day"]]
        busy[row["pool__purpose"]][position] += row["busy"] or 0.0
        # A sum per purpose and day, read as the Decimal of its shortest repr.
        amount = as_decimal(row["cost"] or 0.0)
        if conversion is not None:
            day = row["day"]
            amount = conversion.convert(
                amount, row["pool__currency"], day.replace(day=1), USD, missing
            )
        cost[row["pool__purpose"]][position] += amount or Decimal(0)
    return DailySplit(days, busy, cost, missing)
