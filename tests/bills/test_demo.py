"""The demo bill of a cloud pool imports and shows its drift from the typed price on the
reconciliation: billed = GPUs × the month's hours × (typed price + the drift)."""

import io
from datetime import date
from decimal import Decimal

import pytest

from apps.bills import demo, importer, reconciliation
from apps.bills.models import Bill

pytestmark = pytest.mark.django_db


def test_demo_bill_reconciles_to_the_drift(pool):
    month = date(2024, 2, 1)  # 29 days
    demo.demo_rule(pool)
    text = demo.demo_bill_text(pool, month)
    bill = importer.import_bill(
        io.BytesIO(text.encode()), filename="demo.csv", source=Bill.Source.COMMAND
    ).bill
    nodes = pool.gpu_count // pool.gpus_per_node
    assert bill.rows == 29 * nodes and bill.focus_version == "1.3"
    hours = pool.gpu_count * 29 * 24
    billed = hours * (pool.on_demand_price_per_gpu_hour_usd + demo.PRICE_DRIFT_USD)
    (row,) = reconciliation.reconcile(month).rows
    assert row.billed == billed
    assert row.difference.quantize(Decimal("0.01")) == hours * demo.PRICE_DRIFT_USD


def test_a_pool_in_service_from_mid_month_is_billed_from_then(pool):
    """In service from the 10th at 18:00: 6 h that day, then 19 whole days of February
    2024 (29 days): (6 + 19 × 24) h × the pool's GPUs."""
    from datetime import UTC, datetime

    pool.in_service_from = datetime(2024, 2, 10, 18, tzinfo=UTC)
    pool.save(update_fields=["in_service_from"])
    bill = demo.seed_bills_demo(pool, date(2024, 2, 1))
    hours = pool.gpu_count * (6 + 19 * 24)
    price = pool.on_demand_price_per_gpu_hour_usd + demo.PRICE_DRIFT_USD
    assert bill.billed_cost == hours * price
    assert demo.seed_bills_demo(pool, date(2024, 2, 1)) == bill  # seeding again adds nothing
    assert Bill.objects.count() == 1


def test_a_price_cut_in_the_month_is_billed_hour_by_hour_with_the_drift(pool):
    """$2.99 until the 15th at 12:00, then $2.49: the bill differs from the computed month
    by the drift alone, GPUs × 29 × 24 h × $0.10."""
    from datetime import UTC, datetime

    from apps.pools.prices import record_prices

    pool.in_service_from = datetime(2024, 1, 1, tzinfo=UTC)
    pool.save(update_fields=["in_service_from"])
    pool.on_demand_price_per_gpu_hour_usd = Decimal("2.49")
    record_prices(pool, datetime(2024, 2, 15, 12, tzinfo=UTC))
    month = date(2024, 2, 1)
    demo.seed_bills_demo(pool, month)
    hours = pool.gpu_count * 29 * 24
    (row,) = reconciliation.reconcile(month).rows
    assert row.billed == pool.gpu_count * (
        (14 * 24 + 12) * Decimal("3.09") + (14 * 24 + 12) * Decimal("2.59")
    )
    assert row.difference.quantize(Decimal("0.01")) == hours * demo.PRICE_DRIFT_USD
