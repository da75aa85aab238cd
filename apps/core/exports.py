"""The one export pipeline: a column spec that CSV, XLSX and PDF writers all read, and the
rules every cell goes through, so a name is data, never a formula or markup.

A ``Column`` says what a column is once: its header (with its unit), how to get its value
from a row, and its cell type (text, integer, decimal, money, percent, date, date and time).
``csv_table``/``CsvFile``, ``xlsx_table`` and ``pdf_table`` write the same columns, so a
figure has the same header and the same value in every format of an export; each export
lists its columns in ``EXPORTS`` (``register``), which a test walks.

Spreadsheets follow OWASP's CSV-injection rule: a text cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return is one a spreadsheet would run as a formula.
In a CSV, which has no types, such a cell is written with a leading ``'``. In an XLSX the
text is kept exactly, as a string cell (never a formula), and such a cell also carries
Excel's quote prefix, so it stays text even when someone edits it. Numbers are not text
and stay numbers: -5 is written as -5.

PDFs (reportlab) escape ``&``, ``<`` and ``>``, so a name's ``<font>``, ``<img src>`` or
``<a href>`` is printed, never interpreted nor fetched, and an unbalanced tag cannot stop
the export. A run of characters Helvetica lacks (⌈ ⌉ Σ −, Chinese, most alphabets) is
drawn with a font vendored in ``apps/core/fonts/`` that has them, embedded, so every
viewer shows the same glyphs without any installed font.
"""

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum
from functools import cache
from pathlib import Path
from xml.sax.saxutils import escape

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")

FONTS_DIR = Path(__file__).parent / "fonts"
# (reportlab font name, file): tried in this order for a character Helvetica lacks.
PDF_FALLBACK_FONTS = (
    ("DejaVuSans", "DejaVuSans.ttf"),
    ("DroidSansFallback", "DroidSansFallbackFull.ttf"),
)
# A character no font has is drawn by the first fallback (its "missing glyph" box).
PDF_MISSING_GLYPH_FONT = PDF_FALLBACK_FONTS[0][0]


# --- spreadsheets -------------------------------------------------------------------------


def starts_like_formula(text: str) -> bool:
    return text.startswith(FORMULA_TRIGGERS)


def csv_cell(value):
    """A CSV cell: text that would start a formula gets a leading ``'``; anything that is
    not text (numbers, dates, None) is returned unchanged."""
    if isinstance(value, str) and starts_like_formula(value):
        return "'" + value
    return value


def set_xlsx_value(cell, value) -> None:
    """Put ``value`` in an openpyxl cell: text as a string cell whatever it starts with
    (openpyxl would otherwise store text starting with "=" as a formula), numbers and
    dates as they are."""
    if not isinstance(value, str):
        cell.value = value
        return
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    # The control characters XML 1.0 cannot hold would make openpyxl refuse the file.
    cell.value = ILLEGAL_CHARACTERS_RE.sub("\N{REPLACEMENT CHARACTER}", value)
    cell.data_type = "s"
    if starts_like_formula(value):
        cell.quotePrefix = True


def write_xlsx_cell(sheet, row: int, column: int, value):
    """``sheet.cell(row, column, value)`` through ``set_xlsx_value``; returns the cell."""
    cell = sheet.cell(row=row, column=column)
    set_xlsx_value(cell, value)
    return cell


# --- PDF ----------------------------------------------------------------------------------


@cache
def _pdf_fallback_glyphs() -> tuple[tuple[str, frozenset], ...]:
    """Register the fallback fonts with reportlab once per process; (name, the code points
    it has) for each."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    fonts = []
    for name, filename in PDF_FALLBACK_FONTS:
        font = TTFont(name, str(FONTS_DIR / filename))
        pdfmetrics.registerFont(font)
        fonts.append((name, frozenset(font.face.charToGlyph)))
    return tuple(fonts)


def _helvetica_has(character: str) -> bool:
    # reportlab's standard fonts are encoded in WinAnsi, i.e. Windows code page 1252.
    try:
        character.encode("cp1252")
    except UnicodeEncodeError:
        return False
    return True


def _font_for(character: str) -> str | None:
    """None where the paragraph's own font (Helvetica) draws ``character``, else the name
    of a fallback font."""
    if _helvetica_has(character):
        return None
    code_point = ord(character)
    for name, code_points in _pdf_fallback_glyphs():
        if code_point in code_points:
            return name
    return PDF_MISSING_GLYPH_FONT


def pdf_runs(text) -> list[tuple[str, str | None]]:
    """``text`` cut into (run, font name or None for the style's own font)."""
    runs: list[tuple[str, str | None]] = []
    for character in str(text):
        font = _font_for(character)
        if runs and runs[-1][1] == font:
            runs[-1] = (runs[-1][0] + character, font)
        else:
            runs.append((character, font))
    return runs


def pdf_markup(text) -> str:
    """``text`` as reportlab Paragraph markup that prints it literally: escaped, each run
    Helvetica lacks wrapped in ``<font name=…>`` of a font that has it."""
    return "".join(
        escape(run) if font is None else f'<font name="{font}">{escape(run)}</font>'
        for run, font in pdf_runs(text)
    )


def pdf_landscape_document(buffer, *, title: str):
    """A landscape A4 document with 12 mm margins, gpufleet as its author, written into
    ``buffer``: the page every table-heavy export prints on."""
    from reportlab.lib.pagesizes import A4, landscape
    from reportlab.lib.units import mm
    from reportlab.platypus import SimpleDocTemplate

    return SimpleDocTemplate(
        buffer,
        pagesize=landscape(A4),
        leftMargin=12 * mm,
        rightMargin=12 * mm,
        topMargin=12 * mm,
        bottomMargin=12 * mm,
        title=title,
        author="gpufleet",
    )


# The header band of every PDF table: the dashboard's primary blue.
PDF_HEADER_BLUE = "#206BC4"


def pdf_grid(*commands):
    """The TableStyle every PDF table shares (a blue header row, a hairline grid, cells
    aligned to their top), plus an export's own ``commands``."""
    from reportlab.lib import colors
    from reportlab.platypus import TableStyle

    return TableStyle(
        [
            ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor(PDF_HEADER_BLUE)),
            ("GRID", (0, 0), (-1, -1), 0.25, colors.grey),
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
            *commands,
        ]
    )


def pdf_paragraph(text, style):
    """A Paragraph that shows ``text`` as written."""
    from reportlab.platypus import Paragraph

    return Paragraph(pdf_markup(text), style)


def pdf_string(x, y, text, *, font_name="Helvetica", font_size=10, text_anchor="start", **kwargs):
    """A reportlab.graphics string for ``text`` (a chart's label or title): a Group of one
    String per font run, since a String has a single font."""
    from reportlab.graphics.shapes import Group, String
    from reportlab.pdfbase.pdfmetrics import stringWidth

    pieces = [(run, font or font_name) for run, font in pdf_runs(text)]
    widths = [stringWidth(run, font, font_size) for run, font in pieces]
    offset = {"start": 0, "middle": sum(widths) / 2, "end": sum(widths)}[text_anchor]
    group = Group()
    left = x - offset
    for (run, font), width in zip(pieces, widths, strict=True):
        group.add(String(left, y, run, fontName=font, fontSize=font_size, **kwargs))
        left += width
    return group


# --- the column spec ----------------------------------------------------------------------


class CellType(StrEnum):
    """What a column holds: decides its XLSX number format and how the PDF shows it."""

    TEXT = "text"
    INTEGER = "integer"
    DECIMAL = "decimal"
    MONEY = "money"  # an amount or a unit price, to ``places`` decimals (2 unless told)
    PERCENT = "percent"  # a ratio (0.42), shown as a percentage ("42 %")
    DATE = "date"
    DATETIME = "datetime"


_DEFAULT_PLACES = {CellType.INTEGER: 0, CellType.MONEY: 2, CellType.DECIMAL: 2, CellType.PERCENT: 0}
_DATE_FORMATS = {CellType.DATE: "yyyy-mm-dd", CellType.DATETIME: "yyyy-mm-dd hh:mm"}


@dataclass(frozen=True)
class Column:
    """One column of an export, in every format.

    ``header`` carries the unit ("Cost (USD)"); ``value(row)`` gives the raw value (a
    number, a text, a date or None for blank) that every format writes; ``places`` is how
    many decimals XLSX and PDF show. ``xlsx_format`` and ``pdf_text`` override what the
    type gives, for a column shown in a unit of its own (a duration in hours, say)."""

    header: str
    value: Callable[[object], object]
    type: CellType = CellType.TEXT
    places: int | None = None
    xlsx_format: str | None = None
    pdf_text: Callable[[object], str] | None = None
    pdf_width_mm: float | None = None
    # The figure's name where rows are dicts (``keyed``).
    key: str = ""

    @classmethod
    def keyed(cls, header, key: str, type=CellType.TEXT, places=None, **options) -> "Column":
        """A column of rows that are dicts: its value is ``row[key]``."""
        return cls(header, lambda row: row[key], type, places, key=key, **options)

    @property
    def is_text(self) -> bool:
        return self.type == CellType.TEXT

    @property
    def decimals(self) -> int:
        return self.places if self.places is not None else _DEFAULT_PLACES.get(self.type, 0)

    def number_format(self) -> str | None:
        """The XLSX number format of the column's cells (None: the general format)."""
        if self.xlsx_format is not None:
            return self.xlsx_format
        if self.type in _DATE_FORMATS:
            return _DATE_FORMATS[self.type]
        if self.type == CellType.PERCENT:
            return "0" + ("." + "0" * self.decimals if self.decimals else "") + "%"
        if self.type in (CellType.INTEGER, CellType.DECIMAL, CellType.MONEY):
            return "#,##0" + ("." + "0" * self.decimals if self.decimals else "")
        return None

    def text(self, value, *, empty: str = "") -> str:
        """The value as the page shows it: grouped thousands, the column's decimals, a
        ratio as a percentage; ``empty`` for None."""
        if value is None or (value == "" and not self.is_text):
            return empty
        if self.pdf_text is not None:
            return self.pdf_text(value)
        if isinstance(value, bool) or self.is_text:
            return str(value)
        if self.type == CellType.PERCENT:
            return f"{float(value) * 100:,.{self.decimals}f} %"
        if self.type == CellType.DATE:
            return f"{value:%Y-%m-%d}"
        if self.type == CellType.DATETIME:
            return f"{value:%Y-%m-%d %H:%M}"
        if isinstance(value, int | float | Decimal):
            # A Decimal is formatted as it is (no binary rounding), a float as a float.
            return format(value, f",.{self.decimals}f")
        return str(value)


def headers(columns: Sequence[Column]) -> list[str]:
    return [str(column.header) for column in columns]


def values(columns: Sequence[Column], item) -> list:
    """One row's raw values, column by column."""
    return [column.value(item) for column in columns]


def rows_of(columns: Sequence[Column], items: Iterable) -> list[list]:
    """Every item's raw values: what each format writes (a table may add lines of its own,
    such as a rounding line or a total, as lists of values in the same order)."""
    return [values(columns, item) for item in items]


# --- the registry of exports --------------------------------------------------------------


@dataclass(frozen=True)
class Export:
    """One export users can download: its name, its formats and each of its tables'
    columns (a callable, as headers are translated when the file is written)."""

    name: str
    formats: tuple[str, ...]
    tables: Callable[[], dict[str, Sequence[Column]]]
    module: str = field(default="", compare=False)


EXPORTS: dict[str, Export] = {}


def register(name: str, *, formats: Sequence[str], tables: Callable, module: str) -> Export:
    """Declare an export and the columns of its tables; ``EXPORTS`` is walked by a test
    that checks every export writes through this module."""
    export = Export(name, tuple(formats), tables, module)
    EXPORTS[name] = export
    return export


# --- CSV ----------------------------------------------------------------------------------

# Floats in a CSV carry six decimals: far below a GPU-second or a cent, and free of the
# binary noise of a sum (1199.9999999999998).
CSV_FLOAT_DECIMALS = 6


def csv_number(value):
    """A number as a CSV writes it: a float to six decimals, the rest as they are."""
    if isinstance(value, float):
        return round(value, CSV_FLOAT_DECIMALS)
    return value


class CsvFile:
    """A CSV written by the house rules: a blank for None, text through ``csv_cell``,
    numbers through ``numbers`` (``csv_number`` unless an export writes them otherwise)."""

    def __init__(self, *, numbers: Callable = csv_number):
        self.buffer = io.StringIO()
        self.writer = csv.writer(self.buffer)
        self.numbers = numbers

    def cell(self, value):
        if value is None:
            return ""
        if isinstance(value, str):
            return csv_cell(value)
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float | Decimal):
            return self.numbers(value)
        if isinstance(value, datetime):
            return f"{value:%Y-%m-%d %H:%M}"
        if isinstance(value, date):
            return f"{value:%Y-%m-%d}"
        return csv_cell(str(value))

    def row(self, row_values: Iterable = ()) -> None:
        self.writer.writerow([self.cell(value) for value in row_values])

    def table(self, columns: Sequence[Column], rows: Iterable[Sequence], *, header=True) -> None:
        if header:
            self.row(headers(columns))
        for row_values in rows:
            self.row(row_values)

    def text(self) -> str:
        return self.buffer.getvalue()

    def bytes(self, *, bom: bool = False) -> bytes:
        """UTF-8; with ``bom`` the byte-order mark lets Excel read UTF-8."""
        return self.text().encode("utf-8-sig" if bom else "utf-8")


def csv_table(columns: Sequence[Column], rows: Iterable[Sequence], **kwargs) -> str:
    """A CSV of one table: the headers, then the rows."""
    file = CsvFile(**kwargs)
    file.table(columns, rows)
    return file.text()


# --- XLSX ---------------------------------------------------------------------------------

XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _formats(column: Column, value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        return column.is_text  # a text column's own format ("@": text) holds for its text
    if column.type in _DATE_FORMATS:
        return isinstance(value, date)
    return isinstance(value, int | float | Decimal)


def xlsx_row(sheet, columns: Sequence[Column] | None, row_values, *, row: int | None = None):
    """Write one row (at ``row``, else below the last) through ``set_xlsx_value``; a number
    in a column with a number format gets it. Returns the row's cells."""
    row_values = list(row_values)
    if row is None:
        # As ``sheet.append`` places a row: a new sheet's first row is row 1.
        sheet.append([None] * len(row_values))
        row = sheet.max_row
    cells = []
    for index, value in enumerate(row_values):
        cell = write_xlsx_cell(sheet, row, index + 1, value)
        if columns is not None and index < len(columns):
            column = columns[index]
            number_format = column.number_format()
            # A date format for a date, a number format for a number; text stays text.
            if number_format and _formats(column, value):
                cell.number_format = number_format
        cells.append(cell)
    return cells


def xlsx_header(
    sheet, header_values, *, row: int | None = None, font=None, fill=None, alignment=None
):
    """A header row, each cell styled with what is given (bold, say)."""
    cells = xlsx_row(sheet, None, [str(value) for value in header_values], row=row)
    for cell in cells:
        if font is not None:
            cell.font = font
        if fill is not None:
            cell.fill = fill
        if alignment is not None:
            cell.alignment = alignment
    return cells


def xlsx_table(
    sheet, columns: Sequence[Column], rows: Iterable[Sequence], *, row: int | None = None, **style
) -> int:
    """The headers (styled by ``style``: font, fill, alignment) and the rows, from ``row``
    (else below the last); returns the last row written."""
    header_cells = xlsx_header(sheet, headers(columns), row=row, **style)
    line = header_cells[0].row if header_cells else sheet.max_row
    for row_values in rows:
        line += 1
        xlsx_row(sheet, columns, row_values, row=line)
    return line


def xlsx_bytes(workbook) -> bytes:
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


# --- PDF tables ---------------------------------------------------------------------------


def pdf_table(
    columns: Sequence[Column],
    rows: Iterable[Sequence],
    *,
    header_style,
    text_style,
    number_style,
    table_style,
    empty: str = "",
    widths=None,
    header: bool = True,
    **table_options,
):
    """A reportlab Table of the columns: every cell a Paragraph of escaped text (a name
    wraps in its column, may be in any script, and is never markup); text cells in
    ``text_style``, figures in ``number_style``. ``widths``: points per column, else each
    column's ``pdf_width_mm``; ``header=False`` for a table of labels and values."""
    from reportlab.lib.units import mm
    from reportlab.platypus import Table

    if widths is None and all(column.pdf_width_mm for column in columns):
        widths = [column.pdf_width_mm * mm for column in columns]
    data = [[pdf_paragraph(text, header_style) for text in headers(columns)]] if header else []
    for row_values in rows:
        data.append(
            [
                pdf_paragraph(
                    column.text(value, empty=empty),
                    text_style if column.is_text else number_style,
                )
                for column, value in zip(columns, row_values, strict=True)
            ]
        )
    table = Table(data, colWidths=widths, repeatRows=1 if header else 0, **table_options)
    table.setStyle(table_style)
    return table
