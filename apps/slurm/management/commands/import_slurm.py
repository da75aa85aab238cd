"""``manage.py import_slurm FILE --cluster NAME``: import ``sacct --parsable2`` output."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from apps.clusters.models import Cluster
from apps.core.slugs import unique_slug_from_name
from apps.slurm.models import SlurmImport
from apps.slurm.services import import_sacct


class Command(BaseCommand):
    help = (
        "Import sacct --parsable2 output (with its header line) into a cluster's Slurm jobs. "
        "FILE '-' reads standard input. The cluster is named by its name or slug; an "
        "unknown one is an error listing the known ones, unless --create-cluster says to "
        "make it (a Slurm cluster in the site's time zone)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="sacct --parsable2 output, or - for standard input")
        parser.add_argument("--cluster", required=True, help="The cluster's name or slug")
        parser.add_argument(
            "--create-cluster",
            action="store_true",
            help="Create the cluster when no cluster has this name or slug",
        )

    def handle(self, *args, file, cluster, create_cluster, **options):
        text = self._read(file)
        target = Cluster.objects.filter(Q(slug=cluster) | Q(name=cluster)).first()
        if target is None:
            if not create_cluster:
                known = ", ".join(Cluster.objects.order_by("name").values_list("name", flat=True))
                raise CommandError(
                    f"No cluster is named {cluster!r}. Known clusters: {known or 'none'}. "
                    "Name one of them, or add --create-cluster to create it."
                )
            target = Cluster.objects.create(
                name=cluster,
                slug=unique_slug_from_name(cluster, Cluster) or "cluster",
                kind=Cluster.Kind.SLURM,
            )
            self.stdout.write(f"Created the Slurm cluster {target.name} ({target.timezone}).")
        if target.archived_at is not None:
            raise CommandError(f"The cluster {target.name} is archived: restore it first.")
        result = import_sacct(
            target,
            text,
            source=SlurmImport.Source.COMMAND,
            file_name="" if file == "-" else Path(file).name,
        )
        for error in result.errors:
            self.stderr.write(str(error.message))
        self.stdout.write(
            f"{target.name}: {result.accepted} added, {result.updated} updated, "
            f"{result.duplicates} duplicates, {result.rejected} refused, "
            f"{result.steps} step rows (no GPU-hours)."
        )
        if result.nothing_read:
            raise CommandError("No job could be read.")

    def _read(self, file: str) -> str:
        if file == "-":
            import sys

            return sys.stdin.read()
        try:
            return Path(file).read_text(encoding="utf-8")
        except OSError as error:
            raise CommandError(f"Cannot read {file}: {error.strerror}.") from None
        except UnicodeDecodeError as error:
            raise CommandError(f"{file} is not UTF-8 text (byte {error.start}).") from None
