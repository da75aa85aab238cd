"""``manage.py export_focus --start 2026-10-01 --end 2026-11-01 --output october.csv``:
the fleet's FOCUS dataset of a range of UTC days, and its metadata beside it
(``october.csv.focus-metadata.json``: the FOCUS version, the columns)."""

import json
from datetime import date
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.core.money import to_cents
from apps.showback.focus.api import day_start, range_problem
from apps.showback.focus.exports import (
    FOCUS_VERSION,
    focus_billing_currency,
    focus_csv,
    metadata,
)
from apps.showback.focus.rows import MissingReportingRate, focus_rows

METADATA_SUFFIX = ".focus-metadata.json"


def _day(text: str, field: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--{field}: “{text}” is not a day; type it as 2026-10-01.") from None


class Command(BaseCommand):
    help = "Write the fleet's cost of a range of UTC days as a FOCUS dataset (CSV)."

    def add_arguments(self, parser):
        parser.add_argument("--start", required=True, help="First day, YYYY-MM-DD (included).")
        parser.add_argument("--end", required=True, help="Day after the range (not included).")
        parser.add_argument("--output", required=True, help="The CSV file to write.")

    def handle(self, *args, **options):
        start, end = _day(options["start"], "start"), _day(options["end"], "end")
        problem = range_problem(start, end)
        if problem:
            field, messages = next(iter(problem.items()))
            raise CommandError(f"--{field}: {messages[0]}")
        try:
            rows = focus_rows(day_start(start), day_start(end))
        except MissingReportingRate as missing:
            raise CommandError(str(missing)) from None
        output = Path(options["output"])
        # Written whole, then moved in place: a failed run leaves no half file.
        partial = output.with_name(output.name + ".partial")
        partial.write_text(focus_csv(rows), encoding="utf-8")
        partial.replace(output)
        sidecar = output.with_name(output.name + METADATA_SUFFIX)
        sidecar.write_text(json.dumps(metadata(), indent=2) + "\n", encoding="utf-8")
        total = sum((row.billed for row in rows), to_cents(0))
        self.stdout.write(
            f"{output}: {len(rows)} rows, FOCUS {FOCUS_VERSION}, BilledCost {total} "
            f"{focus_billing_currency()}; "
            f"metadata in {sidecar}"
        )
