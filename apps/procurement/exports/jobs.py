"""The export job: compute the comparison, write the file in the format asked for."""

from django.core.files.base import ContentFile
from django.utils import translation
from django.utils.translation import gettext as _

from apps.core import runs
from apps.core.outbox import enqueue
from apps.core.sentences import gettext_noop
from apps.procurement.comparison.services import build_comparison_what_if, scenario_queryset
from apps.procurement.exports.pdf import build_pdf
from apps.procurement.exports.spreadsheets import build_csv, build_xlsx
from apps.procurement.models import ComparisonExport

# The file each export format is written as.
WRITERS = {
    ComparisonExport.Format.CSV: build_csv,
    ComparisonExport.Format.XLSX: build_xlsx,
    ComparisonExport.Format.PDF: build_pdf,
}


def run_export(export_id: int, *, language: str | None = None) -> str:
    """Compute the comparison and write the file with ``WRITERS[export.format]``; progress
    is kept on the export for the page's progress bar. A failure is recorded on the export,
    then re-raised. An export finished, running elsewhere or out of attempts is left alone
    (apps/core/runs.py). The file is written in ``language``, or the export's own (the
    language of the page that asked for it)."""

    claimed = runs.claim(
        ComparisonExport,
        export_id,
        startable=(ComparisonExport.Status.PENDING, ComparisonExport.Status.INTERRUPTED),
        progress_pct=10,
        message="",
    )
    export = ComparisonExport.objects.get(pk=export_id)
    if not claimed:
        return export.status
    with export.running(), translation.override(language or export.language):
        export.scenario = scenario_queryset().get(pk=export.scenario_id)
        result = build_comparison_what_if(export.scenario, export.what_if)
        export.advance(40)
        content = WRITERS[export.format](result)
        export.advance(80)
        export.file.save(export.filename, ContentFile(content), save=False)
        # Written in the export's language, which its page is read in.
        export.succeed(_("%(size)s bytes.") % {"size": f"{len(content):,}"}, also_save=["file"])
    return export.status


def reap_stalled_exports() -> int:
    """Mark exports not heard from for a few minutes interrupted and queue them again (an
    export recomputes and replaces its file). Returns the exports marked."""
    return runs.reap(
        ComparisonExport.objects.all(),
        describe=lambda export: (gettext_noop("The worker"), gettext_noop("writing the export")),
        retry=lambda export: enqueue("procurement.generate_export", export.pk),
        advice=lambda export: gettext_noop("ask for the export again."),
    )
