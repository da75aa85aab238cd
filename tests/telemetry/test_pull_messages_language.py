"""What a pull writes (its run's message, the source's last message) is stored in English
with its sentences' msgids and values, and each page says it again in its reader's
language; in English it is exactly what was written before. Real HTTP: a closed port
and this module's own small server, no mocks."""

import socket
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from apps.core.texts import translated
from apps.pools.hours import floor_hour
from apps.telemetry.models import ImportRun, PullSource
from apps.telemetry.pull import prometheus, scrapes, tsdb
from tests.factories import PullSourceFactory

HOUR = timedelta(hours=1)


def free_port() -> int:
    """A port nothing listens on: connecting to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class NotFoundHandler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        body = b"404 page not found\n"
        self.send_response(404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


@pytest.fixture
def not_found_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFoundHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def page(client, language: str) -> str:
    url = reverse("telemetry:pull_source_list")
    return client.get(url, headers={"Accept-Language": language}).content.decode()


@pytest.mark.django_db
def test_an_unreachable_and_a_404_exporter_read_in_chinese_and_as_before_in_english(
    client, make_user, not_found_server
):
    closed = f"http://127.0.0.1:{free_port()}/metrics"
    missing = f"{not_found_server}/metrics"
    unreachable_source = PullSourceFactory(name="closed", kind="dcgm_exporter", url=closed)
    missing_source = PullSourceFactory(name="missing", kind="dcgm_exporter", url=missing)
    unreachable_run = scrapes.pull_dcgm_exporter(unreachable_source)
    missing_run = scrapes.pull_dcgm_exporter(missing_source)

    # English exactly as the f-strings wrote it: "could not reach {url}: {reason}" and
    # "{url} answered HTTP {status}: {excerpt}". The reason is the OS's own English.
    assert unreachable_run.message.startswith(f"could not reach {closed}: ")
    reason = unreachable_run.message.removeprefix(f"could not reach {closed}: ")
    assert "Connection refused" in reason
    assert missing_run.message == f"{missing} answered HTTP 404: 404 page not found"
    for source, run in ((unreachable_source, unreachable_run), (missing_source, missing_run)):
        source.refresh_from_db()
        run.refresh_from_db()
        assert source.last_message == run.message
        assert (run.status, source.last_status) == (ImportRun.Status.FAILED, "error")

    # The Chinese of locale/parts/pull-sentences.json, written out by hand.
    unreachable_zh = f"无法连接 {closed}：{reason}"
    missing_zh = f"{missing} 应答 HTTP 404：404 page not found"
    with translation.override("zh-hans"):
        assert unreachable_run.message_in_language() == unreachable_zh
        assert missing_run.message_in_language() == missing_zh
        assert unreachable_source.last_message_in_language() == unreachable_zh
        assert missing_source.last_message_in_language() == missing_zh

    client.force_login(make_user("ops"))
    in_chinese, in_english = page(client, "zh-CN"), page(client, "en")
    assert unreachable_zh in in_chinese and missing_zh in in_chinese
    assert "could not reach" not in in_chinese and "answered HTTP" not in in_chinese
    assert unreachable_run.message in in_english and missing_run.message in in_english

    # The import page of each run says it in the reader's language too.
    url = reverse("telemetry:import_detail", kwargs={"pk": missing_run.pk})
    assert missing_zh in client.get(url, headers={"Accept-Language": "zh-CN"}).content.decode()
    assert (
        missing_run.message in client.get(url, headers={"Accept-Language": "en"}).content.decode()
    )


@pytest.mark.django_db
def test_a_batch_of_scrapes_keeps_each_sources_sentence(not_found_server):
    """The batched UPDATE of pull_dcgm_exporters writes the parts with the message."""
    sources = [
        PullSourceFactory(name=f"missing {n}", kind="dcgm_exporter", url=f"{not_found_server}/{n}")
        for n in range(3)
    ]
    scrapes.pull_dcgm_exporters(sources)
    for number, source in enumerate(sources):
        source.refresh_from_db()
        url = f"{not_found_server}/{number}"
        assert source.last_message == f"{url} answered HTTP 404: 404 page not found"
        with translation.override("zh-hans"):
            assert source.last_message_in_language() == f"{url} 应答 HTTP 404：404 page not found"


@pytest.mark.django_db
def test_an_unreachable_hourly_pull_fails_with_a_chinese_sentence():
    now = timezone.now()
    first_hour = floor_hour(now) - 5 * HOUR
    source = PullSourceFactory(
        name="tsdb closed",
        kind=PullSource.Kind.PROMETHEUS_HOURLY,
        url=f"http://127.0.0.1:{free_port()}",
        label_filters='test="closed"',
        pulled_until=first_hour,
    )
    run = tsdb.pull_hourly(source, now=now, end=first_hour + 3 * HOUR)
    assert run.status == ImportRun.Status.FAILED
    run.refresh_from_db()
    source.refresh_from_db()
    hour = f"{first_hour:%Y-%m-%d %H:00}"
    error, separator, advice = run.message.partition(". The hours from ")
    assert separator and error.startswith(f"could not reach {source.url} (query_range ")
    # English exactly as before (no chunk was written, so no "(… were: …)" part).
    assert advice == (
        f"{hour} UTC on are not pulled; the next pull resumes at {hour} UTC. Check that the "
        "server is up and not overloaded, or pull fewer hours at a time "
        "(manage.py pull_telemetry --chunk-hours)."
    )
    shown_as, _colon, reason = error.removeprefix("could not reach ").rpartition(": ")
    expected_zh = (
        f"无法连接 {shown_as}：{reason}。从 {hour} UTC 起的小时未拉取；下次拉取从 {hour} UTC "
        "继续。请检查服务器是否正常运行且未过载，或每次拉取更少的小时数"
        "（manage.py pull_telemetry --chunk-hours）。"
    )
    assert source.last_message == run.message
    with translation.override("zh-hans"):
        assert run.message_in_language() == expected_zh
        assert source.last_message_in_language() == expected_zh
    assert run.message_in_language() == run.message


def prometheus_matrix(name: str, labels: dict, points: list) -> dict:
    return {
        "resultType": "matrix",
        "result": [{"metric": {"__name__": name, **labels}, "values": points}],
    }


def test_the_rejected_prometheus_samples_read_in_chinese():
    at = 1_790_000_000  # 2026-09-21T14:13:20+00:00
    result = prometheus.rows_from_prometheus(
        [
            (
                "DCGM_FI_DEV_GPU_UTIL",
                prometheus_matrix("DCGM_FI_DEV_GPU_UTIL", {"UUID": "GPU-a"}, [[at, "140"]]),
            ),
            (
                "DCGM_FI_DEV_GPU_TEMP",
                prometheus_matrix("DCGM_FI_DEV_GPU_TEMP", {"Hostname": "n1"}, [[at, "40"]]),
            ),
        ]
    )
    english = [error.message for error in result.errors]
    # Exactly the English the f-strings wrote.
    assert english == [
        "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-a\"} at 2026-09-21T14:13:20+00:00: value '140' is "
        "outside 0–100",
        'DCGM_FI_DEV_GPU_TEMP{Hostname="n1"} has no UUID label (nor the old uuid), so the '
        "GPU cannot be identified; 1 point(s) left out",
    ]
    with translation.override("zh-hans"):
        chinese = [translated(error.message) for error in result.errors]
    assert chinese == [
        'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-a"} 在 2026-09-21T14:13:20+00:00：值“140”超出 0–100',
        'DCGM_FI_DEV_GPU_TEMP{Hostname="n1"} 没有 UUID 标签（也没有旧的 uuid），无法识别 GPU；'
        "1 个数据点被略去",
    ]
