"""Real peers for the delivery tests, on 127.0.0.1: an HTTP receiver (``http.server`` in a
thread) that records every POST and answers the statuses a test lines up, and an SMTP
server (aiosmtpd) that keeps every message it accepts."""

import email
import email.policy
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller

from tests.telemetry.tsdb_servers import free_port


@dataclass
class Received:
    path: str
    status: int  # what the receiver answered
    body: dict
    headers: dict


@dataclass
class HttpReceiver:
    """``answers[path]`` lists the statuses to answer, one per request, then 200;
    ``delay_seconds[path]`` holds each answer back that long."""

    base_url: str = ""
    requests: list[Received] = field(default_factory=list)
    answers: dict[str, list[int]] = field(default_factory=dict)
    delay_seconds: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def answer(self, path: str, *statuses: int) -> None:
        with self.lock:
            self.answers[path] = list(statuses)

    def received(self, path: str, *, status: int | None = None) -> list[dict]:
        with self.lock:
            return [
                request.body
                for request in self.requests
                if request.path == path and (status is None or request.status == status)
            ]


def start_http_receiver() -> tuple[HttpReceiver, ThreadingHTTPServer]:
    receiver = HttpReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            delay = receiver.delay_seconds.get(self.path, 0)
            if delay:
                time.sleep(delay)
            with receiver.lock:
                queued = receiver.answers.get(self.path) or []
                status = queued.pop(0) if queued else 200
                receiver.requests.append(
                    Received(self.path, status, json.loads(raw or b"{}"), dict(self.headers))
                )
            body = b"ok" if status < 400 else b"receiver is down for maintenance"
            try:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up waiting

        def log_message(self, format, *args):  # noqa: A002 - http.server's signature
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    server.daemon_threads = True
    receiver.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server


class _Mailbox:
    def __init__(self):
        self.messages: list[email.message.EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.refuse: set[str] = set()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802
        if address in self.refuse:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.messages.append(message)
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 Message accepted"


def start_smtp_server() -> tuple[_Mailbox, Controller]:
    mailbox = _Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    return mailbox, controller
