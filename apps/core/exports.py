"""What every export writes a user's text through: a name is data, never a formula or markup.

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


def append_xlsx_row(sheet, values) -> list:
    """``sheet.append(values)`` through ``set_xlsx_value``; returns the row's cells."""
    values = list(values)
    sheet.append([None] * len(values))
    row = sheet.max_row
    return [
        write_xlsx_cell(sheet, row, column, value) for column, value in enumerate(values, start=1)
    ]


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
