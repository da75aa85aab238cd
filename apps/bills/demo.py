"""A month's FOCUS bill for a demo cloud pool, as its provider would send it: one line per
node and day at the price the provider billed, which differs from the typed price by
``billed_price_per_gpu_hour_usd`` (a price change nobody typed), and a mapping rule that
gives the lines to the pool. The demo seed calls ``write_demo_bill`` and ``demo_rule``."""

import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from apps.bills.models import Bill, MappingRule
from apps.core.exports import CsvFile
from apps.core.money import to_cents
from apps.pools.models import Pool
from apps.reports.cost.prices import in_force_at, pool_full_price, price_periods_of
from apps.reports.span import ONE_HOUR

HEADER = (
    "BillingAccountId",
    "SubAccountId",
    "ServiceProviderName",
    "InvoiceIssuerName",
    "PublisherName",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeDescription",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceName",
    "ServiceCategory",
    "RegionId",
    "SkuId",
    "SkuPriceId",
    "ConsumedQuantity",
    "ConsumedUnit",
    "PricingQuantity",
    "PricingUnit",
    "ListCost",
    "ContractedCost",
    "EffectiveCost",
    "BilledCost",
    "Tags",
)
# The extra the demo provider bills per GPU-hour over the typed price.
PRICE_DRIFT_USD = Decimal("0.10")


def resource_prefix(pool: Pool) -> str:
    return f"demo://{pool.slug}/node-"


def demo_rule(pool: Pool, *, priority: int = 100) -> MappingRule:
    """The rule that maps the demo bill's lines to ``pool`` (by ResourceId glob)."""
    rule, _created = MappingRule.objects.get_or_create(
        kind=MappingRule.Kind.RESOURCE_ID,
        value=f"{resource_prefix(pool)}*",
        defaults={"pool": pool, "priority": priority},
    )
    return rule


def demo_bill_text(
    pool: Pool, month: date, *, billed_price_per_gpu_hour_usd: Decimal | None = None
) -> str:
    """The FOCUS 1.3 CSV of ``pool``'s ``month`` (its first day): a line per node and UTC
    day, the node's GPUs × 24 h × the billed price, rounded to the cent."""
    periods = price_periods_of([pool.id]).get(pool.id, [])

    def price_at(hour: datetime) -> Decimal:
        """The billed price of ``hour``: the typed price in force then, plus the drift."""
        if billed_price_per_gpu_hour_usd is not None:
            return billed_price_per_gpu_hour_usd
        typed = pool_full_price(in_force_at(periods, hour) or pool, pool.gpu_model.tdp_watts)
        return typed + PRICE_DRIFT_USD

    start = datetime(month.year, month.month, 1, tzinfo=UTC)
    end = datetime(month.year + month.month // 12, month.month % 12 + 1, 1, tzinfo=UTC)
    # The provider bills the hours the pool was in service: its first day from then on.
    in_service_from = pool.in_service_from or start
    nodes = max(1, pool.gpu_count // max(1, pool.gpus_per_node))
    gpus_per_node = pool.gpu_count // nodes
    provider = pool.provider or "Demo Cloud"
    # Written by the house's CSV rules (apps/core/exports.py), as every file gpufleet writes.
    out = CsvFile()
    out.row(HEADER)
    day = start
    while day < end:
        served_hours = Decimal(
            (min(day + timedelta(days=1), end) - max(day, in_service_from)) / timedelta(hours=1)
        )
        if served_hours <= 0:
            day += timedelta(days=1)
            continue
        served_from = max(day, in_service_from)
        day_price_sum = sum(
            (price_at(served_from + step * ONE_HOUR) for step in range(int(served_hours))),
            Decimal(0),
        )
        fraction = served_hours - int(served_hours)
        if fraction:
            day_price_sum += fraction * price_at(served_from + int(served_hours) * ONE_HOUR)
        for node in range(nodes):
            hours = gpus_per_node * served_hours
            cost = to_cents(gpus_per_node * day_price_sum)
            out.row(
                [
                    "demo-billing-account",
                    f"demo-{pool.slug}",
                    provider,
                    provider,
                    provider,
                    "USD",
                    f"{start:%Y-%m-%dT%H:%M:%SZ}",
                    f"{end:%Y-%m-%dT%H:%M:%SZ}",
                    f"{day:%Y-%m-%dT%H:%M:%SZ}",
                    f"{day + timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}",
                    "Usage",
                    f"{gpus_per_node} x {pool.gpu_model.name} GPU instance, {served_hours} h",
                    f"{resource_prefix(pool)}{node}",
                    f"{pool.slug}-node-{node}",
                    "GPU instance",
                    "GPU Cloud",
                    "Compute",
                    pool.region or "NULL",
                    f"gpu_{gpus_per_node}x_{pool.gpu_model.slug}",
                    f"gpu_{gpus_per_node}x_{pool.gpu_model.slug}-on-demand",
                    hours,
                    "GPU-hours",
                    hours,
                    "GPU-hours",
                    cost,
                    cost,
                    cost,
                    cost,
                    f'{{"gpufleet-pool": "{pool.slug}"}}',
                ]
            )
        day += timedelta(days=1)
    return out.text()


def seed_bills_demo(pool: Pool | None, month: date | None):
    """The demo's bill: ``pool``'s ``month`` as its provider billed it, imported with the
    rule that maps it, so the reconciliation shows the drift. Seeding again imports the
    same file, which adds nothing."""
    from apps.bills.importer import import_bill

    if pool is None or month is None:
        return None
    demo_rule(pool)
    text = demo_bill_text(pool, month)
    return import_bill(
        io.BytesIO(text.encode()),
        filename=f"{pool.slug}-{month:%Y-%m}.focus.csv",
        source=Bill.Source.COMMAND,
    ).bill


def write_demo_bill(path, pool: Pool, month: date, **options) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(demo_bill_text(pool, month, **options))
