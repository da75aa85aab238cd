"""Real Prometheus-compatible servers for the TSDB pull tests, loaded with series of our own.

- VictoriaMetrics (Debian's ``victoria-metrics``, ``scripts/ensure_victoria_metrics.sh``):
  one server per test session on a free 127.0.0.1 port with its own ``-storageDataPath``;
  series go in through ``/api/v1/import`` (JSON lines, explicit millisecond timestamps)
  and ``/internal/force_flush`` makes them searchable at once (VictoriaMetrics docs,
  "How to import time series data", "force_flush").
- Prometheus (Debian's ``prometheus``): it has no import API, so series are written as
  OpenMetrics text, turned into TSDB blocks by ``promtool tsdb create-blocks-from
  openmetrics`` (Prometheus docs, "Backfilling from OpenMetrics format") and a server is
  started on that data directory.
"""

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

STARTUP_SECONDS = 60


@dataclass
class Series:
    """One series: its metric, labels and (timestamp ms, value) points."""

    name: str
    labels: dict
    points: list[tuple[int, float]]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http(url: str, *, data: bytes | None = None, timeout: float = 30) -> bytes:
    method = "POST" if data is not None else "GET"
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - 127.0.0.1
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - 127.0.0.1
        return response.read()


def _wait_for(process, url: str, log_path: Path, what: str) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if process.poll() is not None:
            pytest.fail(f"{what} exited ({process.returncode}):\n{log_path.read_text()}")
        try:
            http(url, timeout=2)
            return
        except OSError as error:
            if time.monotonic() > deadline:
                pytest.fail(f"{what} did not answer {url} within {STARTUP_SECONDS} s ({error})")
        time.sleep(0.2)


def _stop(process) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _binary(variable: str, default: str, script: str) -> str:
    binary = shutil.which(os.environ.get(variable, default))
    if binary is None:
        pytest.fail(f"{default} is not installed: run {script} (make test does)")
    return binary


def _run_prometheus(
    binary: str, config: Path, data: Path, *options: str
) -> tuple[subprocess.Popen, str, Path]:
    """(process, base URL, log) of prometheus on a free 127.0.0.1 port with ``config`` and
    the data directory ``data``, once it answers /-/ready; its log beside its config."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_path = config.parent / "prometheus.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{port}",
                *options,
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    _wait_for(process, f"{base_url}/-/ready", log_path, "prometheus")
    return process, base_url, log_path


def start_scraping_prometheus(
    scrape_base_url: str, targets, directory: Path
) -> tuple[subprocess.Popen, str, Path]:
    """(process, base URL, log) of Debian's prometheus on a free 127.0.0.1 port, its
    configuration and data in ``directory``, scraping each of ``targets`` (scrape files
    served at ``/metrics/<file stem>`` of ``scrape_base_url``) once a second, once it is
    ready; the caller waits for the series it needs and stops it (``stop``)."""
    binary = _binary("PROMETHEUS", "prometheus", "scripts/ensure_prometheus.sh")
    server_address = scrape_base_url.removeprefix("http://")
    jobs = "".join(
        f"""
  - job_name: {path.stem}
    honor_labels: true
    metrics_path: /metrics/{path.stem}
    static_configs:
      - targets: ["{server_address}"]
"""
        for path in targets
    )
    config = directory / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:{jobs}"
    )
    return _run_prometheus(binary, config, directory / "data")


class VictoriaMetrics:
    """A running single-node VictoriaMetrics and what the tests do with it."""

    def __init__(self, base_url: str):
        self.base_url = base_url

    def load(self, series: list[Series], *, batch_lines: int = 5000) -> None:
        """Import ``series`` (JSON lines, batches of ``batch_lines``), then flush so that
        queries see them."""
        lines = [
            json.dumps(
                {
                    "metric": {"__name__": one.name, **one.labels},
                    "values": [value for _timestamp, value in one.points],
                    "timestamps": [timestamp for timestamp, _value in one.points],
                }
            )
            for one in series
        ]
        for start in range(0, len(lines), batch_lines):
            body = ("\n".join(lines[start : start + batch_lines]) + "\n").encode()
            http(f"{self.base_url}/api/v1/import", data=body, timeout=300)
        self.flush()

    def flush(self) -> None:
        http(f"{self.base_url}/internal/force_flush", timeout=60)


def start_victoria_metrics(directory: Path):
    """(process, base URL) of a VictoriaMetrics on a free port with its data in
    ``directory``; the caller stops it (``stop``)."""
    binary = _binary("VICTORIA_METRICS", "victoria-metrics", "scripts/ensure_victoria_metrics.sh")
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_path = directory / "victoria-metrics.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                binary,
                f"-storageDataPath={directory / 'data'}",
                f"-httpListenAddr=127.0.0.1:{port}",
                # Samples from any time ago are kept: the tests load hours in the past.
                "-retentionPeriod=100y",
                "-loggerLevel=ERROR",
                # The test machine's two cores are shared: one process, no surprises.
                "-search.disableCache",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    _wait_for(process, f"{base_url}/health", log_path, "victoria-metrics")
    return process, base_url


@pytest.fixture(scope="session")
def victoria_metrics(tmp_path_factory):
    """One VictoriaMetrics for the session; tests keep apart by a label of their own on
    their series (and the matching label filter on their source)."""
    directory = tmp_path_factory.mktemp("victoria-metrics")
    process, base_url = start_victoria_metrics(directory)
    try:
        yield VictoriaMetrics(base_url)
    finally:
        _stop(process)


def _openmetrics(series: list[Series]) -> str:
    lines = []
    for one in series:
        labels = ",".join(f'{key}="{value}"' for key, value in sorted(one.labels.items()))
        lines.extend(
            f"{one.name}{{{labels}}} {value!r} {timestamp / 1000:.3f}"
            for timestamp, value in one.points
        )
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def start_prometheus_with(series: list[Series], directory: Path):
    """(process, base URL) of a Prometheus serving ``series``, backfilled with promtool;
    the caller stops it (``stop``)."""
    binary = _binary("PROMETHEUS", "prometheus", "scripts/ensure_prometheus.sh")
    promtool = shutil.which("promtool") or str(Path(binary).with_name("promtool"))
    source = directory / "series.om"
    source.write_text(_openmetrics(series))
    data = directory / "data"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    config = directory / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\n")
    process, base_url, _ = _run_prometheus(
        binary, config, data, "--storage.tsdb.retention.time=100y"
    )
    return process, base_url


stop = _stop
