"""``manage.py import_requests PATH --workload SLUG --format {azure-llm,csv}
[--columns timestamp=H,input_tokens=H,output_tokens=H,latency_ms=H,status=H]``"""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from apps.pools.models import Workload
from apps.telemetry.ingest import formats, importer
from apps.telemetry.ingest.parsers import TelemetryFormatError
from apps.telemetry.management.commands.import_telemetry import (
    readable_file,
    report,
    time_zone,
)
from apps.telemetry.models import ImportRun


class Command(BaseCommand):
    help = "Import an inference request log for a workload (Azure LLM trace or CSV)."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--workload", required=True)
        parser.add_argument(
            "--format", required=True, choices=formats.names_of(formats.REQUESTS, formats.COMMAND)
        )
        parser.add_argument("--columns", help="CSV: field=header pairs, comma-separated.")
        parser.add_argument("--tz", default="UTC")
        parser.add_argument("--skip-bad-rows", action="store_true")

    def handle(self, *args, **options):
        workload = Workload.objects.filter(slug=options["workload"]).first()
        if workload is None:
            raise CommandError(f"--workload: no workload with slug “{options['workload']}”")
        try:
            columns = formats.parse_column_mapping(options["columns"])
        except ValueError as error:
            raise CommandError(f"--columns: {error}") from error
        path = readable_file(options["path"])
        run = ImportRun.objects.create(
            content_sha256=importer.file_sha256(path),
            kind="requests",
            format=options["format"],
            source=ImportRun.Source.COMMAND,
            filename=path.name,
            workload=workload,
            skip_bad_rows=options["skip_bad_rows"],
            status=ImportRun.Status.RUNNING,
            started_at=timezone.now(),
        )
        try:
            summary = importer.run_import(run, path, columns=columns, tz=time_zone(options["tz"]))
        except TelemetryFormatError as error:
            raise CommandError(f"{options['path']}: {error}") from error
        except Exception as error:  # run_import marked the run failed with this sentence
            raise CommandError(f"{options['path']}: {run.failure_sentence(error)}") from error
        report(self, summary)
