"""Pulling a dcgm-exporter ``/metrics`` endpoint: one scrape parsed with ``parse_dcgm``,
stamped at the pull time, or (``pull_dcgm_exporters``, beat's way) the scrapes of up to
SCRAPE_BATCH_SIZE nodes fetched in parallel and stored in one transaction with one COPY,
one run per source."""

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from apps.accounts.scope import Scope
from apps.core.sentences import Sentence, gettext_noop, sentence, to_data
from apps.telemetry.ingest import importer, storage
from apps.telemetry.ingest.parsers import (
    ParseResult,
    TelemetryFormatError,
    parse_dcgm,
)
from apps.telemetry.models import ImportRun, PullSource
from apps.telemetry.pull.base import (
    STATUS_ERROR,
    STATUS_OK,
    STATUS_WARNING,
    PullError,
    http_error,
    http_get,
    not_telemetry,
    not_utf8,
    record_on_source,
    record_pull,
    source_headers,
)

logger = logging.getLogger(__name__)

# --- dcgm-exporter -----------------------------------------------------------------------


def pull_dcgm_exporter(source: PullSource, *, now: datetime | None = None) -> ImportRun:
    """Scrape ``source.url`` once; lines without their own timestamp are stamped ``now``."""
    now = now or timezone.now()

    def fetch():
        response = http_get(
            source.url,
            accept="text/plain;version=0.0.4;q=1,*/*;q=0.1",
            headers=source_headers(source),
        )
        if response.status != 200:
            raise http_error(source.url, response)
        try:
            text = response.body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise not_utf8(source.url, error) from None
        return parse_dcgm(text, scraped_at=now), ""

    run, status = record_pull(
        source, now, format="dcgm", run_source=ImportRun.Source.SCRAPE, fetch=fetch
    )
    if status != STATUS_ERROR:
        record_on_source(source, now, status, run.message, run.message_parts)
    return run


# --- dcgm-exporter, in batches -------------------------------------------------------------

# Sources per batch task (pull_tasks.pull_due_sources_task): 50 node scrapes are one
# transaction of ~400 samples, which keeps a transaction's fixed cost (a dozen statements
# and a commit) a fiftieth of each scrape's (bench/scale_scrape.py: 6–8× one per scrape).
SCRAPE_BATCH_SIZE = 50
# Endpoints of one batch fetched at once: a slow or dead node holds up one thread for its
# timeout, not the batch's other scrapes.
SCRAPE_FETCH_THREADS = 16


@dataclass
class Scrape:
    """One source's scrape in a batch: the text read at ``scraped_at``, or why none was
    (``failure``, a sentence; ``failed_status`` says how the run ends)."""

    source: PullSource
    scraped_at: datetime
    text: str | None = None
    failure: str = ""  # a Sentence (the server's own words go in as its values)
    failed_status: str = ImportRun.Status.FAILED
    result: ParseResult | None = None
    # Its rows could not be stored: its run names no pool, since the pool may be why.
    store_failed: bool = False


def fetch_scrape(source: PullSource, *, now: datetime | None = None) -> Scrape:
    """GET one source's ``/metrics``; expected failures are kept on the Scrape, never
    raised. The scrape is dated when it is asked for (``now`` when given)."""
    scrape = Scrape(source, now or timezone.now())
    try:
        response = http_get(
            source.url,
            accept="text/plain;version=0.0.4;q=1,*/*;q=0.1",
            headers=source_headers(source),
        )
        if response.status != 200:
            raise http_error(source.url, response)
        try:
            scrape.text = response.body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise not_utf8(source.url, error) from None
    except PullError as error:
        scrape.failure = error.sentence
    return scrape


def fetch_scrapes(sources: list[PullSource], *, now: datetime | None = None) -> list[Scrape]:
    """``fetch_scrape`` of every source, SCRAPE_FETCH_THREADS at a time, in order."""
    if len(sources) <= 1:
        return [fetch_scrape(source, now=now) for source in sources]
    with ThreadPoolExecutor(max_workers=min(SCRAPE_FETCH_THREADS, len(sources))) as pool:
        return list(pool.map(lambda source: fetch_scrape(source, now=now), sources))


def pull_dcgm_exporters(
    sources: list[PullSource], *, now: datetime | None = None
) -> list[ImportRun]:
    """Scrape several dcgm-exporter sources and store what they answered together
    (``store_scrapes``); one ImportRun per source, in order."""
    return store_scrapes(fetch_scrapes(list(sources), now=now))


def store_scrapes(scrapes: list[Scrape]) -> list[ImportRun]:
    """Parse the scrapes and store them in one transaction with one COPY
    (``storage.import_gpu_batch``), their runs and their sources' outcomes with them.

    Why a batch of scrapes per task rather than a buffer per worker flushed every few
    seconds: a batch lives and dies with its task. Its samples, its runs and its sources'
    ``last_pulled_at`` commit together or not at all, so a worker killed mid-batch leaves
    nothing half-recorded, and the redelivered task (acknowledged late) scrapes again, at a
    new instant; a buffer would hold scrapes whose tasks were already acknowledged and
    lose them with its worker.

    Each source keeps a run of its own saying what it stored; a source that could not be
    read or whose answer is not telemetry has a failed or rejected run with the reason, and
    the other scrapes of the batch are stored all the same. Should storing the batch fail
    as a whole (an error no expected answer causes), each scrape is stored again in a
    transaction of its own, so one bad scrape costs only its own samples.
    """
    for scrape in scrapes:
        if scrape.failure:
            continue
        try:
            scrape.result = parse_dcgm(scrape.text, scraped_at=scrape.scraped_at)
        except TelemetryFormatError as error:
            scrape.failure = not_telemetry(scrape.source.url, error)
            scrape.failed_status = ImportRun.Status.REJECTED
        scrape.text = None  # parsed: the rows are what is kept
    try:
        with transaction.atomic():
            return _store_and_record(scrapes)
    except Exception:
        logger.exception(
            "storing a batch of %d scrapes failed; storing them one by one", len(scrapes)
        )
    runs = []
    for scrape in scrapes:
        try:
            with transaction.atomic():
                runs += _store_and_record([scrape])
        except Exception as error:
            logger.exception("storing the scrape of %s failed", scrape.source.url)
            scrape.result, scrape.store_failed = None, True
            scrape.failure = sentence(
                gettext_noop(
                    "%(url)s: storing the scrape failed (%(error)s); nothing of it was kept. "
                    "The source's next pull runs on schedule; the server log has the details."
                ),
                url=scrape.source.url,
                error=f"{type(error).__name__}: {error}",
            )
            scrape.failed_status = ImportRun.Status.FAILED
            with transaction.atomic():
                runs += _store_and_record([scrape])
    return runs


def _store_and_record(scrapes: list[Scrape]) -> list[ImportRun]:
    stored = [scrape for scrape in scrapes if scrape.result is not None]
    # One batch per scope the sources pull in (most fleets: one, "all").
    by_scope: dict[str, list[Scrape]] = {}
    for scrape in stored:
        by_scope.setdefault(scrape.source.pull_scope_key, []).append(scrape)
    summaries = {}
    for scope_key, of_scope in by_scope.items():
        batch = [
            storage.BatchedImport(
                scrape.result,
                pool=scrape.source.pool,
                received_at=scrape.scraped_at,
                cluster_id=scrape.source.cluster_id,
            )
            for scrape in of_scope
        ]
        scope = Scope.from_cache_key(scope_key)
        summaries.update(
            zip(map(id, of_scope), storage.import_gpu_batch(batch, scope=scope), strict=True)
        )
    finished_at = timezone.now()
    runs, outcomes = [], []
    for scrape in scrapes:
        run = ImportRun(
            kind="gpu",
            format="dcgm",
            source=ImportRun.Source.SCRAPE,
            filename=scrape.source.url[:255],
            pool=None if scrape.store_failed else scrape.source.pool,
            skip_bad_rows=True,
            scraped_at=scrape.scraped_at,
            started_at=scrape.scraped_at,
            finished_at=finished_at,
            progress_pct=100,
        )
        summary = summaries.get(id(scrape))
        if summary is None:
            run.status = scrape.failed_status
            parts = [scrape.failure] if isinstance(scrape.failure, Sentence) else []
            status = STATUS_ERROR
            logger.warning(
                "pull of %s (%s) failed: %s", scrape.source.name, scrape.source.url, scrape.failure
            )
            run.message = str(scrape.failure)
        else:
            run.status = importer.set_import_results(run, summary)
            parts = summary.message_parts()
            run.message = "".join(parts)
            status = STATUS_WARNING if summary.rejected else STATUS_OK
        # Stored in English with their msgids, said again in each reader's language.
        run.message_parts = to_data(parts) if parts else []
        runs.append(run)
        outcomes.append((scrape.source, scrape.scraped_at, status, run.message, run.message_parts))
    ImportRun.objects.bulk_create(runs)
    _record_on_sources(outcomes)
    return runs


def _record_on_sources(outcomes) -> None:
    """``record_on_source`` of many sources in one statement, as
    device_registry.refresh_devices does for devices."""
    for source, pulled_at, status, message, parts in outcomes:
        source.last_pulled_at, source.last_status = pulled_at, status
        source.set_last_message(message, parts)
    sources = [source for source, *_rest in outcomes]
    fields = ["last_pulled_at", "last_status", "last_message", "last_message_parts"]
    if len(sources) == 1:
        for source in sources:
            source.save(update_fields=fields)
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE telemetry_pullsource AS source SET last_pulled_at = outcome.pulled_at, "
            "last_status = outcome.status, last_message = outcome.message, "
            "last_message_parts = outcome.parts::jsonb "
            "FROM unnest(%s::bigint[], %s::timestamptz[], %s::text[], %s::text[], %s::text[]) "
            "AS outcome(id, pulled_at, status, message, parts) WHERE source.id = outcome.id",
            [
                [source.pk for source in sources],
                [source.last_pulled_at for source in sources],
                [source.last_status for source in sources],
                [source.last_message for source in sources],
                [json.dumps(source.last_message_parts) for source in sources],
            ],
        )
