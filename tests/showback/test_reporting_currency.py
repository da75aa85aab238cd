"""Showback, budgets and money alerts in the reporting currency.

The fleet of tests/showback/fleet.py (March 2026, 744 hours), with pool C priced in yuan:
7.20 CNY per GPU-hour at 7.2 CNY per US dollar is the $1.00 the fleet's hand computation
(``hand_split``) counts, so every dollar figure is the fleet's. In euros at 0.92 EUR per
US dollar for March, every figure is its dollars × 0.92 (converting is multiplying by
the month's rate), rounded once to the cent. At a reporting currency of USD the figures
are the dollars themselves.
"""

import csv
import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.test import override_settings
from django.urls import reverse
from openpyxl import load_workbook
from rest_framework.test import APIClient

from apps.alerts.metrics import team_budgets
from apps.alerts.models import Alert
from apps.alerts.services import evaluate_rule
from apps.currencies.models import ExchangeRate
from apps.pools.models import Pool
from apps.reports.cost.report import cost_report
from apps.showback import periods
from apps.showback.models import Budget
from apps.showback.selectors import budget_burndowns, showback
from tests.alerts.factories import make_rule
from tests.factories import UserFactory
from tests.money import cents
from tests.showback.fleet import MONTH_END, MONTH_HOURS, MONTH_START, hand_split, make_fleet

MARCH = date(2026, 3, 1)
EUR_PER_USD = Decimal("0.92")
CNY_PER_USD = Decimal("7.2")
CNY_PRICE = Decimal("7.20")  # pool C, CNY per GPU-hour: $1.00 in March
EUR = override_settings(REPORTING_CURRENCY="EUR")
# Budgets read at 20 March, 12:30: spent up to the end of the current hour.
NOW = datetime(2026, 3, 20, 12, 30, tzinfo=UTC)
HOURS_SO_FAR = 19 * 24 + 13
DAYS_LEFT = Decimal(11 * 24 + 11) / 24  # 13:00 on the 20th to 1 April


@pytest.fixture
def fleet(db):
    teams, pools, workloads = make_fleet()
    # No price period: a pool without one is priced at its current prices.
    Pool.objects.filter(pk=pools["pool-c"].pk).update(
        currency="CNY",
        on_demand_price_per_gpu_hour_usd=CNY_PRICE,
        effective_price_per_gpu_hour_usd=CNY_PRICE,
        fixed_price_per_gpu_hour_usd=CNY_PRICE,
    )
    ExchangeRate.objects.create(month=MARCH, currency="CNY", units_per_usd=CNY_PER_USD)
    ExchangeRate.objects.create(month=MARCH, currency="EUR", units_per_usd=EUR_PER_USD)
    return teams, pools, workloads


def _in_eur(usd) -> Decimal:
    return Decimal(str(usd)) * EUR_PER_USD


def _fleet_total_usd() -> Decimal:
    return sum((Decimal(str(value)) for value in hand_split().values()), Decimal(0))


def _cost_report_total():
    rows = cost_report(MONTH_START, MONTH_END, "pool")
    return sum(row.cost for row in rows), sum(row.cost_usd for row in rows)


def test_at_a_reporting_currency_of_usd_the_figures_are_the_dollars(fleet):
    teams, _pools, _workloads = fleet
    figures = showback(MONTH_START, MONTH_END)
    hand = hand_split()
    for key in ("research", "serving"):
        spend = figures.teams[teams[key].pk]
        assert cents(spend.cost) == cents(spend.cost_usd) == cents(hand[key])
    assert figures.currency == "USD" and not figures.missing_rates
    report_total, report_total_usd = _cost_report_total()
    assert cents(figures.total) == cents(report_total) == cents(_fleet_total_usd())
    assert cents(figures.total_usd) == cents(report_total_usd)


@EUR
def test_in_euros_each_team_is_its_dollars_at_the_months_rate(fleet):
    teams, pools, _workloads = fleet
    figures = showback(MONTH_START, MONTH_END)
    hand = hand_split()
    for key in ("research", "serving"):
        spend = figures.teams[teams[key].pk]
        assert cents(spend.cost_usd) == cents(hand[key])  # the dollars are unchanged
        assert cents(spend.cost) == cents(_in_eur(hand[key]))
    assert cents(figures.unattributed.cost) == cents(_in_eur(hand["unattributed"]))
    # Serving's share of pool C, the yuan pool: 2 GPUs × 744 h × 7.20 CNY ÷ 7.2 × 0.92.
    by_pool = figures.teams[teams["serving"].pk].by_pool[pools["pool-c"].pk]
    assert cents(by_pool) == cents(2 * MONTH_HOURS * CNY_PRICE / CNY_PER_USD * EUR_PER_USD)
    # The showback's total is the cost report's, in euros as in dollars.
    report_total, report_total_usd = _cost_report_total()
    assert cents(figures.total) == cents(report_total) == cents(_in_eur(_fleet_total_usd()))
    assert cents(figures.total_usd) == cents(report_total_usd) == cents(_fleet_total_usd())


@EUR
def test_the_api_keeps_dollars_and_adds_euros_and_a_missing_rate_is_named(fleet):
    teams, _pools, _workloads = fleet
    api = APIClient()
    api.force_authenticate(UserFactory(role="finance"))
    body = api.get("/api/v1/showback/", {"month": "2026-03"}).json()
    hand = hand_split()
    rows = {row["team"]: row for row in body["rows"]}
    assert rows["serving"]["cost_usd"] == cents(hand["serving"])
    assert rows["serving"]["cost"] == cents(_in_eur(hand["serving"]))
    assert rows["serving"]["currency"] == body["currency"] == "EUR"
    assert rows[None]["cost"] == cents(_in_eur(hand["unattributed"]))
    assert body["total"] == cents(_in_eur(_fleet_total_usd()))
    assert body["total_usd"] == cents(_fleet_total_usd())
    assert body["missing_rates"] == []

    # Without March's yuan rate, pool C (2 GPUs × 744 h) is left out and named.
    ExchangeRate.objects.filter(currency="CNY").delete()
    body = api.get("/api/v1/showback/", {"month": "2026-03"}).json()
    rows = {row["team"]: row for row in body["rows"]}
    without_c = hand["serving"] - 2 * MONTH_HOURS
    assert rows["serving"]["cost_usd"] == cents(without_c)
    assert rows["serving"]["cost"] == cents(_in_eur(without_c))
    assert body["missing_rates"] == [{"currency": "CNY", "month": "2026-03"}]


@EUR
def test_the_page_and_the_export_speak_euros(client, fleet):
    client.force_login(UserFactory(role="finance"))
    page = client.get(reverse("showback:showback"), {"month": "2026-03"}).content.decode()
    hand = hand_split()
    assert "Cost (EUR)" in page
    assert f"€{_in_eur(hand['serving']):,.2f}" in page
    assert f"€{_in_eur(_fleet_total_usd()):,.2f}" in page
    assert f"${_fleet_total_usd():,.2f}" in page  # the fleet total in dollars, labelled
    text = client.get(
        reverse("showback:showback_export"), {"month": "2026-03", "format": "csv"}
    ).content.decode()
    lines = list(csv.reader(io.StringIO(text)))
    assert lines[0][2:] == [
        "Cost (USD)",
        "Cost in the reporting currency (EUR)",
        "Currency",
        "Missing exchange rates",
    ]
    serving = next(line for line in lines if line[1] == "serving")
    assert serving[2:] == [cents(hand["serving"]), cents(_in_eur(hand["serving"])), "EUR", ""]
    assert lines[-1][0] == "Fleet total"
    assert lines[-1][2:4] == [cents(_fleet_total_usd()), cents(_in_eur(_fleet_total_usd()))]

    ExchangeRate.objects.filter(currency="CNY").delete()
    page = client.get(reverse("showback:showback"), {"month": "2026-03"}).content.decode()
    assert 'id="missing-rates"' in page and "CNY 2026-03" in page


@EUR
def test_the_audit_bundle_adds_euros_beside_its_dollars(client, fleet):
    _teams, pools, _workloads = fleet
    api = APIClient()
    api.force_authenticate(UserFactory(role="finance"))
    body = api.get("/api/v1/teams/serving/audit/", {"month": "2026-03"}).json()
    serving = hand_split()["serving"]
    assert body["currency"] == "EUR" and body["missing_rates"] == []
    assert body["totals"]["cost_usd"] == cents(serving)
    assert body["totals"]["cost"] == cents(_in_eur(serving))
    pool_c = next(pool for pool in body["pools"] if pool["slug"] == pools["pool-c"].slug)
    assert pool_c["cost"] == cents(_in_eur(2 * MONTH_HOURS))  # 2 GPUs × 744 h × $1.00
    # The XLSX's summary names the total in euros.
    client.force_login(UserFactory(role="finance"))
    response = client.get(
        reverse("showback:team_audit", args=["serving"]), {"month": "2026-03", "format": "xlsx"}
    )
    summary = load_workbook(io.BytesIO(response.content)).worksheets[0]
    lines = {row[0]: row[1] for row in summary.iter_rows(values_only=True)}
    total = lines["Team total in the reporting currency (EUR)"]
    assert cents(total) == cents(_in_eur(serving))


def test_a_month_closed_in_euros_is_served_as_stored(fleet):
    teams, _pools, _workloads = fleet
    with EUR:
        periods.close_month(MARCH, UserFactory(role="finance"))
        ExchangeRate.objects.filter(currency="EUR").update(units_per_usd=Decimal("0.99"))
        figures = showback(MONTH_START, MONTH_END)
    hand = hand_split()
    assert cents(figures.teams[teams["research"].pk].cost) == cents(_in_eur(hand["research"]))
    # Read in dollars after the setting changed back: its dollars, as frozen.
    figures = showback(MONTH_START, MONTH_END)
    assert cents(figures.total) == cents(figures.total_usd) == cents(_fleet_total_usd())


def test_a_month_closed_in_dollars_reads_in_euros_at_the_rate_it_closed_with(fleet):
    teams, _pools, _workloads = fleet
    periods.close_month(MARCH, UserFactory(role="finance"))
    # A rate edited after the close does not move the closed month.
    ExchangeRate.objects.filter(currency="EUR").update(units_per_usd=Decimal("0.99"))
    hand = hand_split()
    api = APIClient()
    api.force_authenticate(UserFactory(role="finance"))
    with EUR:
        figures = showback(MONTH_START, MONTH_END)
        listed = api.get("/api/v1/periods/").json()
    assert cents(figures.teams[teams["serving"].pk].cost) == cents(_in_eur(hand["serving"]))
    assert cents(figures.total) == cents(_in_eur(_fleet_total_usd()))
    (march,) = [period for period in listed if period["month"] == "2026-03"]
    assert march["cost"] == cents(_in_eur(_fleet_total_usd())) and march["currency"] == "EUR"
    assert march["cost_usd"] == cents(_fleet_total_usd())
    with override_settings(REPORTING_CURRENCY="JPY"):
        figures = showback(MONTH_START, MONTH_END)
    # No yen rate was recorded when March closed: its amounts are left out, named.
    assert figures.total == 0 and figures.missing_rates == {("JPY", MARCH)}


# --- budgets ----------------------------------------------------------------------------


def _serving_spent_usd(hours) -> Decimal:
    """Serving: pool C's $2 an hour (2 GPUs × $1.00), and a2's $20 and b2's $90 on 10 March
    (tests/showback/fleet.py)."""
    return Decimal(2 * hours + 20 + 90)


@EUR
def test_a_budget_in_euros_burns_down_in_euros(fleet):
    teams, _pools, _workloads = fleet
    budget = Budget.objects.create(team=teams["serving"], amount_per_month=Decimal("1000"))
    assert budget.currency == "EUR"  # a new budget: the reporting currency
    (item,) = budget_burndowns([budget], NOW)
    spent = _in_eur(_serving_spent_usd(HOURS_SO_FAR))
    window = _in_eur(2 * 7 * 24)  # 13 to 20 March: pool C only
    forecast = spent + window / 7 * DAYS_LEFT
    figures = item.figures
    assert figures.currency == "EUR" and figures.amount == Decimal("1000")
    assert cents(figures.spent) == cents(spent)
    assert figures.used_pct == pytest.approx(float(spent / 1000 * 100))
    assert cents(figures.forecast) == cents(forecast)
    assert figures.state == "90"  # 2 × 469 + 110 = $1,048 = €964.16 of €1,000
    # The API's dollars: the spend in USD, the amount at March's rate.
    assert cents(item.figures_usd.spent) == cents(_serving_spent_usd(HOURS_SO_FAR))
    assert cents(item.figures_usd.amount) == cents(Decimal(1000) / EUR_PER_USD)


@EUR
def test_a_budget_stated_in_dollars_keeps_its_meaning_in_euros(fleet):
    teams, _pools, _workloads = fleet
    budget = Budget.objects.create(
        team=teams["serving"], amount_per_month=Decimal("1000"), currency="USD"
    )
    (item,) = budget_burndowns([budget], NOW)
    spent = _in_eur(_serving_spent_usd(HOURS_SO_FAR))
    # $1,000 at 0.92 EUR per USD is €920: €964.16 spent, as $1,048 of $1,000 would be.
    assert item.figures.amount == Decimal("920.00")
    assert item.figures.used_pct == pytest.approx(float(spent / Decimal("920") * 100))
    assert item.figures.state == "over"
    (family,) = team_budgets(NOW)
    assert [float(sample.value) for sample in family.samples] == [
        pytest.approx(float(spent / Decimal("920")))
    ]

    # Without March's euro rate the budget cannot be converted: unknown, and named.
    ExchangeRate.objects.filter(currency="EUR").delete()
    (item,) = budget_burndowns([budget], NOW)
    assert item.figures.amount is None and item.figures.used_pct is None
    assert item.figures.state == "unknown"
    assert ("EUR", MARCH) in item.figures.missing_rates
    (family,) = team_budgets(NOW)
    assert family.samples == []  # no ratio rather than a wrong one


@EUR
def test_the_budget_api_states_currencies(fleet):
    teams, _pools, _workloads = fleet
    api = APIClient()
    api.force_authenticate(UserFactory(role="admin"))
    made = api.post(
        "/api/v1/budgets/", {"team": "serving", "amount_per_month": "500"}, format="json"
    )
    assert made.status_code == 201, made.content
    assert made.json()["currency"] == "EUR" and made.json()["reporting_currency"] == "EUR"
    Budget.objects.all().delete()
    legacy = api.post(
        "/api/v1/budgets/", {"team": "research", "amount_usd_per_month": "500"}, format="json"
    )
    assert legacy.status_code == 201, legacy.content
    assert legacy.json()["currency"] == "USD" and legacy.json()["amount_per_month"] == "500.00"
    both = api.post(
        "/api/v1/budgets/",
        {"team": "serving", "amount_per_month": "1", "amount_usd_per_month": "1"},
        format="json",
    )
    assert both.status_code == 400 and "amount_usd_per_month" in both.json()
    wrong = api.post(
        "/api/v1/budgets/",
        {"team": "serving", "amount_per_month": "1", "currency": "XYZ"},
        format="json",
    )
    assert wrong.status_code == 400 and "currency" in wrong.json()


@EUR
def test_the_budget_form_takes_a_currency_and_defaults_to_the_reporting_one(client, fleet):
    teams, _pools, _workloads = fleet
    client.force_login(UserFactory(role="admin"))
    form = client.get(reverse("showback:budget_create")).content.decode()
    assert '<option value="EUR" selected>' in form
    client.post(
        reverse("showback:budget_create"),
        {"team": teams["serving"].pk, "amount_per_month": "7000", "currency": "CNY"},
    )
    client.post(
        reverse("showback:budget_create"),
        {"team": teams["research"].pk, "amount_per_month": "900"},
    )
    assert dict(Budget.objects.values_list("team__slug", "currency")) == {
        "serving": "CNY",
        "research": "EUR",
    }


# --- alerts -----------------------------------------------------------------------------


@EUR
def test_money_alerts_compare_and_speak_in_euros(fleet):
    teams, pools, _workloads = fleet
    # Pool B on 10 March, hours 0–9: 8 GPUs × 10 h × $3 measured, half busy: $120 idle,
    # €110.40; the rule's $100 is €92.00. The window is the 24 hours up to 12:00.
    idle = make_rule(kind="idle_cost", threshold_usd=Decimal("100"), window_hours=24)
    evaluate_rule(idle, datetime(2026, 3, 10, 12, 30, tzinfo=UTC))
    (alert,) = Alert.objects.filter(rule=idle)
    assert alert.labels["pool"] == pools["pool-b"].slug
    assert "€110.40" in alert.annotations["description"]
    assert "€92.00" in alert.annotations["description"]

    Budget.objects.create(team=teams["serving"], amount_per_month=Decimal("1000"))
    rule = make_rule(kind="budget", threshold_pct=Decimal("75"))
    evaluate_rule(rule, NOW)
    (alert,) = Alert.objects.filter(rule=rule)
    spent = _in_eur(_serving_spent_usd(HOURS_SO_FAR))
    assert f"€{spent:,.2f} of its €1,000.00 budget" in alert.annotations["description"]


@EUR
def test_an_alert_without_the_rate_to_compare_fails_naming_it(fleet):
    ExchangeRate.objects.filter(currency="EUR").delete()
    rule = make_rule(kind="idle_cost", threshold_usd=Decimal("100"), window_hours=24)
    with pytest.raises(Exception, match="no EUR exchange rate for 2026-03"):
        evaluate_rule(rule, datetime(2026, 3, 10, 12, 30, tzinfo=UTC))


def test_the_fleet_total_is_the_sum_of_the_hand_split():
    assert _fleet_total_usd() == Decimal(4 * 2 + 8 * 3 + 2 * 1 + 1 * 5) * MONTH_HOURS
    assert timedelta(hours=MONTH_HOURS) == MONTH_END - MONTH_START
