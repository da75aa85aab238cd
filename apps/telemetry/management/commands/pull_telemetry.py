"""``manage.py pull_telemetry --source SLUG [--start ISO --end ISO]``: pull a source now.

For a ``prometheus_hourly`` source the complete hours from ``--start`` (default: where
its last complete pull ended) to ``--end`` (default: the last complete hour) are pulled
``--chunk-hours`` at a time, with a line per chunk, so a week's backfill shows its
progress; a backfill of hours already complete rewrites them by key and leaves the
source's resume point alone. The other kinds pull once, as beat does. The pool-hours
touched are handed to the rollup drain when the pull ends.
"""

from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime

from apps.telemetry.models import ImportRun, PullSource
from apps.telemetry.pull import sources, tsdb
from apps.telemetry.rollups import hourly


def _moment(text: str, option: str) -> datetime:
    moment = parse_datetime(text)
    if moment is None:
        raise CommandError(f"{option} {text!r}: write an ISO time, e.g. 2026-11-24T00:00Z")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Pull one telemetry source now; hourly TSDB sources can backfill a range."

    def add_arguments(self, parser):
        parser.add_argument("--source", required=True, help="The pull source's slug.")
        parser.add_argument("--start", help="Hourly sources: first hour, ISO (UTC if no zone).")
        parser.add_argument("--end", help="Hourly sources: end of the range, ISO, exclusive.")
        parser.add_argument(
            "--chunk-hours",
            type=int,
            default=tsdb.DEFAULT_CHUNK_HOURS,
            help="Hours per query_range request (default %(default)s).",
        )
        parser.add_argument(
            "--timeout-seconds",
            type=float,
            default=tsdb.HOURLY_QUERY_TIMEOUT_SECONDS,
            help="How long one query may take (default %(default)s s).",
        )

    def handle(self, *args, **options):
        source = PullSource.objects.select_related("pool").filter(slug=options["source"]).first()
        if source is None:
            known = ", ".join(PullSource.objects.values_list("slug", flat=True)) or "none yet"
            raise CommandError(f"no pull source {options['source']!r} (known: {known})")
        if options["chunk_hours"] < 1:
            raise CommandError("--chunk-hours must be at least 1")
        if source.kind != PullSource.Kind.PROMETHEUS_HOURLY:
            if options["start"] or options["end"]:
                raise CommandError("--start and --end are for prometheus_hourly sources")
            run = sources.pull_source(source)
        else:
            start = _moment(options["start"], "--start") if options["start"] else None
            end = _moment(options["end"], "--end") if options["end"] else None
            if start and end and end <= start:
                raise CommandError("--end must come after --start")

            def progress(outcome, number, chunks):
                partial = " (partial answer: not marked complete)" if outcome.partial else ""
                self.stdout.write(
                    f"[{number}/{chunks}] {outcome.start:%Y-%m-%d %H:00}–"
                    f"{outcome.end:%Y-%m-%d %H:00} UTC: {outcome.rows_written} device-hours"
                    f"{partial}"
                )

            run = tsdb.pull_hourly(
                source,
                start=start,
                end=end,
                chunk_hours=options["chunk_hours"],
                timeout_seconds=options["timeout_seconds"],
                progress=progress,
            )
            if run is None:
                self.stdout.write("No complete hour to pull in that range yet.")
                return
        hourly.request_drain()
        if run.status == ImportRun.Status.FAILED or run.status == ImportRun.Status.REJECTED:
            raise CommandError(run.message)
        self.stdout.write(run.message)
