"""The showback split against a hand computation and the fleet's total from the hourly
ledger in raw SQL; who sees which rows; the exports write names as data."""

import csv
import io

import pytest
from django.db import connection
from django.urls import reverse
from openpyxl import load_workbook

from apps.accounts.models import Team
from apps.accounts.scope import EVERYTHING
from apps.showback.selectors import showback
from apps.showback.views import showback_rows
from tests.factories import TeamFactory, UserFactory
from tests.money import cents
from tests.showback.fleet import MONTH_END, MONTH_HOURS, MONTH_START, hand_split, make_fleet


@pytest.fixture
def fleet(db):
    return make_fleet()


def ledger_total_usd(start, end) -> float:
    """The fleet's cost over [start, end) straight from the tables: measured hours at the
    pool's fixed price × capacity (these cloud pools have no power price), the pool's
    other paid hours at GPUs × fixed price."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT p.id, p.gpu_count, p.fixed_price_per_gpu_hour_usd, p.price_per_gpu_kwh_usd,
                   COALESCE(SUM(h.capacity_gpu_hours) FILTER (WHERE h.reporting_gpus > 0), 0),
                   COUNT(h.id) FILTER (WHERE h.reporting_gpus > 0)
            FROM pools_pool p
            LEFT JOIN telemetry_poolhourlyusage h
              ON h.pool_id = p.id AND h.hour >= %s AND h.hour < %s
            GROUP BY p.id
            """,
            [start, end],
        )
        total = 0.0
        hours = (end - start).total_seconds() / 3600
        for _id, gpus, fixed, per_kwh, capacity, measured_hours in cursor.fetchall():
            assert float(per_kwh) == 0
            total += float(fixed) * (float(capacity) + gpus * (hours - measured_hours))
        return total


def test_the_split_matches_a_hand_computation(fleet):
    teams, _pools, _workloads = fleet
    figures = showback(MONTH_START, MONTH_END)
    hand = hand_split()
    assert figures.teams[teams["research"].pk].cost_usd == pytest.approx(hand["research"])
    assert figures.teams[teams["serving"].pk].cost_usd == pytest.approx(hand["serving"])
    assert figures.unattributed.cost_usd == pytest.approx(hand["unattributed"])
    # Serving's share of Research's pool A is a2's attributed cost: 80 × 10 ÷ 40.
    pool_a = _pools["pool-a"]
    assert figures.teams[teams["serving"].pk].by_pool_usd[pool_a.pk] == pytest.approx(20)
    assert figures.teams[teams["research"].pk].by_pool_usd[pool_a.pk] == pytest.approx(
        4 * 2 * MONTH_HOURS - 20
    )


def test_teams_and_unattributed_add_up_to_the_ledger(fleet):
    figures = showback(MONTH_START, MONTH_END)
    assert figures.total_usd == pytest.approx(ledger_total_usd(MONTH_START, MONTH_END))
    assert figures.total_usd == pytest.approx(sum(hand_split().values()))
    assert figures.total_usd == pytest.approx(sum(figures.pool_cost_usd.values()))


def test_a_team_member_sees_only_their_teams_rows(client, fleet):
    teams, _pools, _workloads = fleet
    member = UserFactory(teams=[teams["serving"]])
    client.force_login(member)
    page = client.get(reverse("showback:showback"), {"month": "2026-03"}).content.decode()
    assert "Serving" in page and "Research" not in page and "Unattributed" not in page
    api = client.get(reverse("api-showback"), {"month": "2026-03"}).json()
    assert [row["team"] for row in api["rows"]] == ["serving"]
    assert api["total_usd"] is None
    assert api["rows"][0]["cost_usd"] == cents(hand_split()["serving"])

    client.force_login(UserFactory(role="finance"))
    api = client.get(reverse("api-showback"), {"month": "2026-03"}).json()
    assert [row["team"] for row in api["rows"]] == ["research", "serving", None]
    assert api["total_usd"] == cents(sum(hand_split().values()))


@pytest.mark.django_db
def test_a_month_that_is_not_one_is_refused(client):
    client.force_login(UserFactory())
    response = client.get(reverse("api-showback"), {"month": "2026-13"})
    assert response.status_code == 400 and "month" in response.json()
    page = client.get(reverse("showback:showback"), {"month": "March"})
    assert "is not a month: type it as 2026-12" in page.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["reader", "finance", "admin"])
def test_exports_write_names_as_data(client, role):
    TeamFactory(name='=HYPERLINK("http://evil")', slug="evil")
    TeamFactory(name="@SUM(1)", slug="at")
    user = UserFactory(role=role, teams=list(Team.objects.all()))
    client.force_login(user)
    url = reverse("showback:showback_export")
    text = client.get(url, {"format": "csv", "month": "2026-03"}).content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == [
        "Team",
        "Slug",
        "Cost (USD)",
        "Cost in the reporting currency (USD)",
        "Currency",
        "Missing exchange rates",
    ]
    names = [row[0] for row in rows[1:]]
    assert '\'=HYPERLINK("http://evil")' in names and "'@SUM(1)" in names
    workbook = load_workbook(io.BytesIO(client.get(url, {"format": "xlsx"}).content))
    cells = [row[0] for row in workbook.active.iter_rows(min_row=2)]
    evil = next(cell for cell in cells if cell.value.startswith("=HYPERLINK"))
    assert evil.data_type == "s" and evil.quotePrefix


def test_the_rows_of_a_fleet_wide_reader_end_with_the_unattributed_rest(fleet):
    rows = showback_rows(showback(MONTH_START, MONTH_END), EVERYTHING)
    assert [row["slug"] for row in rows] == ["research", "serving", None]


def test_the_team_pages_show_the_teams_in_scope(client, fleet):
    teams, _pools, _workloads = fleet
    client.force_login(UserFactory(teams=[teams["serving"]]))
    listing = client.get(reverse("showback:team_list")).content.decode()
    assert "Serving" in listing and "Research" not in listing
    assert client.get(reverse("showback:team_detail", args=["research"])).status_code == 404
    detail = client.get(reverse("showback:team_detail", args=["serving"])).content.decode()
    assert "POOL-C" in detail
