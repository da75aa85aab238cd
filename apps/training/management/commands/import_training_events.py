"""Import a training job's event log for a workload from the command line."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.pools.models import Workload
from apps.training import parsers, services
from apps.training.models import TrainingImportRun


class Command(BaseCommand):
    help = (
        "Import a training event log (goodput_measure JSON lines, or a CSV with --columns) "
        "for a workload. Nothing is stored when a line is wrong; importing the same log "
        "again stores nothing new."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="The event log.")
        parser.add_argument("--workload", required=True, help="The workload's slug.")
        parser.add_argument("--format", choices=parsers.FORMATS, default="jsonl")
        parser.add_argument(
            "--columns",
            default="",
            help='CSV only, JSON: our field → the file\'s header, e.g. \'{"timestamp": "time", '
            '"job_name": "job", "event_type": "event"}\'.',
        )

    def handle(self, *args, file, workload, format, columns, **options):
        found = Workload.objects.filter(slug=workload).select_related("pool").first()
        if found is None:
            raise CommandError(f"No workload with slug “{workload}”.")
        path = Path(file)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CommandError(f"No file {file}.") from None
        except UnicodeDecodeError as error:
            raise CommandError(f"{file} is not UTF-8 text (byte {error.start:,}).") from None
        try:
            mapping = json.loads(columns) if columns else {}
        except json.JSONDecodeError as error:
            raise CommandError(f"--columns is not JSON: {error.msg}.") from None
        if format == "csv" and not mapping:
            raise CommandError("A CSV needs --columns (our field → the file's header).")
        run = services.import_events(
            workload=found,
            text=text,
            format=format,
            columns=mapping,
            source=TrainingImportRun.Source.COMMAND,
            filename=path.name,
        )
        if run.status != TrainingImportRun.Status.SUCCEEDED:
            lines = [f"line {error['line']}: {error['message']}" for error in run.errors]
            raise CommandError("\n".join([run.message_in_language(), *lines]))
        self.stdout.write(run.message_in_language())
