"""Lendable off-peak capacity of inference pools: the GPU-hours a week that the measured
demand leaves free with a safety margin, what they are worth at the pool's price, and
when they occur (e.g. "could lend 212 GPU-hours a week to preemptible fine-tuning, worth
$528").

Definition, per inference pool:
- The window is the last ``WINDOW_DAYS`` (28) days of complete UTC hours, up to the
  start of the current hour; each hour falls in one of 168 *slots*, its local ISO
  weekday × hour of the day in the pool's time zone.
- An observation is a measured pool-hour, as the cost report counts them: an hourly
  rollup with telemetry (``reporting_gpus`` > 0) inside the pool's service period. Its
  busy GPUs are its busy GPU-hours (Σ of the GPUs' busy shares, apps/telemetry/rollups/hourly.py)
  over its one hour, plus the GPUs it did not measure (the pool's GPUs − its measured
  GPU-hours, never below 0): a GPU that does not report may be busy, so it is never lent.
- Per slot: p95 busy GPUs = the 95th percentile (linear interpolation between closest
  ranks, PostgreSQL's ``percentile_cont``) of its observations' busy GPUs.
- Safety margin = ⌈GPUs × ``LENDING_SAFETY_MARGIN_PCT`` ÷ 100⌉ (10 % by default), never
  below 0.
- Free GPUs in a slot = max(0, ⌊GPUs − p95 busy GPUs − margin⌋): whole GPUs, since half a
  GPU cannot be lent.
- A slot with fewer than ``MIN_OBSERVATIONS`` (2) observations (a new pool, missing
  telemetry) is not lendable; such slots are counted (``slots_without_data``).
- Lendable GPU-hours per week = Σ over the slots of free GPUs × 1 h (each slot occurs
  once a week).
- Value per week (USD) = lendable GPU-hours × the pool's effective price per GPU-hour,
  converted from the pool's currency at the rate of the window's last month (no value,
  and the missing rate named, without it).
- Windows: the runs of consecutive lendable slots within one local weekday, each with the
  GPUs free through all of it (the run's least) and its GPU-hours; the largest window
  has the most GPU-hours.

The percentiles are computed in SQL, one query per time zone among the pools asked for.
"""

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from functools import cached_property
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count, ExpressionWrapper, F, FloatField, Value
from django.db.models.functions import Cast, Greatest

from apps.accounts.scope import EVERYTHING, Scope
from apps.currencies.rates import (
    UsdPrice,
    UsdRates,
    missing_rate_data,
    usd_price,
    usd_rates_at,
)
from apps.pools.hours import floor_hour
from apps.pools.models import Pool, Purpose
from apps.reports.charts import WEEKDAYS
from apps.reports.span import Span
from apps.reports.usage.clock import local_hour_expression, local_weekday_expression
from apps.reports.usage.curves import PercentileCont
from apps.telemetry.models import PoolHourlyUsage
from apps.telemetry.rollups.days import in_service_q

WINDOW_DAYS = 28
MIN_OBSERVATIONS = 2
SLOTS_PER_WEEK = 7 * 24
WEEKDAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
# percentile_cont's interpolation leaves binary noise (13.999999999 for 14): a free count
# this close below a whole GPU is that whole GPU.
_WHOLE_GPU_TOLERANCE = 1e-9


# --- the arithmetic (plain numbers) ------------------------------------------------------


def safety_margin_gpus(gpu_count: int, margin_pct: int | None = None) -> int:
    """⌈GPUs × margin % ÷ 100⌉ in integers (10 % of 30 GPUs is 3, not 4), never below 0."""
    if margin_pct is None:
        margin_pct = settings.LENDING_SAFETY_MARGIN_PCT
    return max(0, -(-gpu_count * margin_pct // 100))


def free_gpus(gpu_count: int, p95_busy_gpus: float, margin_gpus: int) -> int:
    """max(0, ⌊GPUs − p95 busy GPUs − margin⌋)."""
    return max(0, math.floor(gpu_count - p95_busy_gpus - margin_gpus + _WHOLE_GPU_TOLERANCE))


@dataclass(frozen=True)
class Window:
    """Consecutive lendable local hours [start_hour, end_hour) of one ISO weekday."""

    weekday: int  # 1 = Monday
    start_hour: int
    end_hour: int  # exclusive: 24 is midnight at the day's end
    gpus: int  # free through every hour of the window
    gpu_hours: int  # Σ of each hour's free GPUs

    @property
    def hours(self) -> int:
        return self.end_hour - self.start_hour

    @property
    def weekday_name(self) -> str:
        return WEEKDAY_NAMES[self.weekday - 1]

    @property
    def label(self) -> str:
        """ "Mon 01:00–07:00"; the zone is the pool's."""
        return f"{self.weekday_name} {self.start_hour:02d}:00–{self.end_hour:02d}:00"

    @property
    def local_label(self) -> str:
        """``label`` with the weekday in the active language, for the pages."""
        weekday = WEEKDAYS[self.weekday - 1]
        return f"{weekday} {self.start_hour:02d}:00–{self.end_hour:02d}:00"

    def as_dict(self) -> dict:
        return {
            "weekday": self.weekday,
            "weekday_name": self.weekday_name,
            "start_hour": self.start_hour,
            "end_hour": self.end_hour,
            "hours": self.hours,
            "gpus": self.gpus,
            "gpu_hours": self.gpu_hours,
            "label": self.label,
        }


def lendable_windows(free_grid: list[list[int | None]]) -> list[Window]:
    """The runs of slots with at least one free GPU, weekday by weekday (a run stops at
    midnight). ``free_grid[weekday - 1][hour]``: free GPUs, None without enough data."""
    windows = []
    for weekday, hours in enumerate(free_grid, start=1):
        start = None
        for hour in range(25):
            free = hours[hour] if hour < 24 else None
            if free:
                if start is None:
                    start = hour
                continue
            if start is not None:
                run = hours[start:hour]
                windows.append(Window(weekday, start, hour, min(run), sum(run)))
                start = None
    return windows


@dataclass
class Lendable:
    """One inference pool's lendable off-peak capacity over ``[start, end)``."""

    pool: Pool
    start: datetime
    end: datetime
    margin_pct: int
    margin_gpus: int
    # [weekday - 1][local hour]; None where the slot has too few observations.
    p95_busy_gpus: list[list[float | None]] = field(default_factory=list)
    free_gpus: list[list[int | None]] = field(default_factory=list)
    observations: list[list[int]] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    # The exchange rates of the window's last month, read once for every pool.
    rates: UsdRates | None = None

    @property
    def zone_name(self) -> str:
        return self.pool.timezone or "UTC"

    @cached_property
    def price(self) -> UsdPrice:
        """The pool's price in US dollars at the rate of the window's last month."""
        return usd_price(self.pool, self.end - ONE_SECOND, self.rates)

    @property
    def price_per_gpu_hour_usd(self) -> Decimal | None:
        return self.price.usd

    @property
    def missing_rate(self) -> tuple | None:
        return self.price.missing

    @property
    def slots_without_data(self) -> int:
        return sum(free is None for row in self.free_gpus for free in row)

    @property
    def has_data(self) -> bool:
        return self.slots_without_data < SLOTS_PER_WEEK

    @property
    def lendable_gpu_hours_per_week(self) -> int:
        return sum(free or 0 for row in self.free_gpus for free in row)

    @property
    def value_usd_per_week(self) -> Decimal | None:
        """None when the pool's exchange rate is missing (never its price read as USD)."""
        if self.price_per_gpu_hour_usd is None:
            return None
        return self.lendable_gpu_hours_per_week * self.price_per_gpu_hour_usd

    @property
    def largest_window(self) -> Window | None:
        # The first of equals (Monday first, then earlier hours).
        return max(self.windows, key=lambda window: window.gpu_hours, default=None)

    def as_dict(self) -> dict:
        largest = self.largest_window
        return {
            "pool": self.pool.slug,
            "name": self.pool.name,
            "time_zone": self.zone_name,
            "start": self.start,
            "end": self.end,
            "gpu_count": self.pool.gpu_count,
            "safety_margin_pct": self.margin_pct,
            "safety_margin_gpus": self.margin_gpus,
            "price_per_gpu_hour_usd": self.price_per_gpu_hour_usd,
            "missing_exchange_rate": missing_rate_data(self.missing_rate),
            "lendable_gpu_hours_per_week": self.lendable_gpu_hours_per_week,
            "value_usd_per_week": self.value_usd_per_week,
            "slots_without_data": self.slots_without_data,
            "windows": [window.as_dict() for window in self.windows],
            "largest_window": largest.as_dict() if largest else None,
            "free_gpus": self.free_gpus,
            "p95_busy_gpus": self.p95_busy_gpus,
        }


ONE_SECOND = timedelta(seconds=1)


def _empty_grid(value):
    return [[value] * 24 for _ in range(7)]


def build_lendable(
    pool: Pool, span: Span, slots: dict, margin_pct: int, rates: UsdRates | None = None
) -> Lendable:
    """A pool's figures from its slots' ``(weekday, hour) → (observations, p95 busy)``."""
    margin = safety_margin_gpus(pool.gpu_count, margin_pct)
    result = Lendable(
        rates=rates,
        pool=pool,
        start=span.start,
        end=span.end,
        margin_pct=margin_pct,
        margin_gpus=margin,
        p95_busy_gpus=_empty_grid(None),
        free_gpus=_empty_grid(None),
        observations=_empty_grid(0),
    )
    for (weekday, hour), (observations, p95) in slots.items():
        result.observations[weekday - 1][hour] = observations
        if observations < MIN_OBSERVATIONS:
            continue
        result.p95_busy_gpus[weekday - 1][hour] = p95
        result.free_gpus[weekday - 1][hour] = free_gpus(pool.gpu_count, p95, margin)
    result.windows = lendable_windows(result.free_gpus)
    return result


# --- the query ---------------------------------------------------------------------------


def lending_span(now: datetime) -> Span:
    """The last ``WINDOW_DAYS`` days of complete hours before ``now``'s hour."""
    end = floor_hour(now)
    return Span.of(end - timedelta(days=WINDOW_DAYS), end)


# An hour's busy GPUs, counting every GPU of the pool it did not measure as busy.
DEMAND_GPUS = ExpressionWrapper(
    F("busy_gpu_hours")
    + Greatest(Cast(F("pool__gpu_count"), FloatField()) - F("capacity_gpu_hours"), Value(0.0)),
    output_field=FloatField(),
)


def _slots_by_pool(pools: list[Pool], span: Span) -> dict[int, dict]:
    """Per pool id: ``(weekday, local hour) → (observations, p95 busy GPUs)``. One query
    per time zone among ``pools``, the percentile taken over ``DEMAND_GPUS`` itself rather
    than over an annotation that ``values()`` would leave out of the select."""
    zones = defaultdict(list)
    for pool in pools:
        zones[pool.timezone or "UTC"].append(pool.id)
    table = PoolHourlyUsage._meta.db_table
    slots: dict[int, dict] = defaultdict(dict)
    for zone_name, ids in zones.items():
        zone = ZoneInfo(zone_name)
        rows = (
            PoolHourlyUsage.objects.filter(
                in_service_q(),
                pool_id__in=ids,
                hour__gte=span.start,
                hour__lt=span.end,
                reporting_gpus__gt=0,
            )
            .annotate(
                weekday=local_weekday_expression(table, span, zone),
                local_hour=local_hour_expression(table, span, zone),
            )
            .values("pool_id", "weekday", "local_hour")
            .annotate(observations=Count("id"), p95=PercentileCont(DEMAND_GPUS, 0.95))
        )
        for row in rows:
            key = (row["weekday"], row["local_hour"])
            slots[row["pool_id"]][key] = (row["observations"], row["p95"])
    return slots


def inference_pools(scope: Scope = EVERYTHING, at: datetime | None = None):
    """The inference pools in ``scope`` in service at ``at``, by name."""
    pools = Pool.objects.in_scope(scope).filter(purpose=Purpose.INFERENCE)
    if at is not None:
        pools = pools.in_service(at)
    return pools.select_related("gpu_model").order_by("name")


def lendable_capacity(pools, now: datetime, margin_pct: int | None = None) -> list[Lendable]:
    """Every pool's lendable capacity over the ``WINDOW_DAYS`` before ``now``, in order."""
    if margin_pct is None:
        margin_pct = settings.LENDING_SAFETY_MARGIN_PCT
    pools = list(pools)
    span = lending_span(now)
    slots = _slots_by_pool(pools, span)
    rates = usd_rates_at({pool.currency for pool in pools}, span.end - ONE_SECOND)
    return [build_lendable(pool, span, slots.get(pool.id, {}), margin_pct, rates) for pool in pools]


def pool_lendable(pool: Pool, now: datetime) -> Lendable:
    return lendable_capacity([pool], now)[0]


@dataclass
class FleetLendable:
    rows: list[Lendable]

    @property
    def lendable_gpu_hours_per_week(self) -> int:
        return sum(row.lendable_gpu_hours_per_week for row in self.rows)

    @property
    def value_usd_per_week(self) -> Decimal:
        """The pools whose price converts; ``missing_rates`` names the rates the others
        need."""
        return sum(
            (row.value_usd_per_week for row in self.rows if row.value_usd_per_week is not None),
            Decimal(0),
        )

    @property
    def missing_rates(self) -> list[tuple]:
        return sorted({row.missing_rate for row in self.rows if row.missing_rate is not None})

    @property
    def gpu_count(self) -> int:
        return sum(row.pool.gpu_count for row in self.rows)


def fleet_lendable(now: datetime, scope: Scope = EVERYTHING) -> FleetLendable:
    """Every inference pool in ``scope`` in service now."""
    return FleetLendable(lendable_capacity(inference_pools(scope, now), now))
