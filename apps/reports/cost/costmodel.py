"""What GPU hours cost, how much of it is idle, and what a request or a training hour
costs (framework-free; FORMULAS.md "Cost of owned GPUs per hour").

Per pool and hour:

- **Cloud** pools pay the provider's on-demand or reserved price for every GPU, busy or
  not: cost = capacity GPUs × price per GPU-hour.
- **Owned** pools (bare-metal, on-premises) pay the amortised purchase, operations and
  colocation for every GPU, plus power at the facility (× PUE) and the power price.
  Power is the measured energy where the telemetry has it (dcgm
  ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``, FORMULAS.md: "measured energy beats TDP ×
  utilisation"), else TDP × utilisation, i.e. TDP × busy GPU-hours; in an hour with no
  telemetry at all, TDP × capacity, the upper bound the pool's effective price uses.

Idle cost = cost × (1 − busy GPU-hours ÷ capacity GPU-hours) over the hours that have
telemetry. Hours without telemetry are *unmeasured*: their cost is counted and shown
apart, never as idle or busy.

Training: effective GPU-hours = busy GPU-hours − GPU-hours lost to interruptions (the work
since the last checkpoint plus the restart, Young 1974; see ``Interruption.lost_minutes``).
Inference: cost per 1,000 requests and per 1 M tokens.

The per-hour sums run in SQL (apps/reports/cost/pool_usage.py) over the pool's stored price split
(``Pool.fixed_price_per_gpu_hour_usd``, ``Pool.price_per_gpu_kwh_usd``); this module holds
the formulas applied to those sums.

Money in, money out: an amount given as ``Decimal`` gives a ``Decimal`` at full precision,
the hours it is divided or multiplied by read exactly through their decimal text
(apps/core/money.py); an amount given as a float gives a float, for the float sums the
report still carries. Rounding is left to where a figure is shown.
"""

from collections.abc import Sequence
from decimal import Decimal

from apps.core.money import as_decimal

Number = float | int | Decimal


def idle_cost_usd(cost_usd: Number, busy_gpu_hours: Number, capacity_gpu_hours: Number):
    """cost × (1 − busy ÷ capacity); 0 when there is no measured capacity."""
    if isinstance(cost_usd, Decimal):
        if capacity_gpu_hours <= 0:
            return Decimal(0)
        busy, capacity = as_decimal(busy_gpu_hours), as_decimal(capacity_gpu_hours)
        return cost_usd * max(Decimal(0), 1 - busy / capacity)
    if capacity_gpu_hours <= 0:
        return 0.0
    idle_share = max(0.0, 1.0 - busy_gpu_hours / capacity_gpu_hours)
    return cost_usd * idle_share


def ratio_or_none(numerator: Number | None, denominator: Number | None, scale: Number = 1.0):
    """numerator ÷ denominator × scale, or None where it is undefined (never an error); a
    Decimal numerator (money) gives a Decimal."""
    if numerator is None or not denominator:
        return None
    if isinstance(numerator, Decimal):
        return numerator / as_decimal(denominator) * as_decimal(scale)
    return numerator / denominator * scale


def cost_per_thousand_requests_usd(cost_usd: Number, requests: int):
    return ratio_or_none(cost_usd, requests, 1_000)


def cost_per_million_tokens_usd(cost_usd: Number, tokens: int):
    return ratio_or_none(cost_usd, tokens, 1_000_000)


def effective_training_gpu_hours(busy_gpu_hours: float, lost_gpu_hours: float) -> float:
    """Busy GPU-hours that moved training forward (never below zero)."""
    return max(0.0, busy_gpu_hours - lost_gpu_hours)


def peak_hours_above_mean(mean_demand_by_hour: Sequence[float | None]) -> frozenset[int]:
    """The default peak hours: the hours of the day whose mean demand is above the
    daily mean (hours with no data are left out of both)."""
    known = [(hour, value) for hour, value in enumerate(mean_demand_by_hour) if value is not None]
    if not known:
        return frozenset()
    daily_mean = sum(value for _, value in known) / len(known)
    return frozenset(hour for hour, value in known if value > daily_mean)
