"""One import, the same way for every channel (upload task, API, command line, pull):
parse, store and record it in one transaction, recognise content imported before, and
reap runs whose worker died."""

import hashlib
import logging
from pathlib import Path

from django.db import DatabaseError, transaction
from django.utils.translation import gettext

from apps.accounts.scope import EVERYTHING
from apps.core import runs
from apps.core.outbox import enqueue
from apps.core.sentences import Sentence, gettext_noop, sentence, to_data
from apps.telemetry.ingest import storage
from apps.telemetry.ingest.checks import refuse_nul_characters, utc_minute
from apps.telemetry.ingest.formats import format_of, gpu_chunks, request_chunks
from apps.telemetry.ingest.parsers import FileLines, TelemetryFormatError, paused_gc
from apps.telemetry.ingest.storage import ImportSummary
from apps.telemetry.models import (
    ImportRun,
)
from apps.telemetry.rollups.hourly import request_drain

logger = logging.getLogger(__name__)

# What an import sets on its run before it ends, saved with its outcome.
_CONTENT_FIELDS = ("content_sha256", "scraped_at")
_RESULT_FIELDS = (
    *_CONTENT_FIELDS,
    "rows_total",
    "rows_accepted",
    "rows_duplicate",
    "rows_rejected",
    "errors",
    "warnings",
    "warning_parts",
)


def set_import_results(run: ImportRun, summary: ImportSummary) -> str:
    """Put the summary's counts, errors and warnings on ``run``, unsaved; returns the
    status the run ends in (a batch of scrapes writes its runs in one INSERT)."""
    run.rows_total = summary.rows_total
    run.rows_accepted = summary.accepted
    run.rows_duplicate = summary.duplicates
    run.rows_rejected = summary.rejected
    run.errors = [error.as_data() for error in summary.errors]
    run.warnings = summary.warnings
    run.warning_parts = [
        to_data(warning) if isinstance(warning, Sentence) else [] for warning in summary.warnings
    ]
    return ImportRun.Status.REJECTED if summary.rejected_whole else ImportRun.Status.SUCCEEDED


def record_import_run(run: ImportRun, summary: ImportSummary) -> ImportRun:
    status = set_import_results(run, summary)
    run.finish(status, summary.message_parts(), also_save=_RESULT_FIELDS)
    return run


def _record_committed(run: ImportRun) -> bool:
    """Whether ``run``'s record, written last in its rows' transaction, was committed:
    the database holds the instant it was finished at."""
    if run.finished_at is None:
        return False
    try:
        return ImportRun.objects.filter(pk=run.pk, finished_at=run.finished_at).exists()
    except DatabaseError:
        return False


# What a run whose rows are stored says when a step after their commit failed: the run
# stays succeeded, since what it counts as accepted is kept.
ROLLUP_FAILED = gettext_noop(
    "Its samples are stored, but rolling up their hours failed (%(error)s): the hours stay "
    "queued and the next rollup retries them (every minute where a worker runs, or "
    "manage.py rollup_usage)."
)
AFTER_STORE_FAILED = gettext_noop(
    "Its samples are stored, but a step after storing them failed (%(error)s); the server "
    "log has the details."
)


def say_follow_up_failed(run: ImportRun, msgid: str, error: BaseException) -> None:
    """Add to the end of a stored run's message that ``msgid``'s step failed with
    ``error``; its status and counts stay as recorded."""
    logger.error("import run %s: a step after the commit failed", run.pk, exc_info=error)
    space, failure = sentence(" "), sentence(msgid, error=f"{type(error).__name__}: {error}")
    run.message = f"{run.message}{space}{failure}"
    if run.message_parts:
        run.message_parts = [*run.message_parts, space.to_data(), failure.to_data()]
    run.save(update_fields=["message", "message_parts"])


def store_and_record(run: ImportRun, store) -> ImportSummary:
    """``store()``'s rows and ``run``'s record of them (status, counts, message) in one
    transaction, so a run never counts rows it did not keep, nor are rows kept without
    their run's record. An error before the commit is raised, with nothing stored; the
    run's own lifecycle marks it failed, accepting nothing (``ImportRun.fail``). A
    commit hook that fails afterwards (a task run inline where Celery is eager) is said
    on the run, which stays as recorded."""
    try:
        with transaction.atomic():
            summary = store()
            record_import_run(run, summary)
    except Exception as error:
        if not _record_committed(run):
            raise
        say_follow_up_failed(run, AFTER_STORE_FAILED, error)
    return summary


def request_rollup_of(run: ImportRun, summary: ImportSummary) -> None:
    """After the run's commit: ask for the drain of the hours it queued. Where the drain
    runs inline (Celery eager) and fails, the hours stay queued for the next drain, and
    the run, whose rows are stored, says so."""
    if not (summary.touched_pool_hours or summary.touched_workload_hours):
        return
    try:
        request_drain()
    except Exception as error:
        say_follow_up_failed(run, ROLLUP_FAILED, error)


def reap_stalled_imports() -> int:
    """Mark imports not heard from for a few minutes interrupted (apps/core/runs.py); an
    upload whose file is still there is queued again, since samples are keyed upserts.
    Returns the runs marked."""
    pulled = (ImportRun.Source.SCRAPE, ImportRun.Source.PROMETHEUS, ImportRun.Source.TSDB_HOURLY)

    def describe(run):
        by_worker = run.source == ImportRun.Source.UPLOAD or run.source in pulled
        return (
            gettext_noop("The worker") if by_worker else gettext_noop("The process"),
            gettext_noop("importing"),
        )

    def can_retry(run):
        path = run.task_arguments.get("path")
        return run.source == ImportRun.Source.UPLOAD and bool(path) and Path(path).exists()

    def advice(run):
        if run.source in pulled:
            return gettext_noop("the source's next pull runs on schedule.")
        return gettext_noop("import the file again.")

    return runs.reap(
        ImportRun.objects.all(),
        describe=describe,
        can_retry=can_retry,
        retry=lambda run: enqueue("telemetry.import_file", run.pk, **run.task_arguments),
        advice=advice,
    )


def content_sha256(content: bytes | str) -> str:
    """The digest that recognises a file imported again: of its UTF-8 bytes, a leading
    byte-order mark left out (the importers read text as utf-8-sig)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    return hashlib.sha256(data.removeprefix(b"\xef\xbb\xbf")).hexdigest()


def file_sha256(path) -> str:
    """``content_sha256`` of a file's bytes, read 64 KiB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(3).removeprefix(b"\xef\xbb\xbf"))
        while block := handle.read(2**16):
            digest.update(block)
    return digest.hexdigest()


def earlier_identical_import(*, kind: str, digest: str, runs=None) -> ImportRun | None:
    """The first import of the same kind and content that succeeded, among ``runs`` (the
    ones the importer may see; default all): importing the content again would add
    nothing."""
    if not digest:
        return None
    return (
        (ImportRun.objects.all() if runs is None else runs)
        .filter(kind=kind, content_sha256=digest, status=ImportRun.Status.SUCCEEDED)
        .order_by("created_at", "pk")
        .first()
    )


def already_imported_sentence(earlier: ImportRun) -> str:
    return gettext(
        "This file was already imported on %(when)s as import #%(run)s: nothing added."
    ) % {"when": utc_minute(earlier.created_at), "run": earlier.pk}


def run_import(run: ImportRun, source, *, columns=None, tz=None, scraped_at=None, scope=EVERYTHING):
    """Parse, store and record one import (``_parse_store_and_record``) of ``source``, a
    text or the path of a file (read a chunk at a time), writing the run's heartbeat and
    progress meanwhile. Any error but a refused file marks the run failed with a
    sentence (``ImportRun.failure_sentence``), then is raised: no channel leaves a run
    "running". ``scope``: what the run's starter could see when they started it (GPU
    telemetry of GPUs in other pools is refused, line by line)."""
    with run.running(recorded=(TelemetryFormatError,)) as beat:
        if not isinstance(source, str):
            source = FileLines(source)
        with paused_gc():
            return _parse_store_and_record(
                run, source, beat, columns=columns, tz=tz, scraped_at=scraped_at, scope=scope
            )


# The progress bar's share of reading and storing; the rest is recording and scheduling.
_PROGRESS_BEFORE_READING_PCT, _PROGRESS_AFTER_STORING_PCT = 5, 95


def _parse_store_and_record(
    run: ImportRun, source, beat, *, columns=None, tz=None, scraped_at=None, scope=EVERYTHING
):
    """Parse, store and record one import, the same way for every channel (command line,
    upload task, API): the run ends succeeded or rejected with its counts, recorded in the
    transaction that stores its rows (``store_and_record``), and the hours it touched are
    rolled up by a drain asked for after the commit. A file that cannot be
    read at all (a NUL character or bytes that are not UTF-8 included) raises
    TelemetryFormatError after the run is marked rejected with the reason.

    The run keeps the content's digest (unless the channel already set it from the raw
    bytes) and, for dcgm, the scrape time the samples were dated at; samples are checked
    for clock skew against the run's creation, when the content arrived. A file is read
    and stored a chunk at a time, its progress reported after each chunk."""
    is_file = isinstance(source, FileLines)
    if not run.content_sha256:
        run.content_sha256 = file_sha256(source.path) if is_file else content_sha256(source)
    format = format_of(run.kind, run.format)
    if format is not None and format.needs_scrape_time:
        scraped_at = scraped_at or run.scraped_at or run.created_at
        run.scraped_at = scraped_at

    def after_chunk():
        if is_file:
            span = _PROGRESS_AFTER_STORING_PCT - _PROGRESS_BEFORE_READING_PCT
            beat.progress(_PROGRESS_BEFORE_READING_PCT + round(span * source.fraction_read))

    def store() -> ImportSummary:
        if not is_file:
            refuse_nul_characters(source)
        if run.kind == "gpu":
            chunks = gpu_chunks(
                source, format=run.format, columns=columns, tz=tz, scraped_at=scraped_at
            )
            return storage.import_gpu_samples(
                chunks,
                pool=run.pool,
                skip_bad_rows=run.skip_bad_rows,
                received_at=run.created_at,
                after_chunk=after_chunk,
                scope=scope,
            )
        chunks = request_chunks(source, format=run.format, columns=columns, tz=tz)
        return storage.import_requests(
            chunks,
            workload=run.workload,
            skip_bad_rows=run.skip_bad_rows,
            after_chunk=after_chunk,
        )

    try:
        summary = store_and_record(run, store)
    except TelemetryFormatError as error:
        run.finish(ImportRun.Status.REJECTED, error.sentence, also_save=_CONTENT_FIELDS)
        raise
    request_rollup_of(run, summary)
    return summary
