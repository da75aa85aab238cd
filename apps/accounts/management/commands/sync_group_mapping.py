"""Load the group mapping's rows from OIDC_GROUP_MAPPING (or --mapping)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.services import MappingSyntaxError, parse_group_mapping, sync_group_mapping


class Command(BaseCommand):
    help = (
        "Add the rows of OIDC_GROUP_MAPPING (group=role:team;…) that the group mapping "
        "lacks; with --replace, also remove the rows it does not list. Entries naming a "
        "team that does not exist are skipped and recorded in the audit log."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--mapping", help="The mapping to load instead of OIDC_GROUP_MAPPING's."
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Remove the rows the mapping does not list (edits made on the page too).",
        )

    def handle(self, *args, mapping=None, replace=False, **options):
        text = settings.OIDC_GROUP_MAPPING if mapping is None else mapping
        try:
            entries = parse_group_mapping(text)
        except MappingSyntaxError as error:
            raise CommandError(f"OIDC_GROUP_MAPPING: {error}") from error
        counts = sync_group_mapping(entries, replace=replace)
        self.stdout.write(
            f"Group mapping: {counts['added']} added, {counts['kept']} already there, "
            f"{counts['removed']} removed."
        )
        for slug in counts["missing_teams"]:
            self.stderr.write(f"Skipped: no team has the slug {slug!r} (see the audit log).")
