"""Pools priced in their own currency, exchange rates by month, the reporting currency.

Cloud pools only (cost = GPUs × hours × price, FORMULAS.md), every hour measured, so
each figure is a product and a division done by hand in the test, rounded once to the
cent (apps/core/money.py)."""

import csv
import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.test import override_settings
from django.urls import reverse
from rest_framework.test import APIClient

from apps.core.money import to_cents
from apps.currencies.models import ExchangeRate
from apps.currencies.services import RateImportError, import_rates_csv
from apps.pools.models import Deployment, Pool, Purpose
from apps.pools.prices import record_prices
from apps.reports.cost.report import cost_report
from apps.telemetry.models import PoolHourlyUsage
from apps.telemetry.rollups.days import rebuild_days

ONE_HOUR = timedelta(hours=1)
GPUS = 4
CNY_PRICE = Decimal("21.50")  # CNY per GPU-hour
MARCH, APRIL = date(2026, 3, 1), date(2026, 4, 1)


def _pool(gpu_model, currency: str, price: Decimal, slug="shanghai") -> Pool:
    return record_prices(
        Pool(
            name=slug.title(),
            slug=slug,
            purpose=Purpose.TRAINING,
            deployment=Deployment.CLOUD_ON_DEMAND,
            currency=currency,
            gpu_model=gpu_model,
            gpu_count=GPUS,
            gpus_per_node=4,
            on_demand_price_per_gpu_hour_usd=price,
            in_service_from=datetime(2026, 1, 1, tzinfo=UTC),
        )
    )


def _telemetry(pool, start, end):
    hours = int((end - start) / ONE_HOUR)
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=start + step * ONE_HOUR,
            reporting_gpus=GPUS,
            capacity_gpu_hours=GPUS,
            busy_gpu_hours=GPUS / 2,
            avg_utilization_pct=50,
            max_utilization_pct=50,
        )
        for step in range(hours)
    )
    rebuild_days(start - timedelta(days=1), end + timedelta(days=1))


def _rate(month, currency, units):
    return ExchangeRate.objects.create(month=month, currency=currency, units_per_usd=Decimal(units))


# 10 hours inside March.
START, END = datetime(2026, 3, 10, 8, tzinfo=UTC), datetime(2026, 3, 10, 18, tzinfo=UTC)
# 4 hours at the end of March, 4 at the start of April.
ACROSS_START, ACROSS_END = (
    datetime(2026, 3, 31, 20, tzinfo=UTC),
    datetime(2026, 4, 1, 4, tzinfo=UTC),
)


@pytest.mark.django_db
def test_a_cny_pool_costs_its_cny_price_divided_by_the_months_rate(gpu_model):
    """4 GPUs × 10 h × ¥21.50 = ¥860.00; at 7.1 CNY per USD: 860 ÷ 7.1 = $121.13."""
    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, START, END)
    _rate(MARCH, "CNY", "7.1")

    (row,) = cost_report(START, END)
    assert to_cents(row.cost_usd) == to_cents(Decimal(4 * 10) * CNY_PRICE / Decimal("7.1"))
    assert to_cents(row.cost_usd) == Decimal("121.13")
    assert row.cost == row.cost_usd  # the reporting currency is USD by default
    assert not row.missing_rates
    with override_settings(REPORTING_CURRENCY="CNY"):
        (row,) = cost_report(START, END)
        assert row.currency == "CNY"
    assert to_cents(row.cost) == Decimal("860.00")
    assert to_cents(row.cost_usd) == Decimal("121.13")


@pytest.mark.django_db
def test_a_range_across_two_months_converts_each_months_hours_at_its_rate(gpu_model):
    """4 GPUs × 4 h × ¥21.50 = ¥344 in March at 7.1 and ¥344 in April at 7.2:
    344 ÷ 7.1 + 344 ÷ 7.2 = 48.4507 + 47.7778 = $96.23."""
    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, ACROSS_START, ACROSS_END)
    _rate(MARCH, "CNY", "7.1")
    _rate(APRIL, "CNY", "7.2")

    (row,) = cost_report(ACROSS_START, ACROSS_END)
    expected = Decimal(344) / Decimal("7.1") + Decimal(344) / Decimal("7.2")
    assert to_cents(row.cost_usd) == to_cents(expected) == Decimal("96.23")


@pytest.mark.django_db
def test_a_missing_rate_flags_the_row_and_leaves_its_hours_out_never_at_one(gpu_model):
    """April's rate is missing: only March's ¥344 ÷ 7.1 = $48.45 is counted (at 1.0 the
    total would be $392.45), and the row names CNY 2026-04."""
    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, ACROSS_START, ACROSS_END)
    _rate(MARCH, "CNY", "7.1")

    (row,) = cost_report(ACROSS_START, ACROSS_END)
    assert row.missing_rates == {("CNY", APRIL)}
    assert to_cents(row.cost_usd) == to_cents(Decimal(344) / Decimal("7.1")) == Decimal("48.45")

    # Over 31 March (24 h at 7.1) and 1 April (no rate): 4 × 24 × ¥21.50 ÷ 7.1 =
    # $290.70, and the API names April's missing rate.
    client = APIClient()
    client.force_authenticate(_superuser())
    response = client.get(
        reverse("api-report-cost"),
        {"start": "2026-03-31T00:00:00Z", "end": "2026-04-02T00:00:00Z"},
    )
    assert response.status_code == 200, response.content
    (data,) = response.json()
    assert data["cost_usd"] == str(to_cents(Decimal(4 * 24) * CNY_PRICE / Decimal("7.1"))), data
    assert data["missing_rates"] == [{"currency": "CNY", "month": "2026-04"}], data


@pytest.mark.django_db
def test_a_closed_month_keeps_the_rates_it_closed_with(gpu_model):
    """The pool is paid all 744 hours of March: 4 × 744 × ¥21.50 = ¥63,984. March closes
    at 7.1 (63,984 ÷ 7.1 = $9,011.83); the rate edited to 8.0 afterwards would give
    $7,998.00, but March's figures stay $9,011.83, live or frozen."""
    from apps.reports.cost import periods
    from apps.showback.periods import close_month
    from tests.factories import UserFactory

    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, START, END)
    rate = _rate(MARCH, "CNY", "7.1")
    closed = close_month(MARCH, UserFactory(is_superuser=True))
    assert closed.exchange_rates == {"CNY": str(Decimal("7.1000000000"))}

    rate.units_per_usd = Decimal("8.0")
    rate.save()

    month_start, month_end = periods.month_bounds(MARCH)
    (live,) = cost_report(month_start, month_end)
    (served,) = [row for row in periods.cost_report(month_start, month_end) if row.key == pool.slug]
    expected = to_cents(Decimal(4 * 744) * CNY_PRICE / Decimal("7.1"))
    assert expected == Decimal("9011.83")
    assert to_cents(live.cost_usd) == expected
    assert to_cents(served.cost_usd) == expected


@pytest.mark.django_db
def test_a_rate_recorded_after_the_close_converts_what_the_month_closed_without(gpu_model):
    """March closes without a CNY rate: its figures leave the yuan pool out ($0.00,
    incomplete). The rate recorded afterwards (7.1) never moves what was frozen: the
    month's live figures take it, and the difference, ¥63,984 ÷ 7.1 = $9,011.83, is the
    month's adjustment."""
    from apps.reports.cost import periods
    from apps.showback.periods import close_month
    from tests.factories import UserFactory

    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, START, END)
    closed = close_month(MARCH, UserFactory(is_superuser=True))
    assert closed.exchange_rates == {}
    month_start, month_end = periods.month_bounds(MARCH)
    (before,) = cost_report(month_start, month_end)
    assert (before.cost_usd, before.missing_rates) == (Decimal(0), {("CNY", MARCH)})

    _rate(MARCH, "CNY", "7.1")
    (live,) = cost_report(month_start, month_end)
    expected = to_cents(Decimal(4 * 744) * CNY_PRICE / Decimal("7.1"))
    assert to_cents(live.cost_usd) == expected == Decimal("9011.83")
    assert live.missing_rates == set()
    (served,) = periods.cost_report(month_start, month_end)
    assert to_cents(served.cost_usd) == Decimal(0)
    (adjustment,) = periods.adjustment_rows(closed, "pool")
    assert to_cents(adjustment.cost_usd) == expected


@pytest.mark.django_db
def test_a_month_frozen_without_the_reporting_currency_reads_its_dollars_at_the_rate(
    gpu_model, settings
):
    """March closes in US dollars, its rows frozen without a cost in another currency;
    the installation then reports in euros. The frozen month reads its dollars at March's
    EUR rate (¥63,984 ÷ 7.1 = $9,011.83 × 0.92 = €8,290.88), not €0, and books no
    adjustment: nothing moved."""
    from apps.reports.cost import periods
    from apps.reports.models import FrozenCostRow
    from apps.showback.periods import close_month
    from tests.factories import UserFactory

    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, START, END)
    _rate(MARCH, "CNY", "7.1")
    closed = close_month(MARCH, UserFactory(is_superuser=True))
    for stored in FrozenCostRow.objects.filter(closed_month=closed):
        stored.figures.pop("cost", None)
        stored.save(update_fields=["figures"])

    settings.REPORTING_CURRENCY = "EUR"
    _rate(MARCH, "EUR", "0.92")
    month_start, month_end = periods.month_bounds(MARCH)
    (served,) = periods.cost_report(month_start, month_end)
    dollars = Decimal(4 * 744) * CNY_PRICE / Decimal("7.1")
    assert to_cents(served.cost_usd) == Decimal("9011.83")
    assert to_cents(served.cost) == to_cents(dollars * Decimal("0.92")) == Decimal("8290.88")
    assert periods.adjustment_rows(closed, "pool") == []


@pytest.mark.django_db
def test_a_month_closed_without_a_rate_stays_incomplete_on_the_closed_months_page(gpu_model):
    """March closes without its CNY rate: the yuan pool's cost is left out ($0.00), and the
    closed month keeps saying so."""
    from apps.showback.periods import close_month
    from apps.showback.selectors import frozen_total
    from tests.factories import UserFactory

    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, START, END)
    closed = close_month(MARCH, UserFactory(is_superuser=True))
    total, missing = frozen_total(closed)
    assert (total, missing) == (Decimal(0), {("CNY", MARCH)})


def _superuser():
    from tests.factories import UserFactory

    return UserFactory(is_superuser=True)


@pytest.mark.django_db
@override_settings(REPORTING_CURRENCY="EUR")
def test_reporting_in_eur_shows_eur_on_the_page_and_in_the_api(client, gpu_model):
    """A USD pool: 4 GPUs × 10 h × $2.00 = $80.00; at 0.92 EUR per USD: €73.60."""
    pool = _pool(gpu_model, "USD", Decimal("2.00"), slug="virginia")
    _telemetry(pool, START, END)
    _rate(MARCH, "EUR", "0.92")

    api = APIClient()
    api.force_authenticate(_superuser())
    response = api.get(
        reverse("api-report-cost"), {"start": START.isoformat(), "end": END.isoformat()}
    )
    assert response.status_code == 200, response.content
    (data,) = response.json()
    assert data["cost_usd"] == "80.00"
    assert data["currency"] == "EUR"
    assert data["cost"] == str(to_cents(Decimal("80.00") * Decimal("0.92"))) == "73.60"

    client.force_login(_superuser())
    # The page reads whole UTC days: 10 March, telemetry in 10 of its 24 hours, the other
    # 14 unmeasured at the same price: 4 × 24 × $2.00 = $192.00 × 0.92 = €176.64.
    page = client.get(reverse("reports:report"), {"start": "2026-03-10", "end": "2026-03-10"})
    assert page.status_code == 200
    assert "€176.64" in page.content.decode()


CSV_OK = "month,currency,units_per_usd,source\n2026-03,CNY,7.1,PBOC\n2026-04,CNY,7.2000,PBOC\n"


@pytest.mark.django_db
def test_the_csv_import_records_every_rate_or_names_the_wrong_line():
    result = import_rates_csv(CSV_OK)
    assert (result.created, result.updated) == (2, 0)
    assert ExchangeRate.objects.get(month=APRIL, currency="CNY").units_per_usd == Decimal("7.2")

    for text, expected in (
        ("month,currency,units_per_usd\n2026-05,CNY,7.1\n2026-13,CNY,7.1\n", "Line 3, month"),
        ("month,currency,units_per_usd\n2026-05,XYZ,7.1\n", "Line 2, currency"),
        ("month,currency,units_per_usd\n2026-05,CNY,7e0\n", "Line 2, units_per_usd"),
        ("month,currency\n2026-05,CNY\n", "Line 1"),
    ):
        with pytest.raises(RateImportError, match=expected):
            import_rates_csv(text)
    # All or nothing: the good line before the bad one was not kept.
    assert not ExchangeRate.objects.filter(month=date(2026, 5, 1)).exists()


@pytest.mark.django_db
def test_the_exchange_rate_api_writes_filters_and_refuses_bad_input(make_user):
    api = APIClient()
    api.force_authenticate(make_user("finance"))
    url = reverse("exchange-rate-list")
    created = api.post(
        url, {"month": "2026-03", "currency": "CNY", "units_per_usd": "7.1"}, format="json"
    )
    assert created.status_code == 201, created.content
    assert created.json()["currency"] == "CNY"
    assert (
        api.post(
            url, {"month": "2026-03", "currency": "CNY", "units_per_usd": "7"}, format="json"
        ).status_code
        == 400
    )
    assert (
        api.post(
            url, {"month": "2026-3x", "currency": "EUR", "units_per_usd": "1"}, format="json"
        ).status_code
        == 400
    )
    assert (
        api.post(
            url, {"month": "2026-03", "currency": "ABC", "units_per_usd": "1"}, format="json"
        ).status_code
        == 400
    )
    listed = api.get(url, {"month": "2026-03", "currency": "CNY"}).json()
    results = listed["results"] if isinstance(listed, dict) else listed
    assert [rate["units_per_usd"] for rate in results] == ["7.1000000000"]

    reader = APIClient()
    reader.force_authenticate(make_user("ops"))
    assert reader.get(url).status_code == 200
    assert (
        reader.post(
            url, {"month": "2026-04", "currency": "CNY", "units_per_usd": "7"}, format="json"
        ).status_code
        == 403
    )


@pytest.mark.django_db
def test_the_pool_api_and_form_take_an_iso_4217_currency(make_user, gpu_model):
    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    api = APIClient()
    api.force_authenticate(_superuser())
    data = api.get(reverse("pool-detail", kwargs={"slug": pool.slug})).json()
    assert data["currency"] == "CNY"
    response = api.patch(
        reverse("pool-detail", kwargs={"slug": pool.slug}), {"currency": "XX1"}, format="json"
    )
    assert response.status_code == 400
    assert "currency" in response.json()


@pytest.mark.django_db
def test_a_scenario_takes_the_months_rate_unless_one_is_typed():
    from django.utils import timezone

    from apps.procurement.models import Scenario

    this_month = timezone.now().date().replace(day=1)
    scenario = Scenario.objects.create(name="Shanghai", slug="shanghai", currency="CNY")
    assert scenario.exchange_rate is None  # none recorded: never 1
    _rate(this_month, "CNY", "7.2")
    scenario = Scenario.objects.get(pk=scenario.pk)
    assert scenario.exchange_rate == Decimal("7.2")
    assert this_month.strftime("%Y-%m") in scenario.exchange_rate_source
    scenario.usd_exchange_rate = Decimal("7.0")
    scenario.save()
    scenario = Scenario.objects.get(pk=scenario.pk)
    assert scenario.exchange_rate == Decimal("7.0")
    assert scenario.exchange_rate_source == "typed on the scenario"


@pytest.mark.django_db
def test_the_daily_chart_converts_a_cny_pools_day_at_its_months_rate(gpu_model):
    """10 March: 4 GPUs × 10 measured hours × ¥21.50 = ¥860 ÷ 7.1 = $121.13."""
    from apps.reports.cost.daily import daily_split

    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, START, END)
    _rate(MARCH, "CNY", "7.1")
    day = datetime(2026, 3, 10, tzinfo=UTC)
    split = daily_split(day, day + timedelta(days=1))
    assert to_cents(split.measured_cost_usd[Purpose.TRAINING][0]) == to_cents(
        Decimal(860) / Decimal("7.1")
    )
    assert not split.missing_rates


@pytest.mark.django_db
def test_the_focus_export_prices_a_cny_pool_in_usd_at_the_months_rate(gpu_model):
    """The day's row: ¥21.50 ÷ 7.1 = $3.0282 per GPU-hour, 96 GPU-hours, billed $290.70
    as the cost report; without the rate the price is null and the row names the rate."""
    from apps.showback.focus.exports import focus_csv
    from apps.showback.focus.rows import focus_rows

    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, START, END)
    day = START.replace(hour=0)

    def _focus_rows_of(day):
        text = focus_csv(focus_rows(day, day + timedelta(days=1)))
        return list(csv.DictReader(io.StringIO(text)))

    (missing,) = _focus_rows_of(day)
    assert missing["ListUnitPrice"] == "" and missing["ListCost"] == ""
    assert missing["x_MissingExchangeRate"] == "CNY 2026-03"
    assert Decimal(missing["BilledCost"]) == 0  # as the cost report: the rate is missing

    _rate(MARCH, "CNY", "7.1")
    (row,) = _focus_rows_of(day)
    unit_price = CNY_PRICE / Decimal("7.1")
    assert Decimal(row["ListUnitPrice"]) == unit_price  # exact: ListCost is price × quantity
    # The whole day is paid: 4 GPUs × 24 h, 10 of them measured.
    assert Decimal(row["ConsumedQuantity"]) == 96
    assert Decimal(row["BilledCost"]) == Decimal("290.70") == to_cents(96 * unit_price)
    assert row["BillingCurrency"] == "USD" and row["x_MissingExchangeRate"] == ""


@pytest.mark.django_db
def test_a_missing_rate_leaves_out_the_unmeasured_hours_too(gpu_model):
    """A whole day of a CNY pool measured for 10 h: without March's rate nothing is
    converted (not the 56 unmeasured GPU-hours at ¥21.50 read as dollars, $1,204); with
    it, 96 GPU-h × ¥21.50 ÷ 7.1 = $290.70."""
    pool = _pool(gpu_model, "CNY", CNY_PRICE)
    _telemetry(pool, START, END)
    day = START.replace(hour=0)

    (row,) = cost_report(day, day + timedelta(days=1))
    assert row.cost_usd == 0 and row.missing_rates == {("CNY", MARCH)}
    _rate(MARCH, "CNY", "7.1")
    (row,) = cost_report(day, day + timedelta(days=1))
    assert to_cents(row.cost_usd) == to_cents(96 * CNY_PRICE / Decimal("7.1")) == Decimal("290.70")
