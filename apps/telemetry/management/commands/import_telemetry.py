"""``manage.py import_telemetry PATH --format {dcgm,nvidia-smi,csv} [--pool SLUG]
[--columns timestamp=H,device=H,utilization_pct=H[,memory_used_mib=H,power_w=H]] [--tz ZONE]``

For cron: prints rows accepted, duplicates skipped and rows rejected, and exits non-zero
when the file is refused. The hours it touched are rolled up by Celery (inline when no
broker is configured).
"""

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from apps.pools.models import Pool
from apps.telemetry.ingest import formats, importer
from apps.telemetry.ingest.parsers import TelemetryFormatError
from apps.telemetry.models import ImportRun


def time_zone(name: str):
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise CommandError(f"--tz: unknown time zone “{name}” (e.g. UTC, Asia/Shanghai)") from error


def readable_file(path: str) -> Path:
    """The file to import, read later a chunk at a time (never whole into memory)."""
    file_path = Path(path)
    if not file_path.is_file():
        raise CommandError(f"{path}: no such file")
    return file_path


def report(command, summary):
    """The counts cron mails: rejected lines on stderr; a refused file is an error; what
    was kept but needs a look follows the counts."""
    for error in summary.errors:
        command.stderr.write(error.message)
    if summary.rejected_whole:
        raise CommandError(summary.describe())
    command.stdout.write(
        f"{summary.accepted} rows accepted, {summary.duplicates} duplicates skipped, "
        f"{summary.rejected} rows rejected"
    )
    for warning in summary.warnings:
        command.stdout.write(f"Warning: {warning}")


class Command(BaseCommand):
    help = "Import GPU telemetry from a file (dcgm-exporter scrape, nvidia-smi CSV, or CSV)."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument(
            "--format", required=True, choices=formats.names_of(formats.GPU, formats.COMMAND)
        )
        parser.add_argument("--pool", help="Assign devices first seen in this file to the pool.")
        parser.add_argument("--columns", help="Generic CSV: field=header pairs, comma-separated.")
        parser.add_argument("--tz", default="UTC", help="Zone of naive timestamps (default UTC).")
        parser.add_argument(
            "--skip-bad-rows",
            action="store_true",
            help="Keep the good rows of a file with bad ones (each rejected line is reported).",
        )
        parser.add_argument(
            "--scraped-at",
            help="dcgm: when the scrape was taken (ISO 8601); default the file's modified time.",
        )

    def handle(self, *args, **options):
        pool = None
        if options["pool"]:
            pool = Pool.objects.filter(slug=options["pool"]).first()
            if pool is None:
                raise CommandError(f"--pool: no pool with slug “{options['pool']}”")
        try:
            columns = formats.parse_column_mapping(options["columns"])
        except ValueError as error:
            raise CommandError(f"--columns: {error}") from error
        path = readable_file(options["path"])
        # Of the bytes, as an upload of the same file is recognised (newlines untranslated).
        digest = importer.file_sha256(path)
        scraped_at = None
        if formats.format_of(formats.GPU, options["format"]).needs_scrape_time:
            if options["scraped_at"]:
                try:
                    scraped_at = datetime.fromisoformat(options["scraped_at"])
                except ValueError as error:
                    raise CommandError("--scraped-at: expected ISO 8601") from error
                if scraped_at.tzinfo is None:
                    scraped_at = scraped_at.replace(tzinfo=time_zone(options["tz"]))
            else:
                modified = path.stat().st_mtime
                scraped_at = datetime.fromtimestamp(modified, tz=UTC)
        run = ImportRun.objects.create(
            kind="gpu",
            format=options["format"],
            source=ImportRun.Source.COMMAND,
            filename=path.name,
            pool=pool,
            skip_bad_rows=options["skip_bad_rows"],
            status=ImportRun.Status.RUNNING,
            started_at=timezone.now(),
            content_sha256=digest,
        )
        try:
            summary = importer.run_import(
                run, path, columns=columns, tz=time_zone(options["tz"]), scraped_at=scraped_at
            )
        except TelemetryFormatError as error:
            raise CommandError(f"{options['path']}: {error}") from error
        except Exception as error:  # run_import marked the run failed with this sentence
            raise CommandError(f"{options['path']}: {run.failure_sentence(error)}") from error
        report(self, summary)
        if summary.new_devices or summary.unassigned_devices:
            self.stdout.write(summary.describe())
