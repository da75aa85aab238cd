"""``manage.py rollup_usage [--all]``: recompute hourly rollups synchronously.

Without ``--all`` only the last 48 hours of every pool and workload with data are redone
(what a late import usually touches); ``--all`` recomputes everything from the samples
and the device-hours pulled from a TSDB.
Either way the hours the imports queued (PendingRollup, PendingWorkloadRollup: the
drain's queue) are rolled up and unqueued first, so nothing is left waiting for a worker.
"""

from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from apps.telemetry.ingest.checks import hour_of
from apps.telemetry.models import GpuDeviceHour, GpuSample, RequestSample
from apps.telemetry.rollups import hourly


class Command(BaseCommand):
    help = "Recompute hourly utilization and request rollups."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="From the first sample on.")

    def handle(self, *args, **options):
        queued, _written = hourly.rollup_pending()
        if options["all"]:
            pool_rows, workload_rows = hourly.rollup_everything()
        else:
            end = hour_of(timezone.now()) + timedelta(hours=1)
            start = end - timedelta(hours=48)
            pool_ids = set(
                GpuSample.objects.filter(timestamp__gte=start, device__pool__isnull=False)
                .values_list("device__pool_id", flat=True)
                .distinct()
            ) | set(
                GpuDeviceHour.objects.filter(hour__gte=start, device__pool__isnull=False)
                .values_list("device__pool_id", flat=True)
                .distinct()
            )
            workload_ids = (
                RequestSample.objects.filter(timestamp__gte=start)
                .values_list("workload_id", flat=True)
                .distinct()
            )
            pool_rows = sum(hourly.rollup_pool_hours(pool_id, start, end) for pool_id in pool_ids)
            workload_rows = sum(
                hourly.rollup_workload_hours(workload_id, start, end)
                for workload_id in workload_ids
            )
        self.stdout.write(
            f"{pool_rows} pool-hours and {workload_rows} workload-hours rolled up"
            + (f" ({queued} of them queued by imports)." if queued else ".")
        )
