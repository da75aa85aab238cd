"""What both raw-sample pull modes share: an HTTP GET with a time and size limit, the
failures a network or a server can be expected to cause (PullError), and the run each
pull records, with its outcome on the PullSource."""

import base64
import logging
import zlib
from dataclasses import dataclass
from datetime import datetime
from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

from django.utils import timezone

from apps.core.sentences import Sentence, as_sentence, gettext_noop, sentence
from apps.telemetry.ingest import importer, storage
from apps.telemetry.ingest.parsers import (
    TelemetryFormatError,
)
from apps.telemetry.models import ImportRun, PullSource

logger = logging.getLogger(__name__)

HTTP_TIMEOUT_SECONDS = 10
# A scrape of an 8-GPU node is ~100 KB and a 6-hour query_range for 1,000 GPUs ~10 MB of
# JSON per metric; anything far beyond that is not what we asked for.
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
USER_AGENT = "gpufleet-telemetry-pull/1"

STATUS_OK = "ok"
STATUS_WARNING = "warning"  # pulled, but some lines or samples were rejected
STATUS_ERROR = "error"


class PullError(Exception):
    """An expected failure of a pull (network, HTTP, server error): the message, a
    ``Sentence``, says why in words fit for the source's status line. Read it back with
    ``error.args[0]`` (``str()`` keeps only the English)."""

    @property
    def sentence(self) -> Sentence:
        return as_sentence(self.args[0] if len(self.args) == 1 else str(self))


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


def http_error(url: str, response: _HttpResponse) -> PullError:
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


def not_utf8(url: str, error: UnicodeDecodeError) -> PullError:
    return PullError(
        sentence(
            gettext_noop("%(url)s answered text that is not UTF-8 (%(error)s)"),
            url=url,
            error=str(error),
        )
    )


def not_telemetry(url: str, error: TelemetryFormatError) -> Sentence:
    """The source's answer is not telemetry: its URL and the parser's reason."""
    return sentence(gettext_noop("%(url)s: %(error)s"), url=url, error=as_sentence(error.sentence))


# --- Outcome on the run and the source ---------------------------------------------------


def _finish_failed(
    source: PullSource, run: ImportRun, now: datetime, reason: Sentence, status: str
) -> ImportRun:
    # Nothing of the pull was stored (``importer.store_and_record``): it accepted none.
    run.rows_accepted = run.rows_duplicate = 0
    run.finish(status, reason, also_save=["rows_accepted", "rows_duplicate"])
    record_on_source(source, now, STATUS_ERROR, reason)
    logger.warning("pull of %s (%s) failed: %s", source.name, source.url, reason)
    return run


def record_on_source(
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


def record_pull(
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
        summary = importer.store_and_record(
            run,
            lambda: storage.import_gpu_samples(
                result,
                pool=source.pool,
                skip_bad_rows=True,
                received_at=now,
                scope=source.pull_scope,
                cluster_id=source.cluster_id,
            ),
        )
    except PullError as error:
        failed = _finish_failed(source, run, now, error.sentence, ImportRun.Status.FAILED)
        return failed, STATUS_ERROR
    except TelemetryFormatError as error:
        reason = not_telemetry(source.url, error)
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
