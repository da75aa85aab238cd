"""The reports page, its CSV and XLSX exports and the cost API say the same numbers, for
the same filters, in the units their headers name (tests/reports/test_cost_report.py's
fleet)."""

import csv
import io
import re
from decimal import Decimal
from html import unescape

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from apps.reports.cost import explain
from apps.reports.exports import COLUMNS
from tests.reports.test_cost_report import fleet  # noqa: F401 (a fixture)
from tests.reports.test_explain import SUMS

PAGE_FILTERS = {"start": "2026-03-09", "end": "2026-03-12"}
# The same range as the API takes it: four whole UTC days.
API_RANGE = {"start": "2026-03-09T00:00:00Z", "end": "2026-03-13T00:00:00Z"}
# A currency is its ISO 4217 code: USD, or the reporting currency's.
UNIT = re.compile(r"\((GPU-hours|%|[A-Z]{3}|count)\)$")
# The page's cells, in column order, written out as the page formats them; money comes
# from the API as decimal strings, amounts to the cent and unit prices to 4 decimals.
PAGE_CELLS = (
    ("capacity_gpu_hours", lambda v: f"{v:,.0f}"),
    ("busy_gpu_hours", lambda v: f"{v:,.0f}"),
    ("utilization_pct", lambda v: f"{v:,.1f} %"),
    ("cost_usd", lambda v: f"${Decimal(v):,.2f}"),
    ("idle_cost_usd", lambda v: f"${Decimal(v):,.2f}"),
    ("unmeasured_cost_usd", lambda v: f"${Decimal(v):,.2f}"),
    ("cost_per_busy_gpu_hour_usd", lambda v: f"${Decimal(v):,.4f}"),
    ("requests", lambda v: f"{v:,}"),
    ("cost_per_1k_requests_usd", lambda v: f"${Decimal(v):,.4f}"),
    ("cost_per_1m_tokens_usd", lambda v: f"${Decimal(v):,.4f}"),
    ("lost_gpu_hours", lambda v: f"{v:,.1f}"),
    ("cost_per_effective_training_gpu_hour_usd", lambda v: f"${Decimal(v):,.4f}"),
)
ADDITIVE = SUMS  # the figures a total adds up
MONEY = {"cost_usd", "unmeasured_cost_usd", "idle_cost_usd", "interruption_cost_usd"}


def _number(value):
    """An API figure as a number: money (a decimal string) as a Decimal."""
    return Decimal(value) if isinstance(value, str) else value


def _page_cells(html: str) -> dict[str, list[str]]:
    """Row key (``total`` for the footer) → the text of its figure cells."""
    rows = {}
    # Each row's attributes: its key, then django-tables2's even/odd class.
    for key, body in re.findall(r'<tr data-key="([^"]+)"[^>]*>(.*?)</tr>', html, re.S):
        rows[key] = [
            unescape(text) for text in re.findall(r'class="explain-link"[^>]*>([^<]*)</a>', body)
        ]
    footer = re.search(r'<tr class="fw-bold" id="report-total">(.*?)</tr>', html, re.S).group(1)
    rows["total"] = [
        unescape(t) for t in re.findall(r'class="explain-link"[^>]*>([^<]*)</a>', footer)
    ]
    return rows


def _close(left, right):
    if right is None:
        return left in (None, "")
    if isinstance(right, str | Decimal):  # money: the same decimal, to the cent
        return Decimal(str(left)) == Decimal(right)
    return float(left) == pytest.approx(right, rel=1e-9, abs=1e-6)


@pytest.mark.django_db
@pytest.mark.parametrize("group_by", ["pool", "purpose", "workload"])
def test_page_csv_xlsx_and_api_carry_the_same_numbers(client, make_user, fleet, group_by):  # noqa: F811
    client.force_login(make_user("procurement"))
    api_rows = client.get(
        reverse("api-report-cost"), {**API_RANGE, "group_by": group_by, "explain": "1"}
    ).json()
    api = {row["key"]: row for row in api_rows}
    # Money sums the rows as shown: the fleet's amounts are whole cents, so the rows add up
    # to the total with no rounding line (apps/core/money.py; tests/core/test_money.py).
    total = {name: sum(_number(row[name]) for row in api_rows) for name in ADDITIVE}
    filters = {**PAGE_FILTERS, "group_by": group_by}
    url = reverse("reports:report")

    # The page.
    cells = _page_cells(client.get(url, filters).content.decode())
    assert set(cells) == {*api, "total"}
    for key, texts in cells.items():
        values = api.get(key) or total
        for (name, written), text in zip(PAGE_CELLS, texts, strict=True):
            value = values.get(name)
            if key == "total" and name not in ADDITIVE:
                continue  # ratios of the total are checked against the exports below
            assert text == ("—" if value is None else written(value)), (key, name)

    # CSV: one header per column, each with its unit; the total row last, key blank.
    response = client.get(url, {**filters, "export": "csv"})
    reader = list(csv.reader(io.StringIO(response.content.decode())))
    headers, *lines = reader
    assert headers == [str(column.header) for column in COLUMNS]
    # Numbers carry their unit; the one word column says how a figure is known.
    assert all(UNIT.search(str(column.header)) for column in COLUMNS[2:] if not column.is_text), (
        headers
    )
    *lines, csv_total = lines
    assert csv_total[:2] == ["", "Total"]
    assert all(line[1] != "Rounding" for line in lines)
    for line in lines:
        row = api[line[0]]
        for column, text in zip(COLUMNS[2:], line[2:], strict=True):
            name = column.key
            if column.is_text:
                assert text == (row[name] or ""), (line[0], name, text)
                continue
            assert _close(text, row[name]), (line[0], name, text)
    for column, text in zip(COLUMNS[2:], csv_total[2:], strict=True):
        if column.key in ADDITIVE:
            assert _close(text, total[column.key]), column.key
    # Percentages are percentages: 100 × busy ÷ measured capacity, not a fraction.
    for line in lines:
        row = api[line[0]]
        if row["measured_capacity_gpu_hours"]:
            pct = float(line[headers.index("Utilisation (%)")])
            assert pct == pytest.approx(
                100 * row["busy_gpu_hours"] / row["measured_capacity_gpu_hours"]
            )
            assert pct > 1  # the fleet's pools are busy well over 1 %

    # XLSX: numbers as numbers with a number format, the same rows and the total.
    workbook = load_workbook(io.BytesIO(client.get(url, {**filters, "export": "xlsx"}).content))
    sheet = workbook["Cost report"]
    assert [cell.value for cell in sheet[2]] == headers
    xlsx_rows = list(sheet.iter_rows(min_row=3))
    assert [row[1].value for row in xlsx_rows][-1] == "Total"
    for cells_ in xlsx_rows:
        key = cells_[0].value
        values = api[key] if key else total
        for column, cell in zip(COLUMNS[2:], cells_[2:], strict=True):
            name, number_format = column.key, column.number_format()
            if key is None and name not in ADDITIVE:
                continue
            expected = values[name]
            if expected is None:
                assert cell.value is None, (key, name)
                continue
            if column.is_text:
                assert cell.value == expected, (key, name)
                continue
            assert isinstance(cell.value, int | float), (key, name, cell.value)
            assert cell.number_format == number_format
            if isinstance(expected, str | Decimal):
                assert Decimal(str(cell.value)) == Decimal(expected), (key, name)
                continue
            assert cell.value == pytest.approx(expected, rel=1e-12, abs=1e-9), (key, name)

    # The explanation sheet: every figure of every row, its last step the figure itself.
    steps = workbook["How each figure is computed"]
    header = [cell.value for cell in steps[1]]
    assert header[:4] == ["Key", "Name", "Figure", "Step"] and "Value" in header
    value_column = header.index("Value")
    last_value = {}
    for line in steps.iter_rows(min_row=2):
        value = line[value_column].value
        assert value is None or isinstance(value, int | float), line[5].value
        last_value[(line[0].value, line[2].value)] = value
    for key, row in api.items():
        for figure in explain.REPORTED:
            label = explain.FIGURES[figure][0]
            shown = row[figure]
            if isinstance(shown, str):  # money: the steps at full precision, within rounding
                places = len(shown.split(".")[1])
                tolerance = Decimal(5).scaleb(-places - 1)
                assert abs(Decimal(str(last_value[(key, label)])) - Decimal(shown)) <= tolerance
                continue
            assert last_value[(key, label)] == pytest.approx(shown), (key, figure)
            assert row["explain"][figure][-1]["value"] == pytest.approx(shown)
    for figure in ADDITIVE & set(explain.REPORTED):
        label = explain.FIGURES[figure][0]
        assert float(last_value[(None, label)]) == pytest.approx(float(total[figure]), abs=0.005), (
            figure
        )
