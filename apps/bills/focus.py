"""Reading a FOCUS dataset (FOCUS 1.0 to 1.3) as CSV, one row at a time.

The house rules of a bill file:

- a header line names the columns, in any order; the columns gpufleet needs are
  ``REQUIRED_COLUMNS`` plus the provider's name (``ServiceProviderName`` from FOCUS 1.3,
  ``ProviderName`` before), and a file without them is refused naming them; other
  columns (``x_`` ones included) are read where gpufleet knows them and ignored otherwise;
- an empty cell or the text ``NULL`` is null;
- a date-time is ``YYYY-MM-DD``, then ``T`` or a space, then ``HH:MM`` with optional
  seconds and fraction, then optionally ``Z`` or an offset; one without a zone is UTC;
- a number is written in decimal (``12.5``, ``-0.000001``) or in the scientific notation
  FOCUS's numeric format allows (``1E-5``); either is read exactly as a ``Decimal``, never
  through a float. A value with more than ``COST_PLACES`` decimal places, or too large to
  keep, is refused rather than rounded;
- ``Tags`` is a JSON object (FOCUS's key-value format); anything else is refused.

Every refused line is named with its number (the header is line 1) and the column. The
module holds no state across rows, so memory stays flat whatever the file's size.
"""

import csv
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation

from apps.bills.models import COST_DIGITS, COST_PLACES
from apps.core.sentences import Sentence, gettext_noop, sentence

# Digits a stored number may have before its decimal point.
INTEGER_DIGITS = COST_DIGITS - COST_PLACES

PROVIDER_COLUMNS = ("ServiceProviderName", "ProviderName")
REQUIRED_COLUMNS = (
    "BilledCost",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
)
# FOCUS column → (field, kind); kind: text, cost (a Decimal), quantity, time, tags.
COLUMNS = {
    "BilledCost": ("billed_cost", "cost"),
    "EffectiveCost": ("effective_cost", "cost"),
    "ListCost": ("list_cost", "cost"),
    "ContractedCost": ("contracted_cost", "cost"),
    "BillingCurrency": ("billing_currency", "text"),
    "BillingPeriodStart": ("billing_period_start", "time"),
    "BillingPeriodEnd": ("billing_period_end", "time"),
    "ChargePeriodStart": ("charge_period_start", "time"),
    "ChargePeriodEnd": ("charge_period_end", "time"),
    "InvoiceIssuerName": ("invoice_issuer", "text"),
    "InvoiceIssuer": ("invoice_issuer", "text"),
    "PublisherName": ("publisher", "text"),
    "BillingAccountId": ("billing_account_id", "text"),
    "SubAccountId": ("sub_account_id", "text"),
    "SubAccountName": ("sub_account_name", "text"),
    "ResourceId": ("resource_id", "text"),
    "ResourceName": ("resource_name", "text"),
    "ResourceType": ("resource_type", "text"),
    "SkuId": ("sku_id", "text"),
    "SkuPriceId": ("sku_price_id", "text"),
    "ChargeCategory": ("charge_category", "text"),
    "ChargeDescription": ("charge_description", "text"),
    "ServiceName": ("service_name", "text"),
    "ServiceCategory": ("service_category", "text"),
    "RegionId": ("region_id", "text"),
    "ConsumedQuantity": ("consumed_quantity", "cost"),
    "ConsumedUnit": ("consumed_unit", "text"),
    "PricingQuantity": ("pricing_quantity", "cost"),
    "PricingUnit": ("pricing_unit", "text"),
    "Tags": ("tags", "tags"),
}
# Lengths of the text fields as stored (longer values are refused, not cut).
TEXT_LIMITS = {
    "billing_currency": 3,
    "charge_category": 50,
    "service_category": 100,
    "region_id": 100,
    "consumed_unit": 100,
    "pricing_unit": 100,
    "provider": 200,
    "invoice_issuer": 200,
    "publisher": 200,
    "resource_name": 500,
}
DEFAULT_TEXT_LIMIT = 300
UNLIMITED_TEXT = ("resource_id", "charge_description")

TIMESTAMP = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?$"
)
# Plain decimal, or scientific notation; no thousands separators, no currency signs.
NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
NULL_TEXTS = ("", "NULL")


class FocusFileError(ValueError):
    """The file cannot be read at all (no header, missing columns): nothing to import."""

    def __init__(self, message: Sentence):
        super().__init__(message)
        self.message = message


@dataclass
class LineError:
    line_number: int
    column: str
    message: Sentence


@dataclass
class Row:
    line_number: int
    values: dict = field(default_factory=dict)
    cost_places: int = 0


def is_null(text: str | None) -> bool:
    return text is None or text.strip() in NULL_TEXTS


def parse_timestamp(text: str) -> datetime | None:
    """The instant ``text`` names, in UTC; None when it is not a date-time."""
    match = TIMESTAMP.match(text.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        moment = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second or 0),
            int((fraction or "0")[:6].ljust(6, "0")),
            tzinfo=UTC,
        )
    except ValueError:
        return None
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        moment -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return moment


def parse_number(text: str) -> tuple[Decimal, int] | None:
    """(the exact value, its decimal places) of ``text``; None when it is no number."""
    text = text.strip()
    if not NUMBER.match(text):
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    places = max(0, -value.as_tuple().exponent)
    return value, places


def header_columns(header: list[str]) -> dict[str, int]:
    """FOCUS column name → its index; names are matched ignoring case and spaces around
    them, as exports differ in both. Raises FocusFileError for missing columns."""
    known = {name.lower(): name for name in (*COLUMNS, *PROVIDER_COLUMNS)}
    found: dict[str, int] = {}
    for index, raw in enumerate(header):
        name = known.get(raw.strip().lstrip("\ufeff").lower())
        if name and name not in found:
            found[name] = index
    missing = [name for name in REQUIRED_COLUMNS if name not in found]
    if not any(name in found for name in PROVIDER_COLUMNS):
        missing.append("ServiceProviderName (FOCUS 1.3) or ProviderName (1.0–1.2)")
    if missing:
        raise FocusFileError(
            sentence(
                gettext_noop(
                    "The header (line 1) lacks the columns %(columns)s: a FOCUS bill needs them."
                ),
                columns=", ".join(missing),
            )
        )
    return found


def focus_version(columns: dict[str, int]) -> str:
    """The FOCUS version the header reads as: 1.3 names the provider ServiceProviderName."""
    return "1.3" if "ServiceProviderName" in columns else "1.0–1.2"


def _error(line, column, msgid, **values) -> LineError:
    return LineError(line, column, sentence(msgid, line=line, column=column, **values))


def read_row(line_number: int, cells: list[str], columns: dict[str, int]) -> Row | list[LineError]:
    """One data line as a Row of model field values, or the errors that refuse it."""
    row, errors = Row(line_number), []
    provider_column = next(name for name in PROVIDER_COLUMNS if name in columns)
    wanted = {**COLUMNS, provider_column: ("provider", "text")}
    for column, index in columns.items():
        if column not in wanted or (column in PROVIDER_COLUMNS and column != provider_column):
            continue
        field_name, kind = wanted[column]
        text = cells[index] if index < len(cells) else ""
        if is_null(text):
            if kind == "tags":
                row.values[field_name] = {}
            elif kind in ("cost", "time"):
                row.values[field_name] = None
            else:
                row.values.setdefault(field_name, "")
            continue
        if kind == "time":
            moment = parse_timestamp(text)
            if moment is None:
                errors.append(
                    _error(
                        line_number,
                        column,
                        gettext_noop(
                            "Line %(line)s, %(column)s: “%(value)s” is not a date-time; "
                            "expected e.g. 2024-09-01T00:00:00Z or 2024-09-01 00:00."
                        ),
                        value=text[:60],
                    )
                )
            row.values[field_name] = moment
        elif kind == "cost":
            parsed = parse_number(text)
            if parsed is None:
                errors.append(
                    _error(
                        line_number,
                        column,
                        gettext_noop(
                            "Line %(line)s, %(column)s: “%(value)s” is not a number; "
                            "expected a decimal such as 12.50 (a point, no separators)."
                        ),
                        value=text[:60],
                    )
                )
                continue
            value, places = parsed
            if places > COST_PLACES or value.adjusted() >= INTEGER_DIGITS:
                errors.append(
                    _error(
                        line_number,
                        column,
                        gettext_noop(
                            "Line %(line)s, %(column)s: %(value)s cannot be kept exactly "
                            "(at most %(places)s decimal places and %(digits)s digits "
                            "before the point)."
                        ),
                        value=text[:60],
                        places=COST_PLACES,
                        digits=INTEGER_DIGITS,
                    )
                )
                continue
            row.values[field_name] = value
            if field_name == "billed_cost":
                row.cost_places = places
        elif kind == "tags":
            try:
                tags = json.loads(text)
            except json.JSONDecodeError as error:
                errors.append(
                    _error(
                        line_number,
                        column,
                        gettext_noop(
                            "Line %(line)s, %(column)s: not JSON (%(reason)s); expected an "
                            'object such as {"team": "ml"}.'
                        ),
                        reason=error.msg,
                    )
                )
                continue
            if not isinstance(tags, dict):
                errors.append(
                    _error(
                        line_number,
                        column,
                        gettext_noop(
                            'Line %(line)s, %(column)s: expected a JSON object such as {"team": '
                            '"ml"}.'
                        ),
                    )
                )
                continue
            row.values[field_name] = tags
        else:
            text = text.strip()
            limit = TEXT_LIMITS.get(field_name, DEFAULT_TEXT_LIMIT)
            if field_name not in UNLIMITED_TEXT and len(text) > limit:
                errors.append(
                    _error(
                        line_number,
                        column,
                        gettext_noop(
                            "Line %(line)s, %(column)s: %(length)s characters; at most "
                            "%(limit)s are kept."
                        ),
                        length=len(text),
                        limit=limit,
                    )
                )
                continue
            row.values[field_name] = text
    for column in (*REQUIRED_COLUMNS, provider_column):
        field_name = wanted[column][0]
        if row.values.get(field_name) in (None, "") and not any(
            error.column == column for error in errors
        ):
            errors.append(
                _error(
                    line_number,
                    column,
                    gettext_noop("Line %(line)s, %(column)s: empty; FOCUS requires a value."),
                )
            )
    return errors or row


def read_rows(text_stream, start_line: int = 1):
    """Yield (columns, version) once, then a Row or a list of LineErrors per data line of
    ``text_stream`` (a text file object). Raises FocusFileError for an unusable header."""
    reader = csv.reader(text_stream)
    try:
        header = next(reader)
    except StopIteration:
        raise FocusFileError(
            sentence(gettext_noop("The file is empty: a FOCUS bill starts with its header."))
        ) from None
    except csv.Error as error:
        raise FocusFileError(
            sentence(gettext_noop("Line 1 is not CSV (%(reason)s)."), reason=str(error))
        ) from None
    columns = header_columns(header)
    yield columns, focus_version(columns)
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            line = reader.line_num
            yield [
                LineError(
                    line,
                    "",
                    sentence(
                        gettext_noop("Line %(line)s is not CSV (%(reason)s)."),
                        line=line,
                        reason=str(error),
                    ),
                )
            ]
            continue
        if not any(cell.strip() for cell in cells):
            continue  # a blank line (the file's last, often)
        yield read_row(reader.line_num, cells, columns)
