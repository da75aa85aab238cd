"""``manage.py import_bill FILE``: import a provider's FOCUS file (.csv or .csv.gz)."""

from django.core.management.base import BaseCommand, CommandError

from apps.bills import importer
from apps.bills.models import Bill


class Command(BaseCommand):
    help = (
        "Import a cloud bill from a FOCUS 1.0–1.3 CSV (.csv or .csv.gz). All or nothing: a "
        "refused line stores nothing and is listed with its number; the same file twice adds "
        "nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path of the FOCUS file.")

    def handle(self, *args, **options):
        path = options["file"]
        try:
            binary = open(path, "rb")  # noqa: SIM115 (closed below, after the import)
        except OSError as error:
            raise CommandError(f"{path}: {error.strerror}") from None
        try:
            result = importer.import_bill(
                binary, filename=path.rsplit("/", 1)[-1], source=Bill.Source.COMMAND
            )
        except importer.BillRefused as refusal:
            for error in refusal.errors:
                self.stderr.write(str(error.message))
            raise CommandError(str(refusal.message)) from None
        finally:
            binary.close()
        bill = result.bill
        if not result.created:
            self.stdout.write(f"Already imported as bill #{bill.pk}: nothing added.")
            return
        billed = importer.display_total(bill, bill.billed_cost)
        self.stdout.write(
            f"Bill #{bill.pk}: {bill.rows} lines, billed {billed} ({', '.join(bill.currencies)})."
        )
        for provider, total in bill.by_provider.items():
            self.stdout.write(f"  {provider}: {importer.display_total(bill, total)}")
