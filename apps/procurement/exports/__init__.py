"""A scenario's comparison as CSV, XLSX and PDF: what every format says (content.py), the
spreadsheets, the PDF section by section, and the background job that writes them."""
