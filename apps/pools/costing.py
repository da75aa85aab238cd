"""Effective price of one GPU-hour in a pool, with its breakdown (framework-free).

Cloud pools pay the provider's on-demand or reserved price. Owned pools (bare-metal,
on-premises) pay, per GPU-hour (FORMULAS.md, "Cost of owned GPUs per hour"):

    purchase price ÷ amortisation hours
  + power kW × PUE × price per kWh
  + (operations + colocation per month) ÷ 730 h ÷ GPUs

Power is taken at TDP here, an upper bound: the cost reports replace it with measured
energy (dcgm ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``) or TDP × utilisation when
telemetry exists. 730 h is the mean month (8,760 h ÷ 12).

Money in, money out: prices given as ``Decimal`` (a pool's stored prices) give
``Decimal`` lines at full precision, the other inputs read exactly through their decimal
text (apps/core/money.py); prices given as floats (a procurement scenario's, in its own
currency) give floats. Rounding is left to where a price is stored or shown.
"""

from dataclasses import dataclass
from decimal import Decimal

from apps.core.money import as_decimal
from apps.core.sentences import gettext_noop, sentence

HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class PriceLine:
    label: str
    usd_per_gpu_hour: float | Decimal
    formula: str  # the inputs, written out so a person can check the line by hand


@dataclass(frozen=True)
class PriceBreakdown:
    lines: tuple[PriceLine, ...]

    @property
    def usd_per_gpu_hour(self) -> float | Decimal:
        return sum(line.usd_per_gpu_hour for line in self.lines)


def cloud_price_breakdown(
    *, price_per_gpu_hour_usd: float | Decimal, label: str, sign: str = "$"
) -> PriceBreakdown:
    """``sign``: the prefix of the pool's currency in the formulas ("$", "CN¥", "CHF ");
    the amounts are in that currency whatever the names' ``_usd`` say."""
    if price_per_gpu_hour_usd < 0:
        raise ValueError("price_per_gpu_hour_usd must not be negative")
    return PriceBreakdown(
        (
            PriceLine(
                label,
                price_per_gpu_hour_usd,
                sentence(
                    gettext_noop("%(price)s per GPU-hour"),
                    price=f"{sign}{price_per_gpu_hour_usd:,.4f}",
                ),
            ),
        )
    )


def owned_price_breakdown(
    *,
    purchase_price_per_gpu_usd: float,
    amortisation_months: int,
    tdp_watts: float,
    pue: float,
    power_price_per_kwh_usd: float,
    operations_per_month_usd: float,
    colocation_per_month_usd: float,
    gpu_count: int,
    sign: str = "$",
) -> PriceBreakdown:
    """Amortised purchase + power at TDP × PUE + operations and colocation, per GPU-hour."""
    if amortisation_months <= 0:
        raise ValueError("amortisation_months must be positive")
    if gpu_count <= 0:
        raise ValueError("gpu_count must be positive")
    if pue < 1:
        raise ValueError("pue must be at least 1.0 (facility power ÷ IT power)")
    for name, value in (
        ("purchase_price_per_gpu_usd", purchase_price_per_gpu_usd),
        ("tdp_watts", tdp_watts),
        ("power_price_per_kwh_usd", power_price_per_kwh_usd),
        ("operations_per_month_usd", operations_per_month_usd),
        ("colocation_per_month_usd", colocation_per_month_usd),
    ):
        if value < 0:
            raise ValueError(f"{name} must not be negative")
    amortisation_hours = amortisation_months * HOURS_PER_MONTH
    if isinstance(purchase_price_per_gpu_usd, Decimal):
        amortisation = purchase_price_per_gpu_usd / amortisation_hours
        power = as_decimal(tdp_watts) / 1000 * as_decimal(pue) * as_decimal(power_price_per_kwh_usd)
        fixed_monthly = as_decimal(operations_per_month_usd) + as_decimal(colocation_per_month_usd)
    else:
        amortisation = purchase_price_per_gpu_usd / amortisation_hours
        power = tdp_watts / 1000 * pue * power_price_per_kwh_usd
        fixed_monthly = operations_per_month_usd + colocation_per_month_usd
    operations = fixed_monthly / HOURS_PER_MONTH / gpu_count
    return PriceBreakdown(
        (
            PriceLine(
                sentence(gettext_noop("Amortised purchase")),
                amortisation,
                sentence(
                    gettext_noop("%(price)s ÷ (%(months)s months × %(hours)s h)"),
                    price=f"{sign}{purchase_price_per_gpu_usd:,.0f}",
                    months=amortisation_months,
                    hours=HOURS_PER_MONTH,
                ),
            ),
            PriceLine(
                sentence(gettext_noop("Power at TDP")),
                power,
                f"{tdp_watts:,.0f} W × PUE {pue:.2f} × {sign}{power_price_per_kwh_usd:.4f}/kWh",
            ),
            PriceLine(
                sentence(gettext_noop("Operations and colocation")),
                operations,
                sentence(
                    gettext_noop(
                        "(%(operations)s + %(colocation)s) per month ÷ %(hours)s h ÷ %(gpus)s GPUs"
                    ),
                    operations=f"{sign}{operations_per_month_usd:,.0f}",
                    colocation=f"{sign}{colocation_per_month_usd:,.0f}",
                    hours=HOURS_PER_MONTH,
                    gpus=gpu_count,
                ),
            ),
        )
    )
