"""What a channel is sent, and sending it: one function per channel kind builds the
payload, one sends it and says how it went.

- **webhook**: Alertmanager's webhook JSON, version "4" (Prometheus docs, "webhook_config";
  alertmanager ``notify/webhook``): ``receiver``, ``status``, ``alerts[]`` (``status``,
  ``labels`` with ``alertname``, ``annotations``, ``startsAt``, ``endsAt`` — Go's zero
  time ``0001-01-01T00:00:00Z`` while firing —, ``generatorURL``, ``fingerprint``),
  ``groupLabels``, ``commonLabels``, ``commonAnnotations``, ``externalURL``, ``version``,
  ``groupKey`` and ``truncatedAlerts``. Each notification carries one alert, grouped by
  all its labels (Alertmanager's ``group_by: ['...']``), so its ``groupKey`` is the same
  firing and resolved and a receiver closes what it opened;
- **slack**: an incoming webhook's ``text`` (what Mattermost, Rocket.Chat and phones
  show) and ``blocks`` (Slack's layout), mrkdwn escaped;
- **email**: a subject and a plain-text body sent through Django's email backend (the
  ``EMAIL_*`` settings).

Chat and email text, and the annotations of every kind, are in the channel's language.
Sending never raises: it returns an ``Outcome`` whose error is a sentence a person can
act on, and says whether trying again may help (5xx, 408, 425, 429, no answer) or not
(another 4xx, a redirect, recipients refused).
"""

import json
import smtplib
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit
from urllib.request import HTTPRedirectHandler, Request, build_opener

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.utils import translation
from django.utils.translation import gettext

from apps.core.sentences import Sentence, gettext_noop, sentence
from apps.core.texts import translated_data

ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's time.Time{}: "not resolved yet"
USER_AGENT = "gpufleet-alerts/1"
RETRIED_HTTP_STATUSES = frozenset({408, 425, 429})
EXCERPT_CHARACTERS = 200


@dataclass(frozen=True)
class Notice:
    """One alert as a notification tells it, in English and with its sentences."""

    status: str  # "firing" or "resolved": the event told
    labels: dict[str, str]
    annotation_parts: dict  # name → sentence data
    annotations: dict  # name → English
    starts_at: datetime
    ends_at: datetime | None
    fingerprint: str
    alert_path: str  # the alert's page, relative to the site
    subject_path: str  # where it is dealt with
    rule_name: str


def notice_of(alert, event: str) -> Notice:
    return Notice(
        status=event,
        labels=dict(alert.labels),
        annotation_parts=dict(alert.annotation_parts),
        annotations=dict(alert.annotations),
        starts_at=alert.starts_at,
        ends_at=alert.ends_at if event == "resolved" else None,
        fingerprint=alert.fingerprint,
        alert_path=alert.get_absolute_url(),
        subject_path=alert.subject_url,
        rule_name=alert.rule_name,
    )


def site_url(path: str = "") -> str:
    return settings.SITE_URL.rstrip("/") + path


def rfc3339(moment: datetime | None) -> str:
    if moment is None:
        return ZERO_TIME
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _annotations(notice: Notice) -> dict[str, str]:
    """The annotations in the active language, with the subject's page."""
    annotations = {
        name: translated_data(notice.annotation_parts.get(name), text)
        for name, text in notice.annotations.items()
    }
    if notice.subject_path:
        annotations["url"] = site_url(notice.subject_path)
    return annotations


def _group_key(labels: dict[str, str]) -> str:
    """Alertmanager's key of a group: its route's matchers (none here) and the group's
    labels, ``{}:{alertname="…", pool="…"}``."""
    pairs = ", ".join(
        f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in sorted(labels.items())
    )
    return "{}:{" + pairs + "}"


def alertmanager_payload(notice: Notice, *, receiver: str, language: str) -> dict:
    with translation.override(language):
        annotations = _annotations(notice)
    alert = {
        "status": notice.status,
        "labels": notice.labels,
        "annotations": annotations,
        "startsAt": rfc3339(notice.starts_at),
        "endsAt": rfc3339(notice.ends_at),
        "generatorURL": site_url(notice.alert_path),
        "fingerprint": notice.fingerprint,
    }
    return {
        "receiver": receiver,
        "status": notice.status,
        "alerts": [alert],
        "groupLabels": notice.labels,
        "commonLabels": notice.labels,
        "commonAnnotations": annotations,
        "externalURL": site_url(),
        "version": "4",
        "groupKey": _group_key(notice.labels),
        "truncatedAlerts": 0,
    }


def _marker(notice: Notice) -> str:
    return gettext("FIRING") if notice.status == "firing" else gettext("RESOLVED")


def _mrkdwn(text: str) -> str:
    """Slack's three characters to escape in mrkdwn."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _moment(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _times(notice: Notice) -> str:
    started = gettext("started %(moment)s") % {"moment": _moment(notice.starts_at)}
    if notice.ends_at is None:
        return started
    resolved = gettext("resolved %(moment)s") % {"moment": _moment(notice.ends_at)}
    return f"{started} · {resolved}"


def slack_payload(notice: Notice, *, language: str) -> dict:
    with translation.override(language):
        annotations = _annotations(notice)
        headline = f"[{_marker(notice)}] {annotations.get('summary', notice.rule_name)}"
        context = gettext("Rule %(rule)s · %(times)s") % {
            "rule": notice.rule_name,
            "times": _times(notice),
        }
        link = gettext("Open in gpufleet")
    alert_url = site_url(notice.alert_path)
    description = annotations.get("description", "")
    return {
        "text": f"{headline}\n{description}\n{alert_url}",
        "blocks": [
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": f"*{_mrkdwn(headline)}*\n{_mrkdwn(description)}",
                },
            },
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": f"{_mrkdwn(context)} · <{alert_url}|{_mrkdwn(link)}>",
                    }
                ],
            },
        ],
    }


def email_payload(notice: Notice, *, to: list[str], language: str) -> dict:
    with translation.override(language):
        annotations = _annotations(notice)
        summary = annotations.get("summary", notice.rule_name)
        lines = [
            summary,
            "",
            annotations.get("description", ""),
            "",
            gettext("Rule: %(rule)s") % {"rule": notice.rule_name},
            gettext("When: %(times)s") % {"times": _times(notice)},
            gettext("Labels: %(labels)s")
            % {
                "labels": ", ".join(
                    f"{name}={value}" for name, value in sorted(notice.labels.items())
                )
            },
        ]
        if annotations.get("url"):
            lines.append(gettext("Where to act: %(url)s") % {"url": annotations["url"]})
        lines += [
            gettext("The alert: %(url)s") % {"url": site_url(notice.alert_path)},
            "",
            "-- ",
            "gpufleet",
        ]
        subject = f"[{_marker(notice)}] {summary}"
    return {"to": to, "subject": subject, "body": "\n".join(lines)}


def payload_for(channel, notice: Notice) -> dict:
    if channel.kind == "webhook":
        return alertmanager_payload(notice, receiver=channel.name, language=channel.language)
    if channel.kind == "slack":
        return slack_payload(notice, language=channel.language)
    return email_payload(notice, to=channel.addresses, language=channel.language)


# --- Sending -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    sent: bool
    retry: bool = False  # a later attempt may succeed
    unreachable: bool = False  # no answer at all: the channel's other notifications wait
    response_status: int | None = None
    error: Sentence | None = None


def send(channel, payload: dict) -> Outcome:
    if channel.kind == "email":
        return send_email(payload)
    return post_json(channel.url, payload)


def shown_address(url: str) -> str:
    """The scheme, host and port of ``url``: a chat webhook's path is its secret, and so
    is a password in the URL."""
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    host = parts.hostname
    if not host:
        return "…"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}"


class _NoRedirects(HTTPRedirectHandler):
    """A redirected POST would arrive as a GET without its body: say so instead."""

    def redirect_request(self, request, fp, code, message, headers, new_url):
        return None


def post_json(url: str, body: dict, *, timeout_seconds: float | None = None) -> Outcome:
    timeout = settings.ALERT_HTTP_TIMEOUT_SECONDS if timeout_seconds is None else timeout_seconds
    address = shown_address(url)
    if urlsplit(url).scheme not in ("http", "https"):
        return Outcome(
            sent=False,
            error=sentence(
                gettext_noop("%(url)s: only http:// and https:// URLs can be posted to"),
                url=address,
            ),
        )
    request = Request(  # noqa: S310 - the scheme is checked above
        url,
        data=json.dumps(body, ensure_ascii=False).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
    )
    try:
        with build_opener(_NoRedirects).open(request, timeout=timeout) as response:
            return Outcome(sent=True, response_status=response.status)
    except HTTPError as error:
        return _http_error_outcome(address, error)
    except URLError as error:
        if isinstance(error.reason, TimeoutError | socket.timeout):
            return _no_answer(address, timeout)
        return Outcome(
            sent=False,
            retry=True,
            unreachable=True,
            error=sentence(
                gettext_noop("could not reach %(url)s: %(reason)s"),
                url=address,
                reason=str(error.reason),
            ),
        )
    except TimeoutError:
        return _no_answer(address, timeout)
    except (OSError, HTTPException) as error:
        return Outcome(
            sent=False,
            retry=True,
            unreachable=True,
            error=sentence(
                gettext_noop("posting to %(url)s failed: %(reason)s"),
                url=address,
                reason=str(error) or type(error).__name__,
            ),
        )


def _no_answer(address: str, timeout: float) -> Outcome:
    return Outcome(
        sent=False,
        retry=True,
        unreachable=True,
        error=sentence(
            gettext_noop("%(url)s did not answer within %(seconds)s s"),
            url=address,
            seconds=f"{timeout:g}",
        ),
    )


def _excerpt(error: HTTPError) -> str:
    try:
        body = error.read(EXCERPT_CHARACTERS * 4)
    except (OSError, HTTPException):
        return ""
    return " ".join(body.decode("utf-8", "replace").split())[:EXCERPT_CHARACTERS]


def _http_error_outcome(address: str, error: HTTPError) -> Outcome:
    status = error.code
    excerpt = _excerpt(error)
    if 300 <= status < 400:
        return Outcome(
            sent=False,
            response_status=status,
            error=sentence(
                gettext_noop(
                    "%(url)s answered HTTP %(status)s, a redirect to %(location)s: put that "
                    "address in the channel's URL"
                ),
                url=address,
                status=status,
                location=shown_address(error.headers.get("Location", "") or "?"),
            ),
        )
    retried = status >= 500 or status in RETRIED_HTTP_STATUSES
    if retried:
        message = sentence(
            gettext_noop("%(url)s answered HTTP %(status)s: %(excerpt)s"),
            url=address,
            status=status,
            excerpt=excerpt or "—",
        )
    else:
        message = sentence(
            gettext_noop(
                "%(url)s refused the notification with HTTP %(status)s (%(excerpt)s): check the "
                "channel's URL and what the receiver expects; it is not tried again"
            ),
            url=address,
            status=status,
            excerpt=excerpt or "—",
        )
    return Outcome(sent=False, retry=retried, response_status=status, error=message)


def send_email(payload: dict, *, timeout_seconds: float | None = None) -> Outcome:
    server = f"{settings.EMAIL_HOST}:{settings.EMAIL_PORT}"
    timeout = settings.EMAIL_TIMEOUT if timeout_seconds is None else timeout_seconds
    message = EmailMessage(
        subject=payload["subject"],
        body=payload["body"],
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=payload["to"],
        connection=get_connection(timeout=timeout),
    )
    try:
        message.send()
    except smtplib.SMTPRecipientsRefused as error:
        return Outcome(
            sent=False,
            error=sentence(
                gettext_noop(
                    "the mail server %(server)s refused the recipients %(recipients)s: check the "
                    "channel's addresses"
                ),
                server=server,
                recipients=", ".join(sorted(error.recipients)),
            ),
        )
    except smtplib.SMTPAuthenticationError as error:
        return Outcome(
            sent=False,
            retry=True,
            error=sentence(
                gettext_noop(
                    "the mail server %(server)s refused the sign-in (%(code)s): check "
                    "EMAIL_HOST_USER and EMAIL_HOST_PASSWORD"
                ),
                server=server,
                code=error.smtp_code,
            ),
        )
    except smtplib.SMTPResponseException as error:
        detail = (
            error.smtp_error.decode("utf-8", "replace")
            if isinstance(error.smtp_error, bytes)
            else str(error.smtp_error)
        )
        return Outcome(
            sent=False,
            retry=error.smtp_code < 500,
            error=sentence(
                gettext_noop("the mail server %(server)s answered %(code)s %(detail)s"),
                server=server,
                code=error.smtp_code,
                detail=detail,
            ),
        )
    except (smtplib.SMTPException, OSError) as error:
        return Outcome(
            sent=False,
            retry=True,
            unreachable=True,
            error=sentence(
                gettext_noop(
                    "could not send through the mail server %(server)s: %(reason)s (EMAIL_HOST, "
                    "EMAIL_PORT)"
                ),
                server=server,
                reason=str(error) or type(error).__name__,
            ),
        )
    return Outcome(sent=True)
