"""``manage.py pull_slurm --cluster NAME``: run sacct for the window since the cluster's
last successful pull and import its jobs (apps/slurm/pull.py)."""

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q
from django.utils.dateparse import parse_datetime

from apps.clusters.models import Cluster
from apps.slurm.models import SlurmPull
from apps.slurm.pull import pull_cluster


class Command(BaseCommand):
    help = (
        "Run sacct --parsable2 for the jobs since the cluster's last successful pull (a "
        "little overlap included) and import them; the pull is recorded, and a failed one "
        "ends with an error saying why."
    )

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True, help="The cluster's name or slug")
        parser.add_argument("--sacct", help="sacct's path (default: the SLURM_SACCT setting)")
        parser.add_argument(
            "--since",
            help="Ask for the jobs from this time (ISO 8601 with an offset) instead of the "
            "last pull's end",
        )

    def handle(self, *args, cluster, sacct, since, **options):
        target = Cluster.objects.filter(Q(slug=cluster) | Q(name=cluster)).first()
        if target is None:
            known = ", ".join(Cluster.objects.order_by("name").values_list("name", flat=True))
            raise CommandError(
                f"No cluster is named {cluster!r}. Known clusters: {known or 'none'}."
            )
        start = None
        if since:
            start = parse_datetime(since)
            if start is None or start.tzinfo is None:
                raise CommandError(
                    f"--since {since!r} is not an ISO 8601 time with an offset "
                    "(e.g. 2026-12-01T00:00:00+00:00)."
                )
        pull = pull_cluster(target, sacct=sacct, since=start)
        if pull.status == SlurmPull.Status.FAILED:
            raise CommandError(pull.error)
        record = pull.slurm_import
        self.stdout.write(
            f"{target.name}: jobs since {pull.since:%Y-%m-%d %H:%M} UTC: {record.accepted} "
            f"added, {record.updated} updated, {record.duplicates} duplicates, "
            f"{record.rejected} refused, {record.steps} step rows (no GPU-hours)."
        )
        for error in record.errors:
            self.stderr.write(error["message"])
