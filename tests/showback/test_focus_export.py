"""The FOCUS export (apps/showback/focus/) against hand computations and the cost report.

The fleet is tests/showback/fleet.py's March 2026: cloud pools whose GPU-hour costs its
price, a shared pool split by pod labels (B), a pool split by declared GPUs (D), a pool
without workloads (C) and the unallocated rest of A and B. Every figure is a product done
by hand; the rows' sum is also compared with the cost report of the same range and scope.
"""

import csv
import io
import json
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.scope import EVERYTHING, Scope
from apps.core.money import to_cents
from apps.currencies.models import ExchangeRate
from apps.pools.prices import record_prices
from apps.reports.cost import periods as report_periods
from apps.showback import periods
from apps.showback.focus.exports import FOCUS_VERSION, focus_csv, metadata
from apps.showback.focus.rows import MissingReportingRate, focus_rows
from tests.factories import UserFactory
from tests.showback.fleet import MONTH_END, MONTH_HOURS, MONTH_START, hand_split, make_fleet

DAY = timedelta(days=1)
LABELLED_DAY = datetime(2026, 3, 10, tzinfo=UTC)
# Pool prices (USD per GPU-hour) and GPUs, from tests/showback/fleet.py
PRICES = {"pool-a": (4, 2), "pool-b": (8, 3), "pool-c": (2, 1), "pool-d": (1, 5)}


def _report_total(start, end, scope=EVERYTHING) -> Decimal:
    rows = report_periods.cost_report(start, end, "pool", scope=scope)
    return to_cents(sum((row.cost_usd for row in rows), Decimal(0)))


def _cents(value) -> Decimal:
    return to_cents(Decimal(str(value)))


@pytest.fixture
def fleet(db):
    return make_fleet()


def test_a_day_has_one_row_per_pool_and_allocation_at_the_split_rule(fleet):
    rows = focus_rows(LABELLED_DAY, LABELLED_DAY + DAY)
    found = {(row.pool.slug, row.kind, row.label): row for row in rows}
    # A: 4 GPUs × $2 × 24 h = $192; a1 labels 2 GPU-h/h for 10 h, a2 1 GPU-h/h.
    assert found[("pool-a", "workload", "a1")].billed == _cents(2 * 10 * 2)
    assert found[("pool-a", "workload", "a2")].billed == _cents(1 * 10 * 2)
    assert found[("pool-a", "unallocated", "Unallocated capacity")].billed == _cents(
        4 * 2 * 24 - 60
    )
    # B: 8 GPUs × $3; b1 2, b2 3, b3 1 labelled GPU-h/h for 10 h.
    b1 = found[("pool-b", "workload", "b1")]
    assert b1.billed == _cents(2 * 10 * 3)
    assert b1.split_rule == "measured"
    assert b1.team.slug == "research"
    assert found[("pool-b", "workload", "b3")].team is None  # shared pool, no team
    # C: no workload, 2 GPUs × $1 × 24 h, unattributed, charged to its pool's team.
    rest_c = found[("pool-c", "unattributed", "Unattributed (pools without workloads)")]
    assert rest_c.billed == _cents(48)
    assert rest_c.gpu_hours == pytest.approx(48)
    assert rest_c.team.slug == "serving"
    # D: d1 declares its pool's only GPU: 1 × 24 h × $5.
    d1 = found[("pool-d", "workload", "d1")]
    assert (d1.billed, d1.gpu_hours, d1.split_rule) == (_cents(120), 24, "declared")
    assert d1.unit_price_usd == Decimal(5)
    for row in rows:
        assert (row.charge_start, row.charge_end) == (LABELLED_DAY, LABELLED_DAY + DAY)
        assert (row.billing_start, row.billing_end) == (MONTH_START, MONTH_END)
    hand_day = sum(gpus * price * 24 for gpus, price in PRICES.values())
    assert sum(row.billed for row in rows) == _cents(hand_day)
    assert sum(row.billed for row in rows) == _report_total(LABELLED_DAY, LABELLED_DAY + DAY)


def test_a_range_sums_to_the_cost_report_and_to_each_teams_showback(fleet):
    # Three days around the labelled one: 72 hours of every pool.
    start, end = LABELLED_DAY - DAY, LABELLED_DAY + 2 * DAY
    rows = focus_rows(start, end)
    hand_total = sum(gpus * price * 72 for gpus, price in PRICES.values())
    assert sum(row.billed for row in rows) == _cents(hand_total)
    assert sum(row.billed for row in rows) == _report_total(start, end)
    by_team = defaultdict(Decimal)
    for row in rows:
        by_team[row.team.slug if row.team else "unattributed"] += row.billed
    hand = hand_split(hours_a=72, hours_b=72, hours_c=72, hours_d=72)
    assert dict(by_team) == {team: _cents(usd) for team, usd in hand.items()}
    # One row per pool, day and allocation: C has one a day.
    assert len([row for row in rows if row.pool.slug == "pool-c"]) == 3


EUR_PER_USD = Decimal("0.92")


def test_in_euros_every_amount_is_its_dollars_at_the_months_rate(fleet, settings):
    settings.REPORTING_CURRENCY = "EUR"
    ExchangeRate.objects.create(month=date(2026, 3, 1), currency="EUR", units_per_usd=EUR_PER_USD)
    rows = focus_rows(LABELLED_DAY, LABELLED_DAY + DAY)
    found = {(row.pool.slug, row.kind, row.label): row for row in rows}
    # D: d1 declares its pool's only GPU: 1 × 24 h × $5 = $120 = €110.40 at 0.92.
    d1 = found[("pool-d", "workload", "d1")]
    assert d1.billed == Decimal("110.40")
    assert d1.unit_price == Decimal(5) * EUR_PER_USD
    hand_day_eur = sum(gpus * price * 24 for gpus, price in PRICES.values()) * EUR_PER_USD
    assert sum(row.billed for row in rows) == _cents(hand_day_eur)
    report = report_periods.cost_report(LABELLED_DAY, LABELLED_DAY + DAY, "pool")
    assert sum(row.billed for row in rows) == to_cents(sum((row.cost for row in report), 0))

    written = list(csv.DictReader(io.StringIO(focus_csv(rows))))
    assert {line["BillingCurrency"] for line in written} == {"EUR"}
    (d1_line,) = [line for line in written if line["x_Workload"] == "d1"]
    assert d1_line["BilledCost"] == "110.40"
    # Unit prices and list costs keep the rate's places: FOCUS asks ListCost to be the
    # unit price times the quantity exactly.
    assert Decimal(d1_line["ListUnitPrice"]) == Decimal("4.6")
    assert Decimal(d1_line["ListCost"]) == Decimal("110.4")


def test_in_euros_a_month_without_its_rate_is_refused_by_name(fleet, settings, tmp_path):
    settings.REPORTING_CURRENCY = "EUR"
    with pytest.raises(MissingReportingRate, match="No EUR exchange rate for 2026-03"):
        focus_rows(LABELLED_DAY, LABELLED_DAY + DAY)
    user = UserFactory(role="reader")
    api = APIClient()
    api.force_authenticate(user)
    answer = api.get(reverse("api-export-focus"), {"start": "2026-03-10", "end": "2026-03-11"})
    assert answer.status_code == 400
    assert "No EUR exchange rate for 2026-03" in answer.json()["detail"][0]
    with pytest.raises(CommandError, match="No EUR exchange rate for 2026-03"):
        call_command(
            "export_focus",
            start="2026-03-10",
            end="2026-03-11",
            output=str(tmp_path / "march.csv"),
        )
    assert not (tmp_path / "march.csv").exists()


def test_a_teams_export_sums_to_its_cost_report_and_names_no_other_teams_workload(fleet):
    teams, _pools, _workloads = fleet
    scope = Scope(everything=False, team_ids=frozenset({teams["research"].id}))
    rows = focus_rows(LABELLED_DAY, LABELLED_DAY + DAY, scope=scope)
    # Research's pool A and the shared B and D; not Serving's C.
    assert {row.pool.slug for row in rows} == {"pool-a", "pool-b", "pool-d"}
    labels = {row.label for row in rows}
    assert not labels & {"a2", "b2"}  # Serving's workloads, summed without their names
    others = {row.pool.slug: row for row in rows if row.kind == "other_teams"}
    assert others["pool-a"].billed == _cents(1 * 10 * 2)
    assert others["pool-b"].billed == _cents(3 * 10 * 3)
    hand = 4 * 2 * 24 + 8 * 3 * 24 + 1 * 5 * 24
    assert sum(row.billed for row in rows) == _cents(hand)
    assert sum(row.billed for row in rows) == _report_total(LABELLED_DAY, LABELLED_DAY + DAY, scope)


def test_a_closed_month_exports_its_frozen_figures_and_its_adjustment_later(fleet):
    _teams, pools, _workloads = fleet
    periods.close_month(date(2026, 3, 1), UserFactory(role="finance"))
    # C's price doubles from 20 March, back-dated into the closed month: 12 days of C.
    pool_c = pools["pool-c"]
    pool_c.on_demand_price_per_gpu_hour_usd = Decimal(2)
    record_prices(pool_c, datetime(2026, 3, 20, tzinfo=UTC))
    march = focus_rows(MONTH_START, MONTH_END)
    c_rows = [row for row in march if row.pool.slug == "pool-c"]
    assert len(c_rows) == 1  # the month, one charge period, as frozen
    assert c_rows[0].billed == _cents(2 * 1 * MONTH_HOURS)
    assert (c_rows[0].charge_start, c_rows[0].charge_end) == (MONTH_START, MONTH_END)
    assert {row.closed_month for row in march} == {"2026-03"}
    assert sum(row.billed for row in march) == _report_total(MONTH_START, MONTH_END)
    # April's first two days book the adjustment: 2 GPUs × 12 days × 24 h × ($2 − $1).
    april = datetime(2026, 4, 1, tzinfo=UTC)
    later = focus_rows(april, april + 2 * DAY)
    adjustments = [row for row in later if row.kind == "adjustment"]
    assert [(row.pool.slug, row.billed) for row in adjustments] == [
        ("pool-c", _cents(2 * 12 * 24 * 1))
    ]
    assert adjustments[0].adjusted_month == "2026-03"
    assert (adjustments[0].billing_start, adjustments[0].charge_start) == (april, MONTH_START)
    hand_days = sum(gpus * price * 48 for gpus, price in PRICES.values()) + 2 * 48 * 1
    assert sum(row.billed for row in later) == _cents(hand_days + 2 * 12 * 24)
    assert sum(row.billed for row in later) == _report_total(april, april + 2 * DAY)


def test_the_csv_is_machine_readable_focus(fleet):
    rows = focus_rows(LABELLED_DAY, LABELLED_DAY + DAY)
    table = list(csv.DictReader(io.StringIO(focus_csv(rows))))
    assert len(table) == len(rows)
    b1 = next(line for line in table if line["x_Workload"] == "b1")
    assert b1["BilledCost"] == b1["EffectiveCost"] == "60.00"
    assert b1["ChargePeriodStart"] == "2026-03-10T00:00:00Z"
    assert b1["BillingPeriodEnd"] == "2026-04-01T00:00:00Z"
    assert b1["BillingCurrency"] == "USD"
    assert b1["ChargeCategory"] == "Usage" and b1["ChargeClass"] == ""
    assert json.loads(b1["Tags"]) == {
        "gpufleet/pool": "pool-b",
        "gpufleet/team": "research",
        "gpufleet/workload": "b1",
    }
    assert b1["SubAccountId"] == "research" and b1["x_SplitRule"] == "measured"
    # List and contracted cost: the price in force × the GPU-hours, exactly.
    assert Decimal(b1["ListCost"]) == Decimal(b1["ListUnitPrice"]) * Decimal(b1["PricingQuantity"])
    assert Decimal(b1["ListUnitPrice"]) == 3 and Decimal(b1["ConsumedQuantity"]) == 20
    assert metadata()["Schemas"][0]["FocusVersion"] == FOCUS_VERSION == "1.2"
    names = [column["ColumnName"] for column in metadata()["Schemas"][0]["ColumnDefinition"]]
    assert names == list(table[0])


# --- API, page and command ---------------------------------------------------------------


def _api(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_the_api_answers_csv_for_the_callers_teams(fleet):
    teams, _pools, _workloads = fleet
    member = UserFactory(role="reader", teams=[teams["serving"]])
    response = _api(member).get("/api/v1/exports/focus/?start=2026-03-10&end=2026-03-11")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["FOCUS-Version"] == "1.2"
    assert "gpufleet-focus-1.2-2026-03-10-2026-03-11.csv" in response["Content-Disposition"]
    table = list(csv.DictReader(io.StringIO(response.content.decode())))
    # Serving's C and the shared B and D; Research's A is out of scope.
    assert {line["x_PoolSlug"] for line in table} == {"pool-b", "pool-c", "pool-d"}
    assert sum(Decimal(line["BilledCost"]) for line in table) == _cents(
        8 * 3 * 24 + 2 * 1 * 24 + 1 * 5 * 24
    )
    assert "b1" not in {line["x_Workload"] for line in table}  # Research's, on shared B


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("end=2026-03-11", "start"),
        ("start=2026-03-10", "end"),
        ("start=10/03/2026&end=2026-03-11", "start"),
        ("start=2026-03-11&end=2026-03-10", "end"),
        ("start=2025-01-01&end=2026-03-10", "end"),
    ],
)
def test_the_api_names_the_field_of_a_bad_range(db, query, field):
    response = _api(UserFactory(role="reader")).get(f"/api/v1/exports/focus/?{query}")
    assert response.status_code == 400
    assert field in response.json()


def test_the_api_and_the_page_refuse_anonymous_callers(db):
    assert APIClient().get(
        "/api/v1/exports/focus/?start=2026-03-10&end=2026-03-11"
    ).status_code in (
        401,
        403,
    )
    response = Client().get(reverse("showback:focus_export") + "?month=2026-03")
    assert response.status_code == 302 and "login" in response["Location"]


def test_the_pages_offer_the_export_of_their_range(fleet, client):
    teams, _pools, _workloads = fleet
    client.force_login(UserFactory(role="reader", teams=[teams["research"]]))
    showback = client.get(reverse("showback:showback") + "?month=2026-03").content.decode()
    assert f"{reverse('showback:focus_export')}?month=2026-03" in showback
    report = client.get(
        reverse("reports:report") + "?start=2026-03-10&end=2026-03-10&group_by=pool"
    ).content.decode()
    assert "start=2026-03-10&amp;through=2026-03-10" in report
    response = client.get(reverse("showback:focus_export") + "?start=2026-03-10&through=2026-03-10")
    table = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {line["x_PoolSlug"] for line in table} == {"pool-a", "pool-b", "pool-d"}
    bad = client.get(reverse("showback:focus_export") + "?start=2026-03-10&end=yesterday")
    assert bad.status_code == 302
    assert "End:" in client.get(bad["Location"]).content.decode()


def test_the_command_writes_the_dataset_and_its_metadata(fleet, tmp_path):
    output = tmp_path / "march-10.csv"
    call_command("export_focus", start="2026-03-10", end="2026-03-11", output=str(output))
    table = list(csv.DictReader(io.StringIO(output.read_text())))
    hand_day = sum(gpus * price * 24 for gpus, price in PRICES.values())
    assert sum(Decimal(line["BilledCost"]) for line in table) == _cents(hand_day)
    sidecar = json.loads((tmp_path / "march-10.csv.focus-metadata.json").read_text())
    assert sidecar["Schemas"][0]["FocusVersion"] == "1.2"
    with pytest.raises(CommandError, match="--start"):
        call_command("export_focus", start="March", end="2026-03-11", output=str(output))


def test_a_client_accepting_only_csv_gets_the_csv_or_its_error(fleet):
    api = _api(UserFactory(role="finance"))
    response = api.get(
        "/api/v1/exports/focus/?start=2026-03-10&end=2026-03-11", HTTP_ACCEPT="text/csv"
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    refused = api.get("/api/v1/exports/focus/?start=2026-03-10", HTTP_ACCEPT="text/csv")
    assert refused.status_code == 400 and "end" in json.loads(refused.content)
    assert refused["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("name", "written"),
    [
        ("Training · H100 · Shanghai", "Training - H100 - Shanghai"),
        ("Équipe Zürich", "Equipe Zurich"),
        ("训练集群", "the-slug"),
        ("=cmd", "=cmd"),
    ],
)
def test_focus_string_columns_are_ascii_and_the_x_columns_exact(name, written):
    from apps.showback.focus.exports import ascii_text

    assert ascii_text(name, "the-slug") == written
