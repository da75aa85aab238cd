"""Goodput's dollars for a workload on a pool priced in yuan: GPU-hours × the pool's price
converted to USD at the month's rate (apps/currencies/rates.py), never read as dollars.

Hand computation: 8 GPUs, one job whose events span 10 h, at 21.50 CNY per GPU-hour and
7.10 CNY per USD: 8 × 10 × 21.50 ÷ 7.10 = 1,720 ÷ 7.10 = 242.2535… → 242.25 USD."""

from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.currencies.rates import month_of
from apps.training import services
from apps.training.models import EventType, TrainingEvent
from tests.currencies.test_currencies import _rate
from tests.factories import PoolFactory, WorkloadFactory

CNY_PRICE = Decimal("21.50")
RATE = Decimal("7.10")


@pytest.fixture
def workload():
    pool = PoolFactory(name="Shanghai", currency="CNY", on_demand_price_per_gpu_hour_usd=CNY_PRICE)
    workload = WorkloadFactory(name="Run", slug="run", pool=pool, gpu_count=8, status="running")
    start = timezone.now().replace(microsecond=0) - timedelta(hours=12)
    TrainingEvent.objects.bulk_create(
        TrainingEvent(workload=workload, job_name="job", event_type=kind, timestamp=at, step=step)
        for kind, at, step in [
            (EventType.JOB_STARTED, start, None),
            (EventType.CHECKPOINT_LOADED, start, 0),
            (EventType.CHECKPOINT_SAVED, start + timedelta(hours=10), 1000),
        ]
    )
    return workload


@pytest.mark.django_db
def test_goodputs_dollars_are_the_yuan_divided_by_the_months_rate(workload, client, make_user):
    _rate(month_of(timezone.now()), "CNY", RATE)
    total = services.workload_goodput(workload).total
    assert total.total_seconds == 10 * 3600
    expected = (8 * 10 * CNY_PRICE / RATE).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    assert expected == Decimal("242.25")
    usd = Decimal(str(total.usd(total.total_seconds)))
    assert usd.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) == expected

    client.force_login(make_user("ops"))
    data = client.get(f"/api/v1/workloads/{workload.slug}/goodput/").json()
    # The API gives the dollars to four decimals (as for a USD pool); to the cent:
    assert Decimal(str(data["usd"])).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) == expected
    assert data["missing_exchange_rate"] is None


@pytest.mark.django_db
def test_without_the_months_rate_goodput_has_no_dollars_and_names_the_rate(
    workload, client, make_user
):
    total = services.workload_goodput(workload).total
    assert total.usd(total.total_seconds) is None
    month = f"{timezone.now():%Y-%m}"

    client.force_login(make_user("ops"))
    data = client.get(f"/api/v1/workloads/{workload.slug}/goodput/").json()
    assert data["usd"] is None and data["total"]["usd"] is None
    assert data["missing_exchange_rate"] == {"currency": "CNY", "month": month}
    page = client.get(reverse("training:workload_panel", kwargs={"slug": workload.slug}))
    body = page.content.decode()
    assert f"no CNY exchange rate for {month}" in body
    # 8 × 10 × 21.50 = 1,720 yuan, never shown as dollars.
    assert "$1,720.00" not in body
