"""Pulling GPU telemetry on a schedule: two pull modes run by Celery beat.

- ``pull_dcgm_exporter``: HTTP GET a dcgm-exporter ``/metrics`` endpoint, parse it with
  ``parse_dcgm`` stamped at the pull time, import it. Beat pulls these sources in batches
  (``pull_dcgm_exporters``: the scrapes of up to SCRAPE_BATCH_SIZE nodes, fetched in
  parallel, stored in one transaction with one COPY, one run per source).
- ``pull_prometheus``: ask a Prometheus server's ``/api/v1/query_range`` for the DCGM
  metrics over the range since the last pull, turn the series into one row per device and
  instant, import them. Evaluation instants sit on a grid of ``step_seconds`` counted from
  the epoch, so an overlapping or repeated pull asks for the very same instants and the
  (device, timestamp) key stores nothing twice.

Both record an ImportRun (history page) and the outcome on the PullSource, keep the good
rows of a sample with an odd line (a live endpoint should not lose a whole scrape to one
bad value; the rejected ones are listed on the run), leave the pool-hours they touched
queued for the next ``telemetry.rollup_pending`` beat tick (PendingRollup: one rollup per
pool-hour a minute, not one per scrape), and never raise for what a network or a server can be
expected to do: unreachable, timing out, answering an HTTP error or something that is not
telemetry.

HTTP is the standard library's: two GETs need no extra dependency. Prometheus API
reference: https://prometheus.io/docs/prometheus/latest/querying/api/ ("Range queries",
"Format overview", "Expression query result formats").
"""

import base64
import json
import logging
import math
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode, urlsplit
from urllib.request import Request, urlopen

from django.db import connection, transaction
from django.utils import timezone

from apps.accounts.scope import Scope
from apps.core.sentences import Sentence, as_sentence, gettext_noop, sentence, to_data
from apps.telemetry import services
from apps.telemetry.models import ImportRun, PullSource
from apps.telemetry.parsers import (
    EARLIEST_TIMESTAMP,
    DeviceKey,
    GpuSampleRow,
    ParseResult,
    RowError,
    TelemetryFormatError,
    parse_dcgm,
)

logger = logging.getLogger(__name__)

HTTP_TIMEOUT_SECONDS = 10
# A scrape of an 8-GPU node is ~100 KB and a 6-hour query_range for 1,000 GPUs ~10 MB of
# JSON per metric; anything far beyond that is not what we asked for.
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
USER_AGENT = "gpufleet-telemetry-pull/1"
# Prometheus refuses a query_range with more points than this per series
# ("exceeded maximum resolution of 11,000 points per timeseries").
PROMETHEUS_MAX_POINTS_PER_SERIES = 11_000
DEFAULT_FIRST_WINDOW = timedelta(hours=1)
MAX_FUTURE = timedelta(days=1)  # as the file parsers: a clock or zone mistake, not data

STATUS_OK = "ok"
STATUS_WARNING = "warning"  # pulled, but some lines or samples were rejected
STATUS_ERROR = "error"

# DCGM metric → GpuSampleRow field. GPU_UTIL and GR_ENGINE_ACTIVE both feed utilization:
# the engine-active ratio ×100 wins where present (it exists per MIG slice), as in
# parse_dcgm.
_GPU_UTIL = "gpu_util"
_GR_ENGINE_ACTIVE = "gr_engine_active"
PROMETHEUS_METRICS = {
    "DCGM_FI_DEV_GPU_UTIL": _GPU_UTIL,
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": _GR_ENGINE_ACTIVE,
    "DCGM_FI_DEV_FB_USED": "memory_used_mib",
    "DCGM_FI_DEV_FB_FREE": "memory_free_mib",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "energy_mj",
    "DCGM_FI_DEV_GPU_TEMP": "temperature_c",
}

# DCGM's in-band "no value" markers, the same rule as apps/telemetry/parsers/dcgm.py:
# int64 fields use DCGM_INT64_BLANK = 0x7ffffffffffffff0 and the next three values
# (9223372036854775794 is "not supported"), which Prometheus, holding float64, returns as
# "9223372036854775808"; double fields use DCGM_FP64_BLANK = 2^47 and the next three.
_INT64_SENTINEL_FLOOR = 9.2e18
_FP64_SENTINELS = frozenset(float(2**47 + offset) for offset in range(4))
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class PullError(Exception):
    """An expected failure of a pull (network, HTTP, server error): the message, a
    ``Sentence``, says why in words fit for the source's status line. Read it back with
    ``error.args[0]`` (``str()`` keeps only the English)."""

    @property
    def sentence(self) -> Sentence:
        return as_sentence(self.args[0] if len(self.args) == 1 else str(self))


def is_dcgm_blank(value: float) -> bool:
    """True for DCGM's blank/"not supported" sentinels, NaN and ±Inf: a missing reading."""
    return (
        math.isnan(value)
        or math.isinf(value)
        or value >= _INT64_SENTINEL_FLOOR
        or value in _FP64_SENTINELS
    )


# --- HTTP ------------------------------------------------------------------------------


@dataclass
class _HttpResponse:
    status: int
    body: bytes


def _read_body(response, shown_as: str) -> bytes:
    limit = MAX_RESPONSE_BYTES
    too_large = PullError(
        sentence(
            gettext_noop("%(url)s answered more than %(limit_mib)s MiB"),
            url=shown_as,
            limit_mib=limit // 2**20,
        )
    )
    body = response.read(limit + 1)
    if len(body) > limit:
        raise too_large
    if (response.headers.get("Content-Encoding") or "").lower() == "gzip":
        try:
            # Bounded, unlike gzip.decompress: a small answer may inflate without end.
            body = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(body, limit + 1)
        except zlib.error as error:
            raise PullError(
                sentence(
                    gettext_noop("%(url)s answered broken gzip (%(error)s)"),
                    url=shown_as,
                    error=str(error),
                )
            ) from None
        if len(body) > limit:
            raise too_large
    return body


def authorization_headers(*, username: str = "", password: str = "", bearer_token: str = ""):
    """The ``Authorization`` header for HTTP basic authentication (RFC 7617) or a bearer
    token (RFC 6750), the token when both are given; none without credentials."""
    if bearer_token:
        return {"Authorization": f"Bearer {bearer_token}"}
    if username or password:
        pair = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        return {"Authorization": f"Basic {pair}"}
    return {}


def source_headers(source: PullSource) -> dict[str, str]:
    """The headers every request of ``source``'s pulls carries: its credentials."""
    return authorization_headers(
        username=source.username, password=source.password, bearer_token=source.bearer_token
    )


def http_get(
    url: str,
    *,
    accept: str,
    shown_as: str | None = None,
    timeout_seconds: float | None = None,
    headers: dict[str, str] | None = None,
) -> _HttpResponse:
    """GET ``url``; HTTP error statuses are returned, not raised (the caller knows what an
    error body means). Raises PullError, naming ``shown_as`` (default: the URL), when no
    answer comes within ``timeout_seconds`` (default ``HTTP_TIMEOUT_SECONDS``); when the
    server cannot be reached, the PullError's ``__cause__`` is the reason (a refused
    connection, an unknown host name). ``headers`` (the credentials) go to ``url`` only,
    never to where it redirects."""
    shown_as = shown_as or url
    timeout = HTTP_TIMEOUT_SECONDS if timeout_seconds is None else timeout_seconds
    if urlsplit(url).scheme not in ("http", "https"):
        raise PullError(
            sentence(
                gettext_noop("%(url)s: only http:// and https:// URLs can be pulled"), url=shown_as
            )
        )
    request = Request(  # noqa: S310 - the scheme is checked above
        url, headers={"Accept": accept, "Accept-Encoding": "gzip", "User-Agent": USER_AGENT}
    )
    for name, value in (headers or {}).items():
        request.add_unredirected_header(name, value)
    try:
        with urlopen(request, timeout=timeout) as response:  # noqa: S310
            return _HttpResponse(response.status, _read_body(response, shown_as))
    except HTTPError as error:
        try:
            body = _read_body(error, shown_as)
        except (OSError, HTTPException, PullError):
            body = b""
        return _HttpResponse(error.code, body)
    except URLError as error:
        if isinstance(error.reason, TimeoutError):
            raise PullError(_no_answer_within(shown_as, timeout)) from None
        raise PullError(
            sentence(
                gettext_noop("could not reach %(url)s: %(reason)s"),
                url=shown_as,
                reason=str(error.reason),
            )
        ) from (error.reason if isinstance(error.reason, BaseException) else None)
    except TimeoutError:
        raise PullError(_no_answer_within(shown_as, timeout)) from None
    except (OSError, HTTPException) as error:
        raise PullError(
            sentence(
                gettext_noop("reading %(url)s failed: %(error)s"),
                url=shown_as,
                error=str(error or type(error).__name__),
            )
        ) from None


def _no_answer_within(shown_as: str, timeout_seconds: float) -> Sentence:
    return sentence(
        gettext_noop("%(url)s did not answer within %(seconds)s s"),
        url=shown_as,
        seconds=f"{timeout_seconds:g}",
    )


def _http_error(url: str, response: _HttpResponse) -> PullError:
    excerpt = response.body[:200].decode("utf-8", "replace").strip()
    if excerpt:
        return PullError(
            sentence(
                gettext_noop("%(url)s answered HTTP %(status)s: %(excerpt)s"),
                url=url,
                status=response.status,
                excerpt=excerpt,
            )
        )
    return PullError(
        sentence(gettext_noop("%(url)s answered HTTP %(status)s"), url=url, status=response.status)
    )


def _not_utf8(url: str, error: UnicodeDecodeError) -> PullError:
    return PullError(
        sentence(
            gettext_noop("%(url)s answered text that is not UTF-8 (%(error)s)"),
            url=url,
            error=str(error),
        )
    )


def _not_telemetry(url: str, error: TelemetryFormatError) -> Sentence:
    """The source's answer is not telemetry: its URL and the parser's reason."""
    return sentence(gettext_noop("%(url)s: %(error)s"), url=url, error=as_sentence(error.sentence))


# --- Outcome on the run and the source ---------------------------------------------------


def _finish_failed(
    source: PullSource, run: ImportRun, now: datetime, reason: Sentence, status: str
) -> ImportRun:
    # Nothing of the pull was stored (``services.store_and_record``): it accepted none.
    run.rows_accepted = run.rows_duplicate = 0
    run.finish(status, reason, also_save=["rows_accepted", "rows_duplicate"])
    _record_on_source(source, now, STATUS_ERROR, reason)
    logger.warning("pull of %s (%s) failed: %s", source.name, source.url, reason)
    return run


def _record_on_source(
    source: PullSource, now: datetime, status: str, message, parts=None, **extra
) -> None:
    """The outcome on the source: ``message`` a Sentence or a list of them (or plain text
    with its stored ``parts``, a run's), kept with their msgids."""
    source.last_pulled_at, source.last_status = now, status
    source.set_last_message(message, parts)
    for name, value in extra.items():
        setattr(source, name, value)
    source.save(
        update_fields=[
            "last_pulled_at",
            "last_status",
            "last_message",
            "last_message_parts",
            *extra,
        ]
    )


def _pull(
    source: PullSource, now: datetime, *, format: str, run_source: str, fetch, run=None
) -> tuple[ImportRun, str]:
    """Record a run (or use ``run``, already running), ``fetch()`` → (ParseResult, note),
    import the rows and queue their pool-hours for rollup in the transaction that records
    the run's outcome; returns (run, status for the source). Expected failures are
    recorded on the run and the source and come back as status "error"; anything else is
    recorded, then raised."""
    if run is None:
        run = ImportRun.objects.create(
            kind="gpu",
            format=format,
            source=run_source,
            filename=source.url[:255],
            pool=source.pool,
            skip_bad_rows=True,
            status=ImportRun.Status.RUNNING,
            started_at=timezone.now(),
        )
    try:
        result, note = fetch()
        summary = services.store_and_record(
            run,
            lambda: services.import_gpu_samples(
                result,
                pool=source.pool,
                skip_bad_rows=True,
                received_at=now,
                scope=source.pull_scope,
            ),
        )
    except PullError as error:
        failed = _finish_failed(source, run, now, error.sentence, ImportRun.Status.FAILED)
        return failed, STATUS_ERROR
    except TelemetryFormatError as error:
        reason = _not_telemetry(source.url, error)
        return _finish_failed(source, run, now, reason, ImportRun.Status.REJECTED), STATUS_ERROR
    except Exception as error:  # a bug or a time limit: on the record, then up to Celery
        reason = sentence(gettext_noop("internal error: %(error)s"), error=repr(error))
        _finish_failed(source, run, now, reason, ImportRun.Status.FAILED)
        raise
    if note:
        lead = sentence(gettext_noop("%(note)s: "), note=as_sentence(note))
        run.message = f"{lead}{run.message}"
        run.message_parts = [lead.to_data(), *run.message_parts] if run.message_parts else []
        run.save(update_fields=["message", "message_parts"])
    return run, STATUS_WARNING if summary.rejected else STATUS_OK


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
            raise _http_error(source.url, response)
        try:
            text = response.body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _not_utf8(source.url, error) from None
        return parse_dcgm(text, scraped_at=now), ""

    run, status = _pull(source, now, format="dcgm", run_source=ImportRun.Source.SCRAPE, fetch=fetch)
    if status != STATUS_ERROR:
        _record_on_source(source, now, status, run.message, run.message_parts)
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
            raise _http_error(source.url, response)
        try:
            scrape.text = response.body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _not_utf8(source.url, error) from None
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
    (``services.import_gpu_batch``), their runs and their sources' outcomes with them.

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
            scrape.failure = _not_telemetry(scrape.source.url, error)
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
            services.BatchedImport(
                scrape.result, pool=scrape.source.pool, received_at=scrape.scraped_at
            )
            for scrape in of_scope
        ]
        scope = Scope.from_cache_key(scope_key)
        summaries.update(
            zip(map(id, of_scope), services.import_gpu_batch(batch, scope=scope), strict=True)
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
            run.status = services.set_import_results(run, summary)
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
    """``_record_on_source`` of many sources in one statement, as
    services._refresh_devices does for devices."""
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


# --- Prometheus: series → rows (framework-free) -----------------------------------------


def series_points(data: dict) -> Iterator[tuple[dict, list[tuple[int, str]]]]:
    """``(labels, [(timestamp ms, value text)…])`` per series of a query result's ``data``:
    a ``matrix`` (query_range: ``values``) or a ``vector`` (instant query: ``value``).
    Prometheus writes timestamps as float seconds and values as strings ("NaN", "+Inf")."""
    result_type = data.get("resultType")
    if result_type not in ("matrix", "vector"):
        raise TelemetryFormatError(
            f"expected a matrix or vector result, got resultType {result_type!r}"
        )
    for series in data.get("result") or []:
        if result_type == "matrix":
            points = series.get("values") or []
        else:
            points = [series["value"]] if series.get("value") else []
        yield (
            series.get("metric") or {},
            [(round(float(timestamp) * 1000), value) for timestamp, value in points],
        )


def _host_of(instance: str) -> str:
    """``node-1:9400`` → ``node-1``; ``[fd00::1]:9400`` → ``fd00::1``."""
    if instance.startswith("["):
        return instance[1 : instance.find("]")] if "]" in instance else instance
    host, separator, port = instance.rpartition(":")
    return host if separator and port.isdigit() and ":" not in host else instance


def _workload_labels(labels: dict) -> tuple[str, str, str]:
    """(pod, namespace, container) of the workload using the GPU.

    When Prometheus scrapes the exporter without ``honor_labels``, the exporter's own
    pod/namespace/container labels are renamed ``exported_*`` and the plain ones name the
    exporter's pod (Kubernetes service discovery). Series of GPUs that no pod uses carry
    only those: a pod named after the scrape job or service (``nvidia-dcgm-exporter-wqqqn``
    under job ``nvidia-dcgm-exporter``) is the exporter, not a workload, and is left out.
    """
    if labels.get("exported_pod") or labels.get("exported_namespace"):
        return (
            labels.get("exported_pod", ""),
            labels.get("exported_namespace", ""),
            labels.get("exported_container", ""),
        )
    pod = labels.get("pod") or labels.get("pod_name") or ""
    namespace = labels.get("namespace") or labels.get("pod_namespace") or ""
    container = labels.get("container") or labels.get("container_name") or ""
    exporter_names = {labels.get("job"), labels.get("service")} - {None, ""}
    if any(pod.startswith(f"{name}-") for name in exporter_names) or container in exporter_names:
        return "", "", ""
    return pod, namespace, container


def _describe_series(name: str, labels: dict) -> str:
    shown = [
        f'{key}="{labels[key]}"'
        for key in ("UUID", "uuid", "GPU_I_ID", "Hostname", "hostname", "instance")
        if labels.get(key)
    ]
    return f"{name}{{{', '.join(shown)}}}"


@dataclass
class _Sample:
    first_series: str
    context: dict
    values: dict = field(default_factory=dict)
    rejected: bool = False


def _not_whole_number(label: str, value: str) -> Sentence:
    # The msgid parse_dcgm says it with, translated once for both.
    return sentence(
        gettext_noop("label %(label)s '%(value)s' is not a whole number"), label=label, value=value
    )


def _device_context(labels: dict) -> tuple[DeviceKey, dict] | Sentence:
    """The device and what it says about itself, or why the series names no device."""
    uuid = labels.get("UUID") or labels.get("uuid")
    if not uuid:
        return sentence(
            gettext_noop("has no UUID label (nor the old uuid), so the GPU cannot be identified")
        )
    gpu_instance_id = gpu_index = None
    if labels.get("GPU_I_ID"):
        try:
            gpu_instance_id = int(labels["GPU_I_ID"])
        except ValueError:
            return _not_whole_number("GPU_I_ID", labels["GPU_I_ID"])
    if labels.get("gpu"):
        try:
            gpu_index = int(labels["gpu"])
        except ValueError:
            return _not_whole_number("gpu", labels["gpu"])
    pod, namespace, container = _workload_labels(labels)
    return DeviceKey(uuid, gpu_instance_id), {
        "hostname": (
            labels.get("Hostname") or labels.get("hostname") or _host_of(labels.get("instance", ""))
        ),
        "gpu_index": gpu_index,
        "model_name": labels.get("modelName", ""),
        "driver_version": labels.get("DCGM_FI_DRIVER_VERSION", ""),
        "mig_profile": labels.get("GPU_I_PROFILE", ""),
        "pod": pod,
        "namespace": namespace,
        "container": container,
    }


def _checked_value(slot: str, value_text: str) -> tuple[float | None, Sentence | str]:
    """(value or None when DCGM says "no value", problem or "")."""
    try:
        value = float(value_text)
    except (TypeError, ValueError):
        return None, sentence(gettext_noop("value '%(value)s' is not a number"), value=value_text)
    if is_dcgm_blank(value):
        return None, ""
    if slot == _GPU_UTIL and not 0.0 <= value <= 100.0:
        return None, sentence(gettext_noop("value '%(value)s' is outside 0–100"), value=value_text)
    if slot == _GR_ENGINE_ACTIVE and not 0.0 <= value <= 1.0:
        return None, sentence(
            gettext_noop("value '%(value)s' is outside 0–1 (a ratio: 1 means 100%% busy)"),
            value=value_text,
        )
    return value, ""


def _series_error(series: str, moment: str, problem: Sentence) -> RowError:
    """A sample's problem, after the series it came from and its instant (no line: 0)."""
    return RowError(
        0,
        sentence(
            gettext_noop("%(series)s at %(moment)s: %(problem)s"),
            series=series,
            moment=moment,
            problem=problem,
        ),
    )


def rows_from_prometheus(
    results: Iterable[tuple[str, dict]], *, now: datetime | None = None
) -> ParseResult:
    """One GpuSampleRow per (device, instant) from query results of the DCGM metrics.

    ``results`` holds ``(metric queried, response["data"])`` pairs; a series' own
    ``__name__`` wins over the metric queried. Devices and labels as in ``parse_dcgm``:
    ``UUID``/``uuid`` + ``GPU_I_ID``, ``gpu``, ``Hostname``/``hostname`` (else the
    ``instance`` host), ``modelName``, ``DCGM_FI_DRIVER_VERSION``, ``GPU_I_PROFILE``, and
    the workload's pod labels (see ``_workload_labels``). Values: DCGM's sentinels, NaN and
    ±Inf are missing; GR_ENGINE_ACTIVE (0–1) ×100 is preferred over GPU_UTIL (0–100) for
    ``utilization_pct``. A sample with a value that is not a number or out of range, two
    different values of one metric (e.g. two jobs scraping one exporter), a time more
    than a day ahead or before 2000 is left out and reported; errors have no line, so
    ``line_number`` 0.
    """
    latest = (now or datetime.now(UTC)) + MAX_FUTURE
    samples: dict[tuple, _Sample] = {}
    errors: list[RowError] = []
    for metric, data in results:
        for labels, points in series_points(data):
            name = labels.get("__name__") or metric
            slot = PROMETHEUS_METRICS.get(name)
            if slot is None:
                raise TelemetryFormatError(f"{name} is not one of the DCGM metrics pulled")
            described = _describe_series(name, labels)
            context = _device_context(labels)
            if isinstance(context, str):
                errors.append(
                    RowError(
                        0,
                        sentence(
                            gettext_noop("%(series)s %(problem)s; %(points)s point(s) left out"),
                            series=described,
                            problem=context,
                            points=len(points),
                        ),
                    )
                )
                continue
            device, descriptive = context
            for timestamp_ms, value_text in points:
                key = (device, timestamp_ms)
                sample = samples.get(key)
                if sample is None:
                    # A copy: merging fills in labels of this sample alone.
                    sample = samples[key] = _Sample(described, dict(descriptive))
                else:
                    for label_field, label_value in descriptive.items():
                        if sample.context[label_field] in ("", None):
                            sample.context[label_field] = label_value
                value, problem = _checked_value(slot, value_text)
                if not problem and value is not None:
                    previous = sample.values.get(slot)
                    if previous is not None and previous != value:
                        problem = sentence(
                            gettext_noop(
                                "value '%(value)s' contradicts %(previous)s reported for the "
                                "same GPU and time by another series"
                            ),
                            value=value_text,
                            previous=f"{previous:g}",
                        )
                    else:
                        sample.values[slot] = value
                if problem:
                    moment = _EPOCH + timedelta(milliseconds=timestamp_ms)
                    errors.append(_series_error(described, moment.isoformat(), problem))
                    sample.rejected = True

    rows: list[GpuSampleRow] = []
    for (device, timestamp_ms), sample in samples.items():
        if sample.rejected:
            continue
        timestamp = _EPOCH + timedelta(milliseconds=timestamp_ms)
        if timestamp > latest:
            errors.append(
                _series_error(
                    sample.first_series,
                    timestamp.isoformat(),
                    sentence(
                        gettext_noop(
                            "more than 1 day in the future (is the Prometheus server's clock "
                            "right?)"
                        )
                    ),
                )
            )
            continue
        if timestamp < EARLIEST_TIMESTAMP:
            errors.append(
                _series_error(
                    sample.first_series,
                    f"{timestamp:%Y-%m-%d %H:%M:%S}",
                    sentence(
                        gettext_noop(
                            "before %(earliest)s (is the clock of the node or of the "
                            "Prometheus server set?)"
                        ),
                        earliest=f"{EARLIEST_TIMESTAMP:%Y-%m-%d}",
                    ),
                )
            )
            continue
        values = sample.values
        engine_active = values.pop(_GR_ENGINE_ACTIVE, None)
        gpu_util = values.pop(_GPU_UTIL, None)
        rows.append(
            GpuSampleRow(
                line_number=0,
                device=device,
                timestamp=timestamp,
                utilization_pct=engine_active * 100.0 if engine_active is not None else gpu_util,
                **sample.context,
                **values,
            )
        )
    return ParseResult(rows=rows, errors=errors)


# --- Prometheus: the HTTP API -------------------------------------------------------------


def prometheus_data(payload, *, query: str) -> dict:
    """The ``data`` of a Prometheus API answer; raises PullError for an error answer
    (``{"status": "error", "errorType": …, "error": …}``) or one that is not the API's."""
    if not isinstance(payload, dict) or payload.get("status") not in ("success", "error"):
        raise PullError(
            sentence(
                gettext_noop("the answer to %(query)s is not a Prometheus API response"),
                query=query,
            )
        )
    if payload["status"] == "error":
        raise PullError(
            sentence(
                gettext_noop("Prometheus refused the query %(query)s (%(error_type)s): %(reason)s"),
                query=query,
                error_type=payload.get("errorType") or "error",
                reason=payload.get("error") or sentence(gettext_noop("no reason given")),
            )
        )
    data = payload.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise PullError(
            sentence(gettext_noop("the answer to %(query)s has no data.result"), query=query)
        )
    return data


@dataclass
class RangeAnswer:
    """A query_range answer: its ``data``, the server's warnings, and whether it says the
    answer is partial (VictoriaMetrics cluster's ``isPartial``: a storage node did not
    answer)."""

    data: dict
    warnings: list[str]
    partial: bool


def query_range_answer(
    base_url: str,
    query: str,
    *,
    start: datetime,
    end: datetime,
    step_seconds: int,
    timeout_seconds: float | None = None,
    extra_params: dict | None = None,
    headers: dict[str, str] | None = None,
) -> RangeAnswer:
    """``GET {base_url}/api/v1/query_range``; raises PullError."""
    timeout = HTTP_TIMEOUT_SECONDS if timeout_seconds is None else timeout_seconds
    url = f"{base_url.rstrip('/')}/api/v1/query_range?" + urlencode(
        {
            "query": query,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": str(step_seconds),
            # The server gives up a little before we would, and says so in its answer.
            "timeout": f"{max(1, math.ceil(timeout) - 1)}s",
            **(extra_params or {}),
        }
    )
    shown_as = f"{base_url} (query_range {query})"
    response = http_get(
        url, accept="application/json", shown_as=shown_as, timeout_seconds=timeout, headers=headers
    )
    try:
        payload = json.loads(response.body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        if response.status != 200:
            raise _http_error(shown_as, response) from None
        raise PullError(
            sentence(
                gettext_noop("%(url)s did not answer JSON: is it a Prometheus server?"),
                url=shown_as,
            )
        ) from None
    # Prometheus answers 400/422/503 with the error JSON, which says more than the status.
    data = prometheus_data(payload, query=query)
    return RangeAnswer(
        data,
        [str(warning) for warning in payload.get("warnings") or []],
        payload.get("isPartial") is True,
    )


def query_range(
    base_url: str,
    query: str,
    *,
    start: datetime,
    end: datetime,
    step_seconds: int,
    headers: dict[str, str] | None = None,
) -> tuple[dict, list[str]]:
    """``(data, warnings)`` of ``GET {base_url}/api/v1/query_range``; raises PullError."""
    answer = query_range_answer(
        base_url, query, start=start, end=end, step_seconds=step_seconds, headers=headers
    )
    return answer.data, answer.warnings


def _align_down(moment: datetime, step_seconds: int) -> datetime:
    seconds = math.floor(moment.timestamp() / step_seconds) * step_seconds
    return datetime.fromtimestamp(seconds, UTC)


def prometheus_range(
    pulled_until: datetime | None,
    now: datetime,
    *,
    step_seconds: int,
    max_window: timedelta,
) -> tuple[datetime, datetime]:
    """[start, end] of the next pull, both on the step grid: from where the last pull
    ended (the last instant is asked again: harmless, it is keyed, and fills it if the
    server had not ingested it yet) or an hour back, to now, at most ``max_window`` and
    at most Prometheus's 11,000 points per series."""
    end = _align_down(now, step_seconds)
    start = _align_down(pulled_until or now - DEFAULT_FIRST_WINDOW, step_seconds)
    window = min(
        max_window, timedelta(seconds=step_seconds * (PROMETHEUS_MAX_POINTS_PER_SERIES - 1))
    )
    if end - start > window:
        end = _align_down(start + window, step_seconds)
    return min(start, end), end


def pull_prometheus(
    source: PullSource,
    *,
    now: datetime | None = None,
    step_seconds: int = 60,
    max_window: timedelta = timedelta(hours=6),
    run: ImportRun | None = None,
) -> ImportRun:
    """Fetch the DCGM metrics from ``source.pulled_until`` (or an hour back) to ``now``,
    one ``step_seconds`` apart, import them and move ``pulled_until`` on. A pull that
    fails imports nothing and leaves ``pulled_until`` where it was. ``run``: the run to
    record it on, one a worker has claimed (apps/telemetry/connect.py), else a new one."""
    now = now or timezone.now()
    if step_seconds < 1:
        raise ValueError("step_seconds must be at least 1")
    start, end = prometheus_range(
        source.pulled_until, now, step_seconds=step_seconds, max_window=max_window
    )
    note = sentence(
        gettext_noop("%(start)s–%(end)s UTC every %(step_seconds)s s"),
        start=f"{start:%Y-%m-%d %H:%M:%S}",
        end=f"{end:%Y-%m-%d %H:%M:%S}",
        step_seconds=step_seconds,
    )

    def fetch():
        results, warnings = [], set()
        for metric in PROMETHEUS_METRICS:
            data, metric_warnings = query_range(
                source.url,
                metric,
                start=start,
                end=end,
                step_seconds=step_seconds,
                headers=source_headers(source),
            )
            results.append((metric, data))
            warnings.update(metric_warnings)
        result = rows_from_prometheus(results)
        if warnings:
            warned = sentence(
                gettext_noop("%(note)s (Prometheus warned: %(warnings)s)"),
                note=note,
                warnings="; ".join(sorted(warnings)),
            )
            return result, warned
        return result, note

    run, status = _pull(
        source,
        now,
        format="prometheus",
        run_source=ImportRun.Source.PROMETHEUS,
        fetch=fetch,
        run=run,
    )
    if status == STATUS_ERROR:
        return run
    if not run.rows_total:
        # Not an error (an exporter can be down for a while) but worth seeing at a glance.
        status = STATUS_WARNING
        none_held = sentence(
            gettext_noop(" Prometheus holds none of the DCGM metrics pulled in this range.")
        )
        run.message += none_held
        if run.message_parts:
            run.message_parts.append(none_held.to_data())
        run.save(update_fields=["message", "message_parts"])
    _record_on_source(source, now, status, run.message, run.message_parts, pulled_until=end)
    return run


def pull_source(source: PullSource, *, now: datetime | None = None) -> ImportRun:
    """Pull ``source`` by its kind (the raw-sample kinds; hourly aggregates are
    apps/telemetry/pull_hourly.py's)."""
    if source.kind == PullSource.Kind.PROMETHEUS:
        return pull_prometheus(source, now=now)
    return pull_dcgm_exporter(source, now=now)
