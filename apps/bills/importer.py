"""Importing a FOCUS file as a bill: streamed, all or nothing, and once.

- **Streamed.** The file is read through ``csv`` on a text wrapper over the (possibly
  gzipped) bytes, and lines are written with ``bulk_create`` in batches of
  ``BATCH_SIZE``; the totals are summed by the database afterwards. Nothing grows with
  the file but the first ``MAX_ERRORS_KEPT`` errors and the set of (provider, billing
  period) pairs, so memory stays flat (tests/bills/test_memory.py measures it).
- **All or nothing.** The import runs in one transaction; a refused line (its number,
  its column and what was expected) rolls it back, so a file with a bad line stores
  nothing, and the refusal lists every refused line (the first ``MAX_ERRORS_KEPT``).
- **Once.** A bill is the file's SHA-256 (of its text, a .csv.gz's uncompressed): the same
  file again returns the bill already stored and adds nothing. A different file naming a
  provider's billing period another bill already covers is refused, naming that bill,
  since the two would count the same charges twice: delete the older bill to replace it.
"""

import gzip
import hashlib
import io
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Max, Min, Sum

from apps.bills import focus
from apps.bills.models import Bill, BillLine, BillPeriod
from apps.core.sentences import Sentence, gettext_noop, sentence

BATCH_SIZE = 2000
MAX_ERRORS_KEPT = 200
GZIP_MAGIC = b"\x1f\x8b"
HASH_CHUNK = 64 * 1024


class BillRefused(Exception):
    """Nothing was imported: ``message`` says why, ``errors`` name the refused lines."""

    def __init__(self, message: Sentence, errors=(), error_count: int = 0):
        super().__init__(message)
        self.message = message
        self.errors = list(errors)
        self.error_count = error_count or len(self.errors)


class _RollBack(Exception):
    pass


@dataclass
class ImportResult:
    bill: Bill
    created: bool
    by_provider: dict = field(default_factory=dict)


def _opened(binary):
    """The file's bytes, uncompressed when they are gzip's (by their first bytes, so a
    .csv.gz named .csv reads too)."""
    binary.seek(0)
    head = binary.read(2)
    binary.seek(0)
    return gzip.GzipFile(fileobj=binary, mode="rb") if head == GZIP_MAGIC else binary


def content_sha256(binary) -> str:
    digest = hashlib.sha256()
    try:
        with _wrapped(binary) as stream:
            while chunk := stream.read(HASH_CHUNK):
                digest.update(chunk)
    except (OSError, EOFError) as error:
        raise BillRefused(
            sentence(
                gettext_noop("The file is not a readable gzip (%(reason)s)."), reason=str(error)
            )
        ) from None
    return digest.hexdigest()


class _wrapped:
    """The uncompressed bytes of ``binary`` as a context manager that leaves ``binary`` open."""

    def __init__(self, binary):
        self.binary = binary

    def __enter__(self):
        self.stream = _opened(self.binary)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not self.binary:
            self.stream.close()
        if not self.binary.closed:
            self.binary.seek(0)


def totals_of(bill: Bill) -> None:
    """Set the bill's totals from its stored lines (grouped queries), at the precision
    of its file (``cost_places``, set before)."""
    lines = BillLine.objects.filter(bill=bill)
    by_provider = {
        provider: display_total(bill, total)
        for provider, total in lines.values_list("provider")
        .annotate(total=Sum("billed_cost"))
        .order_by("provider")
    }
    span = lines.aggregate(
        start=Min("charge_period_start"),
        end=Max("charge_period_end"),
        total=Sum("billed_cost"),
    )
    bill.by_provider = by_provider
    bill.billed_cost = span["total"] or Decimal(0)
    bill.charge_period_start, bill.charge_period_end = span["start"], span["end"]
    bill.currencies = sorted(
        set(lines.values_list("billing_currency", flat=True).order_by().distinct())
    )


def import_bill(binary, *, filename: str = "", source: str, user=None) -> ImportResult:
    """Import the FOCUS file ``binary`` (a binary file object, seekable: an upload or an
    open file). Raises BillRefused when nothing was imported."""
    sha = content_sha256(binary)
    existing = Bill.objects.filter(content_sha256=sha).first()
    if existing is not None:
        return ImportResult(existing, created=False)
    errors: list[focus.LineError] = []
    error_count = 0
    try:
        with transaction.atomic(), _wrapped(binary) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
            bill = Bill.objects.create(
                filename=filename[:255],
                content_sha256=sha,
                source=source,
                created_by=user if user is not None and user.is_authenticated else None,
            )
            rows = focus.read_rows(text)
            try:
                _columns, bill.focus_version = next(rows)
            except focus.FocusFileError as error:
                raise BillRefused(error.message) from None
            batch, periods, places, count = [], {}, 0, 0
            try:
                for row in rows:
                    if isinstance(row, list):
                        error_count += len(row)
                        errors.extend(row[: max(0, MAX_ERRORS_KEPT - len(errors))])
                        continue
                    count += 1
                    if error_count:
                        continue  # nothing is stored: only the remaining errors count
                    places = max(places, row.cost_places)
                    key = (row.values["provider"], row.values["billing_period_start"])
                    periods.setdefault(key, row.line_number)
                    batch.append(BillLine(bill=bill, line_number=row.line_number, **row.values))
                    if len(batch) >= BATCH_SIZE:
                        BillLine.objects.bulk_create(batch)
                        batch = []
            except UnicodeDecodeError as error:
                raise BillRefused(
                    sentence(
                        gettext_noop(
                            "The file is not UTF-8 text (byte %(byte)s of a block): save it "
                            "as UTF-8."
                        ),
                        byte=error.start,
                    )
                ) from None
            except (OSError, EOFError) as error:
                raise BillRefused(
                    sentence(
                        gettext_noop("The file is not a readable gzip (%(reason)s)."),
                        reason=str(error),
                    )
                ) from None
            if error_count:
                raise _RollBack
            if not count:
                raise BillRefused(
                    sentence(
                        gettext_noop("The file holds a header and no charges: nothing to import.")
                    )
                )
            BillLine.objects.bulk_create(batch)
            _claim_periods(bill, periods)
            bill.rows, bill.cost_places = count, places
            totals_of(bill)
            bill.save()
    except IntegrityError:
        # The same file, imported by another request meanwhile: that bill is this one.
        existing = Bill.objects.filter(content_sha256=sha).first()
        if existing is None:
            raise
        return ImportResult(existing, created=False)
    except _RollBack:
        first = errors[0].line_number if errors else 0
        raise BillRefused(
            sentence(
                gettext_noop(
                    "Nothing was imported: %(count)s problem(s), the first on line %(line)s. "
                    "Fix the lines listed and import the file again."
                ),
                count=error_count,
                line=first,
            ),
            errors,
            error_count,
        ) from None
    return ImportResult(bill, created=True)


def _claim_periods(bill: Bill, periods: dict) -> None:
    """Record the (provider, billing period) pairs the bill covers; refuse the bill when
    another already covers one."""
    for (provider, period_start), line in sorted(periods.items(), key=lambda item: item[1]):
        other = (
            BillPeriod.objects.filter(provider=provider, billing_period_start=period_start)
            .select_related("bill")
            .first()
        )
        if other is not None:
            raise BillRefused(
                sentence(
                    gettext_noop(
                        "Line %(line)s: bill “%(bill)s” (#%(id)s) already holds %(provider)s's "
                        "billing period from %(start)s; importing this file too would count "
                        "its charges twice. Delete that bill first to replace it."
                    ),
                    line=line,
                    bill=str(other.bill),
                    id=other.bill_id,
                    provider=provider,
                    start=f"{period_start:%Y-%m-%d %H:%M} UTC",
                )
            )
    try:
        with transaction.atomic():
            BillPeriod.objects.bulk_create(
                [
                    BillPeriod(bill=bill, provider=provider, billing_period_start=start)
                    for provider, start in periods
                ]
            )
    except IntegrityError:
        # Another import claimed one meanwhile.
        raise BillRefused(
            sentence(
                gettext_noop(
                    "Another bill covering the same billing period was imported meanwhile; "
                    "nothing was imported."
                )
            )
        ) from None


def display_total(bill: Bill, amount) -> str:
    """``amount`` as a decimal string at the bill's precision (its file's decimal places)."""
    value = Decimal(amount)
    return str(value.quantize(Decimal(1).scaleb(-bill.cost_places)))


def exact_text(value, min_places: int = 2) -> str | None:
    """``value`` as a decimal string without the storage's trailing zeros, keeping at
    least ``min_places`` decimals: 628004.400000000000 → "628004.40", 0.000010 →
    "0.00001"."""
    if value is None:
        return None
    value = Decimal(value)
    places = max(min_places, -value.normalize().as_tuple().exponent)
    return str(value.quantize(Decimal(1).scaleb(-places)))
