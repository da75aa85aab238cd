"""A summed table shows rows that add up to its total, or a rounding line saying by how
much (apps/core/money.py): three rows of $1/3 each and a total of $1.00 are shown as
$0.33 × 3 = $0.99 and a rounding line of $1.00 − $0.99 = $0.01, on the page and in the
exports."""

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.template.loader import render_to_string
from django.urls import reverse
from openpyxl import load_workbook

from apps.core.money import to_cents
from apps.reports.cost.rows import CostRow, total_row
from apps.reports.exports import cost_report_csv, cost_report_xlsx
from apps.showback import selectors as showback_selectors
from apps.showback.selectors import Showback, TeamSpend
from tests.factories import TeamFactory, UserFactory

THIRD_USD = Decimal(1) / 3  # $0.3333… to 28 digits: three of them make $1.00 shown


@pytest.fixture
def thirds(db, monkeypatch):
    """A month whose two teams and unattributed rest cost $1/3 each: $1.00 in all."""
    teams = [TeamFactory(name="Alpha", slug="alpha"), TeamFactory(name="Beta", slug="beta")]
    start, end = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)
    figures = Showback(
        start=start,
        end=end,
        # At a reporting currency of USD the amounts in it are the dollars.
        teams={team.pk: TeamSpend(team=team, cost_usd=THIRD_USD, cost=THIRD_USD) for team in teams},
        unattributed=TeamSpend(team=None, cost_usd=THIRD_USD, cost=THIRD_USD),
        pools={},
        pool_cost_usd={},
    )
    assert to_cents(figures.total_usd) == Decimal("1.00")
    monkeypatch.setattr(showback_selectors, "showback", lambda _start, _end, **_filters: figures)
    return teams


def test_the_showback_page_shows_a_rounding_line_of_one_cent(client, thirds):
    client.force_login(UserFactory(role="finance"))
    page = client.get(reverse("showback:showback"), {"month": "2026-03"}).content.decode()
    assert page.count("$0.33") == 3
    assert 'id="showback-rounding"' in page
    rounding = page.split('id="showback-rounding"')[1].split("</tr>")[0]
    assert "Rounding" in rounding and "$0.01" in rounding
    assert "$1.00" in page.split('id="showback-total"')[1]


def test_the_showback_csv_and_xlsx_end_with_the_rounding_line_and_the_total(client, thirds):
    client.force_login(UserFactory(role="finance"))
    url = reverse("showback:showback_export")
    text = client.get(url, {"format": "csv", "month": "2026-03"}).content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1:] == [
        ["Alpha", "alpha", "0.33", "0.33", "USD", ""],
        ["Beta", "beta", "0.33", "0.33", "USD", ""],
        ["Unattributed (shared pools' rest)", "", "0.33", "0.33", "USD", ""],
        ["Rounding", "", "0.01", "0.01", "USD", ""],
        ["Fleet total", "", "1.00", "1.00", "USD", ""],
    ]
    # What finance does with the file: the lines above the total add up to it.
    assert sum(Decimal(row[2]) for row in rows[1:-1]) == Decimal(rows[-1][2])
    workbook = load_workbook(io.BytesIO(client.get(url, {"format": "xlsx"}).content))
    values = [row for row in workbook.active.iter_rows(min_row=2, values_only=True)]
    assert [(name, Decimal(str(cost))) for name, _slug, cost, *_rest in values[-2:]] == [
        ("Rounding", Decimal("0.01")),
        ("Fleet total", Decimal("1.00")),
    ]


def test_a_team_member_gets_no_total_and_no_rounding_line(client, thirds):
    client.force_login(UserFactory(teams=thirds[:1]))
    text = client.get(
        reverse("showback:showback_export"), {"format": "csv", "month": "2026-03"}
    ).content.decode()
    assert list(csv.reader(io.StringIO(text)))[1:] == [
        ["Alpha", "alpha", "0.33", "0.33", "USD", ""]
    ]


def _third_rows():
    return [
        CostRow(key=key, label=key.title(), cost_usd=THIRD_USD, idle_cost_usd=THIRD_USD)
        for key in ("a", "b", "c")
    ]


def test_the_cost_report_csv_has_a_rounding_line_above_the_total():
    rows = _third_rows()
    lines = list(csv.DictReader(io.StringIO(cost_report_csv(rows, total_row(rows)))))
    assert [line["Cost (USD)"] for line in lines] == ["0.33", "0.33", "0.33", "0.01", "1.00"]
    assert [line["Idle cost (USD)"] for line in lines] == ["0.33", "0.33", "0.33", "0.01", "1.00"]
    # Columns the rows add up in say 0.00 on the rounding line.
    assert lines[3]["Name"] == "Rounding" and lines[3]["Unmeasured cost (USD)"] == "0.00"
    assert lines[3]["Busy (GPU-hours)"] == ""
    assert (lines[4]["Key"], lines[4]["Name"]) == ("", "Total")


def test_the_cost_report_has_no_rounding_line_when_the_rows_add_up():
    rows = [CostRow(key=key, label=key, cost_usd=Decimal("0.25")) for key in "abcd"]
    lines = list(csv.DictReader(io.StringIO(cost_report_csv(rows, total_row(rows)))))
    assert [line["Cost (USD)"] for line in lines] == ["0.25"] * 4 + ["1.00"]


def test_the_cost_report_xlsx_has_the_rounding_line():
    rows = _third_rows()
    filters = {"group_by": "pool", "start": datetime(2026, 3, 1), "end": datetime(2026, 3, 31)}
    workbook = load_workbook(io.BytesIO(cost_report_xlsx(rows, filters, total_row(rows))))
    sheet = workbook["Cost report"]
    headers = [cell.value for cell in sheet[2]]
    cost = headers.index("Cost (USD)")
    lines = [(row[1], row[cost]) for row in sheet.iter_rows(min_row=3, values_only=True)]
    assert [(name, Decimal(str(value))) for name, value in lines] == [
        ("A", Decimal("0.33")),
        ("B", Decimal("0.33")),
        ("C", Decimal("0.33")),
        ("Rounding", Decimal("0.01")),
        ("Total", Decimal("1.00")),
    ]


def test_the_cost_report_page_footer_has_the_rounding_line():
    rows = _third_rows()
    html = render_to_string(
        "reports/_report_total.html",
        {"rows": rows, "total": total_row(rows), "explain_query": ""},
    )
    rounding = html.split('id="report-rounding"')[1].split("</tr>")[0]
    assert "Rounding" in rounding
    # Cost, idle and unmeasured: $0.01, $0.01 and $0.00.
    assert rounding.count("$0.01") == 2 and rounding.count("$0.00") == 1
    assert "$1.00" in html.split('id="report-total"')[1]


def test_the_showback_api_says_by_how_much_its_rows_miss_the_total(client, thirds):
    client.force_login(UserFactory(role="finance"))
    body = client.get(reverse("api-showback"), {"month": "2026-03"}).json()
    # Rows "0.33" × 3 = 0.99; total "1.00": rounding "0.01".
    assert [row["cost_usd"] for row in body["rows"]] == ["0.33", "0.33", "0.33"]
    assert (body["total_usd"], body["rounding_usd"]) == ("1.00", "0.01")
    client.force_login(UserFactory(teams=thirds[:1]))
    body = client.get(reverse("api-showback"), {"month": "2026-03"}).json()
    assert (body["total_usd"], body["rounding_usd"]) == (None, None)
