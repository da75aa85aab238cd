"""Dollars at risk of a workload on a pool priced in yuan: the price converted to USD at
the month's rate (apps/currencies/rates.py), never read as dollars.

Hand computation: 8 GPUs of a pool at 21.50 CNY per GPU-hour, nothing proven, the first
training event 10 h ago; at 7.10 CNY per USD: 8 × 21.50 × 10 ÷ 7.10 = 1,720 ÷ 7.10 =
242.2535… → 242.25 USD. Without the month's rate there is no figure and the rate is
named (8 × 21.50 × 10 = 1,720 read as dollars, or ÷ 1, would be wrong)."""

from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from apps.backups import at_risk
from apps.currencies.rates import month_of
from apps.pools.models import Workload
from apps.training.models import EventType, TrainingEvent
from tests.currencies.test_currencies import _rate
from tests.factories import PoolFactory, WorkloadFactory

CNY_PRICE = Decimal("21.50")
RATE = Decimal("7.10")


def _workload(slug="shanghai-run"):
    pool = PoolFactory(
        name=f"Pool {slug}", currency="CNY", on_demand_price_per_gpu_hour_usd=CNY_PRICE
    )
    workload = WorkloadFactory(name=slug, slug=slug, pool=pool, gpu_count=8, status="running")
    now = timezone.now().replace(microsecond=0)
    TrainingEvent.objects.create(
        workload=workload,
        job_name="run-1",
        event_type=EventType.JOB_STARTED,
        timestamp=now - timedelta(hours=10),
    )
    return workload, now


def _expected():
    return (8 * CNY_PRICE * 10 / RATE).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


@pytest.mark.django_db
def test_a_cny_pools_dollars_at_risk_are_its_yuan_divided_by_the_months_rate(client, make_user):
    workload, now = _workload()
    _rate(month_of(now), "CNY", RATE)
    figures = at_risk.workload_at_risk(workload, now)
    assert figures.usd_at_risk == _expected() == Decimal("242.25")
    assert figures.price_per_gpu_hour_usd == CNY_PRICE / RATE
    assert figures.missing_rate is None

    client.force_login(make_user("ops"))
    data = client.get(f"/api/v1/workloads/{workload.slug}/at-risk/").json()
    # The API's own instant: the seconds since the first event, to the cent.
    seconds = Decimal(
        str((parse_datetime(data["computed_at"]) - (now - timedelta(hours=10))).total_seconds())
    )
    expected = (8 * CNY_PRICE * seconds / 3600 / RATE).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_UP
    )
    assert Decimal(data["usd_at_risk"]) == expected
    assert data["missing_exchange_rate"] is None


@pytest.mark.django_db
def test_without_the_months_rate_there_is_no_figure_and_the_rate_is_named(client, make_user):
    workload, now = _workload()
    figures = at_risk.workload_at_risk(workload, now)
    assert figures.usd_at_risk is None
    assert figures.missing_rate == ("CNY", month_of(now))

    client.force_login(make_user("ops"))
    data = client.get(f"/api/v1/workloads/{workload.slug}/at-risk/").json()
    assert data["usd_at_risk"] is None and data["price_per_gpu_hour_usd"] is None
    assert data["missing_exchange_rate"] == {"currency": "CNY", "month": f"{now:%Y-%m}"}
    page = client.get(reverse("backups:workload_at_risk", kwargs={"slug": workload.slug}))
    body = page.content.decode()
    assert f"no CNY exchange rate for {now:%Y-%m}" in body
    assert "$1,720.00" not in body and "$172" not in body


@pytest.mark.django_db
def test_many_workloads_read_the_rates_once():
    first, now = _workload("run-a")
    second, _ = _workload("run-b")
    _rate(month_of(now), "CNY", RATE)
    workloads = list(Workload.objects.filter(pk__in=[first.pk, second.pk]).select_related("pool"))
    with CaptureQueriesContext(connection) as captured:
        figures = at_risk.at_risk_by_workload(workloads, now)
        assert {item.usd_at_risk for item in figures.values()} == {_expected()}
    assert sum("currencies_exchangerate" in query["sql"] for query in captured) == 1
