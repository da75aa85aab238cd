"""The reports table sorts by each of its columns both ways, rows without a figure last,
keeps the filters in its sort links, swaps alone, and leaves the exports as they were
(tests/reports/test_cost_report.py's fleet: grouped by purpose, the purpose without pools
has no utilisation or unit costs)."""

import csv
import io
import re

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from apps.reports.tables import ReportTable
from tests.reports.test_cost_report import fleet  # noqa: F401 (a fixture)
from tests.reports.test_exports import API_RANGE, PAGE_FILTERS

TABLE = {"HX-Request": "true", "HX-Target": "report-rows"}
# Column name → the CostRow figure it shows and sorts by.
FIGURES = {name: column.order_by[0] for name, column in ReportTable.base_columns.items()}


@pytest.fixture
def reader_client(client, make_user):
    client.force_login(make_user("reader"))
    return client


def _row_keys(html: str) -> list[str]:
    return re.findall(r'<tr data-key="([^"]+)"', html)


def _expected_order(rows, figure, *, descending):
    """Rows with the figure by it, ties by label, then the rows without it by label; the
    whole order reversed when descending, except that the rows without stay last."""
    known = sorted(
        (row[figure], row["label"], row["key"]) for row in rows if row[figure] is not None
    )
    missing = sorted((row["label"], row["key"]) for row in rows if row[figure] is None)
    if descending:
        known, missing = known[::-1], missing[::-1]
    return [key for *_, key in known] + [key for _, key in missing]


@pytest.mark.django_db
@pytest.mark.parametrize("column", sorted(FIGURES))
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_each_column_sorts_both_ways_with_missing_figures_last(
    reader_client,
    fleet,  # noqa: F811
    column,
    descending,
):
    figure = FIGURES[column]
    rows = reader_client.get(
        reverse("api-report-cost"), {**API_RANGE, "group_by": "purpose"}
    ).json()
    assert len(rows) == 3
    sort = f"-{column}" if descending else column
    response = reader_client.get(
        reverse("reports:report"), {**PAGE_FILTERS, "group_by": "purpose", "sort": sort}
    )
    assert _row_keys(response.content.decode()) == _expected_order(
        rows, figure, descending=descending
    )


@pytest.mark.django_db
def test_the_header_says_how_it_is_sorted_and_its_links_keep_the_filters(reader_client, fleet):  # noqa: F811
    params = {**PAGE_FILTERS, "group_by": "purpose", "purpose": "", "sort": "-cost"}
    body = reader_client.get(reverse("reports:report"), params).content.decode()
    filters = "start=2026-03-09&amp;end=2026-03-12&amp;group_by=purpose&amp;purpose="
    assert f'class="table-sort desc" href="?{filters}&amp;sort=cost"' in body
    assert f'href="?{filters}&amp;sort=idle"' in body
    assert body.count('hx-target="#report-rows" hx-swap="outerHTML" hx-push-url="true"') == len(
        FIGURES
    )
    # Units stay in the headers, the group in the first one.
    assert ">Purpose</a>" in body
    assert 'Cost<br><span class="small text-secondary text-nowrap">USD</span></a>' in body


@pytest.mark.django_db
def test_a_sort_swaps_the_table_alone(reader_client, fleet):  # noqa: F811
    params = {**PAGE_FILTERS, "group_by": "pool", "sort": "-busy"}
    response = reader_client.get(reverse("reports:report"), params, headers=TABLE)
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="report-rows">')
    assert 'id="report-table"' in body and 'id="report-total"' in body
    assert "<html" not in body and "<form" not in body and "chart-report" not in body
    # The owned training pool has 16 GPUs to the cloud pool's 8: more busy GPU-hours.
    assert _row_keys(body) == ["owned-training", "cloud-inference"]
    # The same table as in the whole page for the same query.
    page = reader_client.get(reverse("reports:report"), params).content.decode()
    table = re.compile(
        r'<table class="table card-table table-vcenter table-sm" id="report-table">.*?</table>',
        re.S,
    )
    assert table.search(body).group(0) == table.search(page).group(0)


@pytest.mark.django_db
def test_a_sort_of_filters_that_cannot_make_a_table_gets_the_results(reader_client, fleet):  # noqa: F811
    params = {"start": "2026-03-12", "end": "2026-03-09", "sort": "cost"}
    response = reader_client.get(reverse("reports:report"), params, headers=TABLE)
    assert response["HX-Retarget"] == "#report-results"
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="report-results">')
    assert "The end day must be on or after the start day." in body


@pytest.mark.django_db
@pytest.mark.parametrize("group_by", ["pool", "purpose", "workload"])
def test_exports_are_the_same_whatever_the_sort(reader_client, fleet, group_by):  # noqa: F811
    url = reverse("reports:report")
    filters = {**PAGE_FILTERS, "group_by": group_by}
    plain_csv = reader_client.get(url, {**filters, "export": "csv"}).content.decode()
    sorted_csv = reader_client.get(url, {**filters, "sort": "-cost", "export": "csv"})
    assert sorted_csv.content.decode() == plain_csv
    assert len(list(csv.reader(io.StringIO(plain_csv)))) > 2

    def sheets(response):
        workbook = load_workbook(io.BytesIO(response.content))
        return {
            sheet.title: [[cell.value for cell in row] for row in sheet.iter_rows()]
            for sheet in workbook.worksheets
        }

    plain_xlsx = sheets(reader_client.get(url, {**filters, "export": "xlsx"}))
    assert sheets(reader_client.get(url, {**filters, "sort": "-cost", "export": "xlsx"})) == (
        plain_xlsx
    )
