from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.backups.self_backup import BackupError, backups_in, restore_database


class Command(BaseCommand):
    help = (
        "Replace gpufleet's database with a backup made by backup_database (pg_restore in "
        "one transaction). Stop the web, worker and beat processes first."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "path",
            nargs="?",
            type=Path,
            help="A backup file; default: the newest in BACKUP_DIR (var/backups/).",
        )
        parser.add_argument(
            "--noinput",
            "--no-input",
            action="store_false",
            dest="interactive",
            help="Do not ask for confirmation.",
        )

    def handle(self, *args, path, interactive, **options):
        if path is None:
            found = backups_in(Path(settings.BACKUP_DIR))
            if not found:
                raise CommandError(f"No backup in {settings.BACKUP_DIR}: give a path.")
            path = found[-1]
        name = settings.DATABASES["default"]["NAME"]
        if interactive:
            answer = input(f"Replace everything in database {name} with {path}? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                raise CommandError("Restore cancelled.")
        try:
            restore_database(path)
        except BackupError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"restored {path} into {name}")
