"""Reconciliation: mapped lines against the cost engine per pool and month, the flags,
the unknown GPU lines, the currency check, and replacing the typed price with the billed
cost in an open and in a closed month. Every expected figure is computed by hand here:
a cloud pool without telemetry costs its GPUs × the month's hours × its price."""

import io
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.bills import importer, reconciliation
from apps.bills.models import Bill, MappingRule, PriceReplacement, ReconciliationSettings
from apps.pools.models import PoolPricePeriod
from apps.reports.cost import periods
from apps.showback import periods as showback_periods
from tests.factories import PoolFactory, UserFactory

pytestmark = pytest.mark.django_db

SEPTEMBER = date(2024, 9, 1)
SEPTEMBER_HOURS = 30 * 24
PRICE = Decimal("2.99")
GPUS = 16
HEADER = (
    "ServiceProviderName,BillingCurrency,BilledCost,ChargePeriodStart,ChargePeriodEnd,"
    "BillingPeriodStart,BillingPeriodEnd,ResourceId,SubAccountId,SkuId,ChargeDescription,Tags"
)


def _line(
    cost,
    resource,
    *,
    currency="USD",
    sku="",
    description="",
    sub="acct",
    tags="",
    start="2024-09-01T00:00Z",
    end="2024-10-01T00:00Z",
    provider="Example Cloud",
):
    return ",".join(
        [
            provider,
            currency,
            cost,
            start,
            end,
            "2024-09-01T00:00Z",
            "2024-10-01T00:00Z",
            resource,
            sub,
            sku,
            description,
            tags,
        ]
    )


def _bill(*lines, name="bill.csv"):
    text = "\n".join([HEADER, *lines]) + "\n"
    return importer.import_bill(
        io.BytesIO(text.encode()), filename=name, source=Bill.Source.COMMAND
    ).bill


@pytest.fixture
def east(gpu_model):
    return PoolFactory(name="H100 east", slug="h100-east", gpu_model=gpu_model, gpu_count=GPUS)


@pytest.fixture
def west(gpu_model):
    return PoolFactory(name="H100 west", slug="h100-west", gpu_model=gpu_model, gpu_count=8)


@pytest.fixture
def fleet_bill(east, west):
    MappingRule.objects.create(priority=10, kind="resource_id", value="i-east-*", pool=east)
    MappingRule.objects.create(priority=20, kind="tag", value="pool=west", pool=west)
    return _bill(
        _line("20000.00", "i-east-1", sku="p5.48xlarge"),
        _line("16000.00", "i-east-2", sku="p5.48xlarge"),
        _line("900.00", "vm-w", currency="EUR", tags='"{""pool"": ""west""}"'),
        _line("123.45", "i-mystery", sku="p5.48xlarge", description="8 x H100"),
        _line("50.00", "bucket-1", sku="S3-Standard", description="Object storage"),
        # October: another month's line.
        _line("7.00", "i-east-3", start="2024-10-01T00:00Z", end="2024-10-02T00:00Z"),
    )


def test_rows_compare_billed_with_a_hand_computed_cost(fleet_bill, east):
    result = reconciliation.reconcile(SEPTEMBER)
    rows = {row.pool.slug: row for row in result.rows}
    computed = GPUS * SEPTEMBER_HOURS * PRICE  # 34,444.80 USD
    east_row = rows["h100-east"]
    assert east_row.lines == 2
    assert east_row.billed == Decimal("36000.00")
    assert east_row.computed.quantize(Decimal("0.01")) == computed
    assert east_row.difference.quantize(Decimal("0.01")) == Decimal("36000.00") - computed
    share = (Decimal("36000.00") - computed) / computed * 100  # 4.5154… %
    assert east_row.difference_share.quantize(Decimal("0.0001")) == share.quantize(
        Decimal("0.0001")
    )
    assert east_row.flagged and east_row.status == reconciliation.OVER_TOLERANCE
    # The EUR lines are not compared with USD.
    assert rows["h100-west"].status == reconciliation.CURRENCY_DIFFERS
    assert rows["h100-west"].difference is None and rows["h100-west"].flagged


def test_tolerance_decides_the_flag(fleet_bill):
    settings = ReconciliationSettings.current()
    settings.tolerance_pct = Decimal("5")
    settings.save()
    east_row = next(
        row for row in reconciliation.reconcile(SEPTEMBER).rows if row.pool.slug == "h100-east"
    )
    assert not east_row.flagged and east_row.status == reconciliation.WITHIN


def test_unknown_gpu_lines_are_listed_and_storage_is_not(fleet_bill):
    result = reconciliation.reconcile(SEPTEMBER)
    assert [line.resource_id for line in result.unknown_lines] == ["i-mystery"]
    assert result.unknown_by_currency == {"USD": Decimal("123.45")}


def test_the_first_rule_by_priority_wins(fleet_bill, east, west):
    MappingRule.objects.create(priority=1, kind="sku", value="p5.48xlarge", pool=west)
    rows = {row.pool.slug: row for row in reconciliation.reconcile(SEPTEMBER).rows}
    # The two east lines and the mystery line carry the SKU: west's rule comes first.
    assert rows["h100-east"].lines == 0
    assert rows["h100-west"].billed_by_currency["USD"] == Decimal("36123.45")


def test_currency_check_is_one_function():
    assert reconciliation.comparable_currency({"USD"})
    assert not reconciliation.comparable_currency({"USD", "CNY"})


def test_api_rows_and_malformed_month(client, fleet_bill):
    client.force_login(UserFactory(role="finance"))
    response = client.get(reverse("api-reconciliation-bills"), {"month": "2024-09"})
    assert response.status_code == 200, response.content
    body = response.json()
    east = next(row for row in body["rows"] if row["pool"] == "h100-east")
    computed = GPUS * SEPTEMBER_HOURS * PRICE
    assert east["billed"] == "36000.00"
    assert Decimal(east["computed"]).quantize(Decimal("0.01")) == computed
    assert Decimal(east["difference"]).quantize(Decimal("0.01")) == Decimal("36000.00") - computed
    assert east["difference_share"] == "4.52"
    assert east["flagged"] is True and east["currency"] == "USD"
    west = next(row for row in body["rows"] if row["pool"] == "h100-west")
    assert west["status"] == "currency_differs" and west["difference"] is None
    assert body["unknown_gpu_line_count"] == 1
    assert body["unknown_gpu_billed"] == {"USD": "123.45"}
    bad = client.get(reverse("api-reconciliation-bills"), {"month": "2024-9"})
    assert bad.status_code == 400 and "month" in bad.json()
    client.force_login(UserFactory(role="lead"))
    assert client.get(reverse("api-reconciliation-bills"), {"month": "2024-09"}).status_code == 403


def test_page_shows_the_difference_and_unknown_lines(client, fleet_bill):
    client.force_login(UserFactory(role="finance"))
    page = client.get(reverse("bills:reconciliation"), {"month": "2024-09"}).content.decode()
    assert "36000.00 USD" in page and "4.52 %" in page
    assert "i-mystery" in page and "currency differs" in page


def test_replacing_the_price_in_an_open_month(client, fleet_bill, east):
    finance = UserFactory(role="finance")
    client.force_login(finance)
    url = reverse("bills:replace_price", args=["h100-east", "2024-09"])
    assert client.get(url).status_code == 200  # the confirmation
    response = client.post(url)
    assert response.status_code == 302
    replacement = PriceReplacement.objects.get()
    hours = GPUS * SEPTEMBER_HOURS
    assert replacement.chosen_by == finance and not replacement.month_was_closed
    assert replacement.billed_usd == Decimal("36000.00")
    assert replacement.price_per_gpu_hour_usd == Decimal("36000.00") / hours  # 3.125
    # September now costs the bill; October keeps the typed price.
    start, end = periods.month_bounds(SEPTEMBER)
    (september,) = periods.cost_report(start, end, "pool", pool_slug="h100-east")
    assert september.cost_usd.quantize(Decimal("0.01")) == Decimal("36000.00")
    october_end = datetime(2024, 11, 1, tzinfo=UTC)
    (october,) = periods.cost_report(end, october_end, "pool", pool_slug="h100-east")
    assert october.cost_usd.quantize(Decimal("0.01")) == GPUS * 31 * 24 * PRICE
    assert PoolPricePeriod.objects.filter(pool=east, effective_from=end).get()
    # The row is within tolerance now, and says it was replaced.
    row = reconciliation.pool_month(east, SEPTEMBER)
    assert row.status == reconciliation.WITHIN and row.replacement == replacement


def test_replacing_in_a_closed_month_books_an_adjustment(fleet_bill, east):
    finance = UserFactory(role="finance")
    showback_periods.close_month(SEPTEMBER, finance)
    reconciliation.replace_price(east, SEPTEMBER, user=finance)
    replacement = PriceReplacement.objects.get()
    assert replacement.month_was_closed
    computed = GPUS * SEPTEMBER_HOURS * PRICE
    start, end = periods.month_bounds(SEPTEMBER)
    # The closed month's figure stays as it froze…
    (september,) = periods.cost_report(start, end, "pool", pool_slug="h100-east")
    assert september.cost_usd.quantize(Decimal("0.01")) == computed
    # …and the first open month books the difference as an adjustment.
    october_end = datetime(2024, 11, 1, tzinfo=UTC)
    adjustments = [
        row
        for row in periods.cost_report(end, october_end, "pool", pool_slug="h100-east")
        if periods.is_adjustment(row)
    ]
    assert sum(row.cost_usd for row in adjustments).quantize(Decimal("0.01")) == (
        Decimal("36000.00") - computed
    )


@pytest.mark.parametrize("role", ["lead", "ops", "reader"])
def test_only_finance_replaces(client, fleet_bill, role):
    client.force_login(UserFactory(role=role))
    url = reverse("bills:replace_price", args=["h100-east", "2024-09"])
    assert client.post(url).status_code == 403
    assert not PriceReplacement.objects.exists()


def test_rules_are_managed_with_a_confirmation_before_delete(client, east):
    client.force_login(UserFactory(role="finance"))
    response = client.post(
        reverse("bills:rule_create"),
        {"priority": 5, "kind": "tag", "value": "team=ml", "pool": east.pk},
    )
    assert response.status_code == 302
    rule = MappingRule.objects.get()
    bad = client.post(
        reverse("bills:rule_edit", args=[rule.pk]),
        {"priority": 5, "kind": "tag", "value": "team", "pool": east.pk},
    )
    assert bad.status_code == 200 and "key=value" in bad.content.decode()
    assert client.get(reverse("bills:rule_delete", args=[rule.pk])).status_code == 200
    assert MappingRule.objects.exists()
    client.post(reverse("bills:rule_delete", args=[rule.pk]))
    assert not MappingRule.objects.exists()
