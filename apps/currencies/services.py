"""Writing exchange rates: one at a time, or a CSV file of them, all or nothing.

The CSV has a header ``month,currency,units_per_usd`` and optionally ``source``: a month
as ``YYYY-MM``, an ISO 4217 code, and how many units of the currency one US dollar buys
as a plain decimal (``7.1134``: no exponent, no thousands separator). A month and
currency already recorded is updated (its history keeps the old rate)."""

import csv
import io
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.utils.translation import gettext

from apps.currencies.codes import USD, currency_problem
from apps.currencies.models import ExchangeRate

COLUMNS = ("month", "currency", "units_per_usd")
OPTIONAL_COLUMNS = ("source",)
PLAIN_DECIMAL = re.compile(r"^\d+(\.\d+)?$")
MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class RateImportError(ValueError):
    """A CSV file refused whole; the message names the line and the field."""


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0


def parse_month(text: str) -> date | None:
    """``YYYY-MM`` (or a first day ``YYYY-MM-01``) as the month's first day; None if not."""
    text = (text or "").strip()
    if len(text) == 10 and text.endswith("-01"):
        text = text[:7]
    match = MONTH.match(text)
    if not match or not 1 <= int(match.group(2)) <= 12:
        return None
    return date(int(match.group(1)), int(match.group(2)), 1)


def parse_rate(text: str) -> Decimal | None:
    """A plain positive decimal (no sign, exponent or separators); None if not."""
    text = (text or "").strip()
    if not PLAIN_DECIMAL.match(text):
        return None
    try:
        rate = Decimal(text)
    except InvalidOperation:
        return None
    return rate if rate > 0 else None


def save_rate(rate: ExchangeRate, user=None) -> ExchangeRate:
    rate.changed_by = user if user is not None and user.is_authenticated else None
    rate.full_clean()
    rate.save()
    return rate


@transaction.atomic
def import_rates_csv(data: bytes | str, user=None) -> ImportResult:
    """Record every rate of the CSV ``data``, or none: raises ``RateImportError`` naming
    the first line and field that is wrong."""
    text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or []]
    missing = [name for name in COLUMNS if name not in header]
    if missing:
        raise RateImportError(
            gettext("Line 1: the header lacks %(columns)s; expected %(expected)s.")
            % {"columns": ", ".join(missing), "expected": ",".join(COLUMNS)}
        )
    seen, parsed = {}, []
    for line, raw in enumerate(reader, start=2):
        if None in raw:
            raise RateImportError(
                gettext(
                    "Line %(line)s: more fields than the header's %(count)s (a decimal comma? "
                    "write rates with a point, e.g. 7.1088)."
                )
                % {"line": line, "count": len(header)}
            )
        row = {key.strip(): (value or "").strip() for key, value in raw.items() if key}
        month = parse_month(row.get("month"))
        if month is None:
            raise RateImportError(
                gettext("Line %(line)s, month: %(value)s is not a month; expected YYYY-MM.")
                % {"line": line, "value": row.get("month") or "''"}
            )
        currency = row.get("currency", "").upper()
        problem = currency_problem(currency)
        if problem:
            raise RateImportError(
                gettext("Line %(line)s, currency: %(problem)s") % {"line": line, "problem": problem}
            )
        if currency == USD:
            raise RateImportError(
                gettext("Line %(line)s, currency: USD needs no rate (it is 1 by definition).")
                % {"line": line}
            )
        rate = parse_rate(row.get("units_per_usd"))
        if rate is None:
            raise RateImportError(
                gettext(
                    "Line %(line)s, units_per_usd: %(value)s is not a positive plain decimal "
                    "such as 7.1134 (no exponent, sign or separators)."
                )
                % {"line": line, "value": row.get("units_per_usd") or "''"}
            )
        if (month, currency) in seen:
            raise RateImportError(
                gettext("Line %(line)s: %(currency)s %(month)s is already on line %(first)s.")
                % {
                    "line": line,
                    "currency": currency,
                    "month": f"{month:%Y-%m}",
                    "first": seen[(month, currency)],
                }
            )
        seen[(month, currency)] = line
        parsed.append((month, currency, rate, row.get("source", "")[:300]))
    result = ImportResult()
    existing = {
        (rate.month, rate.currency): rate
        for rate in ExchangeRate.objects.filter(currency__in={p[1] for p in parsed})
    }
    for month, currency, value, source in parsed:
        rate = existing.get((month, currency))
        if rate is None:
            rate = ExchangeRate(month=month, currency=currency)
            result.created += 1
        else:
            result.updated += 1
        rate.units_per_usd = value
        rate.source = source or rate.source
        save_rate(rate, user)
    return result
