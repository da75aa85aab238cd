"""Peak and off-peak hours: each serving pool's cost of measured hours and requests in
its peak and off-peak local hours."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.db.models import Exists, F, FloatField, OuterRef, Sum, Value
from django.db.models.functions import Coalesce

from apps.accounts.scope import EVERYTHING, Scope
from apps.core.money import as_decimal
from apps.currencies.codes import USD
from apps.currencies.rates import rates_of
from apps.pools.hours import parse_hour_ranges
from apps.pools.models import Pool, Workload
from apps.reports.cost import costmodel
from apps.reports.cost.prices import hour_on_or_after, price_case, price_periods_of
from apps.reports.cost.rates import months_of
from apps.reports.span import Span
from apps.reports.usage.clock import local_hour_counts, sums_by_local_hour
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests

_ZERO = Value(0.0, output_field=FloatField())


@dataclass
class PeakSplitRow:
    pool: Pool
    peak_hours: frozenset
    peak_hours_configured: bool
    peak_cost_usd: Decimal = Decimal(0)
    offpeak_cost_usd: Decimal = Decimal(0)
    peak_requests: int = 0
    offpeak_requests: int = 0
    peak_tokens: int = 0
    offpeak_tokens: int = 0
    # The (currency, month) of the exchange rates missing to convert the pool's costs:
    # those months' costs are left out, never read as dollars.
    missing_rates: frozenset = frozenset()

    @property
    def peak_cost_per_1k_requests_usd(self):
        if self.missing_rates:  # a month's cost left out: no ratio rather than a low one
            return None
        return costmodel.cost_per_thousand_requests_usd(self.peak_cost_usd, self.peak_requests)

    @property
    def offpeak_cost_per_1k_requests_usd(self):
        if self.missing_rates:
            return None
        return costmodel.cost_per_thousand_requests_usd(
            self.offpeak_cost_usd, self.offpeak_requests
        )

    @property
    def peak_cost_per_1m_tokens_usd(self):
        if self.missing_rates:
            return None
        return costmodel.cost_per_million_tokens_usd(self.peak_cost_usd, self.peak_tokens)

    @property
    def offpeak_cost_per_1m_tokens_usd(self):
        if self.missing_rates:
            return None
        return costmodel.cost_per_million_tokens_usd(self.offpeak_cost_usd, self.offpeak_tokens)


def peak_split(
    start: datetime,
    end: datetime,
    *,
    purpose=None,
    pool=None,
    cluster: str | None = None,
    scope: Scope = EVERYTHING,
) -> list[PeakSplitRow]:
    """Cost of measured hours and requests in each pool's peak and off-peak local hours,
        for the pools in ``scope`` that serve requests. Peak hours are the pool's own, else
        the hours whose mean requests are above the daily mean. Five queries with every pool in
    USD; with another currency, the month's rates and two per month of the span."""
    span = Span.of(start, end)
    pools = _serving_pools(span, scope, pool=pool, purpose=purpose, cluster=cluster)
    ids = [found.id for found in pools]
    zone_of_pool = {found.id: found.timezone or "UTC" for found in pools}
    pool_of_workload = dict(Workload.objects.filter(pool_id__in=ids).values_list("id", "pool_id"))
    currency_of_pool = {found.id: found.currency for found in pools}
    cost_by_hour, missing = _usd_cost_by_local_hour(span, ids, zone_of_pool, currency_of_pool)
    requests_by_hour = _requests_by_local_hour(span, pool_of_workload, zone_of_pool)
    rows = [
        _peak_split_row(found, span, cost_by_hour[found.id], requests_by_hour[found.id])
        for found in pools
    ]
    for row in rows:
        row.missing_rates = frozenset(missing.get(row.pool.id, ()))
    return rows


def _usd_cost_by_local_hour(span: Span, ids: list, zone_of_pool: dict, currency_of_pool: dict):
    """``_cost_by_local_hour`` in US dollars, and per pool the missing (currency, month).
    The costs are in each pool's currency: with every pool in USD, one sum; otherwise one
    per month of the span, each pool's converted at its month's rate (a month whose rate
    is missing is left out and named)."""
    if all(code == USD for code in currency_of_pool.values()):
        return _cost_by_local_hour(span, ids, zone_of_pool), {}
    rates = rates_of(set(currency_of_pool.values()), months_of(span))
    total: dict[int, dict[int, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    missing: dict[int, set] = defaultdict(set)
    for month in months_of(span):
        start = max(span.start, datetime(month.year, month.month, 1, tzinfo=UTC))
        following = date(month.year + month.month // 12, month.month % 12 + 1, 1)
        end = min(span.end, datetime(following.year, following.month, 1, tzinfo=UTC))
        for pool_id, by_hour in _cost_by_local_hour(Span(start, end), ids, zone_of_pool).items():
            currency = currency_of_pool[pool_id]
            rate = Decimal(1) if currency == USD else rates.get((currency, month))
            if rate is None:
                if any(by_hour.values()):
                    missing[pool_id].add((currency, month))
                continue
            for hour, cost in by_hour.items():
                total[pool_id][hour] += cost / rate
    return total, missing


def _serving_pools(span: Span, scope: Scope, *, pool, purpose, cluster=None) -> list[Pool]:
    """The pools in ``scope`` with a workload that logged requests in the span, by name:
    an index probe per workload on (workload, hour), not a join over every
    request-hour."""
    served = WorkloadHourlyRequests.objects.filter(
        workload=OuterRef("pk"), hour__gte=span.start, hour__lt=span.end
    )
    serving = Workload.objects.filter(pool=OuterRef("pk")).filter(Exists(served))
    pools = Pool.objects.select_related("gpu_model").filter(scope.team_filter(), Exists(serving))
    if pool is not None:
        pools = pools.filter(pk=pool.pk)
    if purpose:
        pools = pools.filter(purpose=purpose)
    if cluster:
        pools = pools.filter(cluster__slug=cluster)
    return list(pools.order_by("name"))


def _cost_by_local_hour(span: Span, ids: list, zone_of_pool: dict) -> dict[int, dict]:
    """Per pool: local hour → the cost of its measured hours as ``pool_usage_totals``
    sums it, each hour at the prices in force in it. Two queries."""
    periods = price_periods_of(ids)
    tdp_kw = F("pool__gpu_model__tdp_watts") / 1000.0
    cost_sums = {
        "cost": Coalesce(
            Sum(
                price_case("fixed_price_per_gpu_hour_usd", span, periods, hour_on_or_after)
                * F("capacity_gpu_hours")
                + price_case("price_per_gpu_kwh_usd", span, periods, hour_on_or_after)
                * Coalesce("energy_kwh", tdp_kw * F("busy_gpu_hours")),
                output_field=FloatField(),
            ),
            _ZERO,
        )
    }
    usage = PoolHourlyUsage.objects.filter(
        pool_id__in=ids, hour__gte=span.start, hour__lt=span.end, reporting_gpus__gt=0
    )
    cost_by_hour: dict[int, dict[int, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for pool_id, local_hour, row in sums_by_local_hour(
        usage, "pool_id", zone_of_pool, span, cost_sums
    ):
        # A sum per pool and local hour, read as the Decimal of its shortest repr.
        cost_by_hour[pool_id][local_hour] += as_decimal(row["cost"])
    return cost_by_hour


def _requests_by_local_hour(
    span: Span, pool_of_workload: dict, zone_of_pool: dict
) -> dict[int, dict[int, list[int]]]:
    """Per pool: local hour → [requests, tokens] its workloads logged. One query."""
    request_sums = {"total": Sum("requests"), "tokens": Sum(F("input_tokens") + F("output_tokens"))}
    requests = WorkloadHourlyRequests.objects.filter(
        workload_id__in=list(pool_of_workload), hour__gte=span.start, hour__lt=span.end
    )
    zone_of_workload = {workload: zone_of_pool[pool] for workload, pool in pool_of_workload.items()}
    requests_by_hour: dict[int, dict[int, list[int]]] = defaultdict(dict)
    for workload_id, local_hour, row in sums_by_local_hour(
        requests, "workload_id", zone_of_workload, span, request_sums
    ):
        totals = requests_by_hour[pool_of_workload[workload_id]].setdefault(local_hour, [0, 0])
        totals[0] += row["total"] or 0
        totals[1] += row["tokens"] or 0
    return requests_by_hour


def _peak_split_row(pool: Pool, span: Span, cost_by_hour: dict, per_hour: dict) -> PeakSplitRow:
    """The pool's row: its peak hours (its own, else those whose mean requests are above
    the daily mean) and each local hour's cost, requests and tokens on its side."""
    if pool.peak_hours:
        peak, configured = parse_hour_ranges(pool.peak_hours), True
    else:
        occurrences = local_hour_counts(span, ZoneInfo(pool.timezone or "UTC"))
        mean = [
            (per_hour.get(hour, [0, 0])[0] / occurrences[hour]) if occurrences[hour] else None
            for hour in range(24)
        ]
        peak, configured = costmodel.peak_hours_above_mean(mean), False
    row = PeakSplitRow(pool=pool, peak_hours=peak, peak_hours_configured=configured)
    for hour in range(24):
        cost = cost_by_hour.get(hour, Decimal(0))
        requests, tokens = per_hour.get(hour, [0, 0])
        if hour in peak:
            row.peak_cost_usd += cost
            row.peak_requests += requests
            row.peak_tokens += tokens
        else:
            row.offpeak_cost_usd += cost
            row.offpeak_requests += requests
            row.offpeak_tokens += tokens
    return row


def describe_hours(hours) -> str:
    """{8, 9, 10, 20} → "8–10, 20" (hours of the day, both ends included)."""
    ordered = sorted(hours)
    if not ordered:
        return "none"
    parts, first, previous = [], ordered[0], ordered[0]
    for hour in [*ordered[1:], None]:
        if hour is not None and hour == previous + 1:
            previous = hour
            continue
        parts.append(f"{first}" if first == previous else f"{first}–{previous}")
        if hour is not None:
            first = previous = hour
    return ", ".join(parts)
