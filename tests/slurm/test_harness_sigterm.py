"""A SIGTERM to a test run stops the real Slurm's daemons first (tests/slurm/sigterm.py,
``harness.STOP_ON_SIGTERM``), then does what it did before. No Slurm is started: a small
subprocess registers a cluster whose only "daemon" is a ``sleep`` in a session of its own,
as the daemons are, and is sent SIGTERM."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from tests.slurm.sigterm import StopOnSigterm

ROOT = Path(__file__).resolve().parents[2]

# The harness's own handler and stop, on a cluster holding one dummy daemon. The sleeps
# keep no copy of the script's output, whose end the test waits for.
HARNESS_SCRIPT = """
import os, subprocess, sys, tempfile, time
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from tests.slurm import harness

slurm = harness.OneNodeSlurm(Path(tempfile.mkdtemp()))
slurm.processes["slurmd"] = subprocess.Popen(
    ["sleep", "300"], env=slurm.environment, start_new_session=True, stdout=subprocess.DEVNULL
)
harness.RUNNING.add(slurm)
assert harness.STOP_ON_SIGTERM.install()
print(slurm.processes["slurmd"].pid, flush=True)
time.sleep(60)
print("not terminated", flush=True)
"""

# A handler installed before the harness's: it is called after the stop, and by then it
# is the installed handler again.
CHAINED_SCRIPT = """
import signal, subprocess, sys, time
from tests.slurm.sigterm import StopOnSigterm

child = subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=subprocess.DEVNULL)

def stop():
    child.terminate()
    print("stopped", child.wait(timeout=10), flush=True)

def previous(signum, frame):
    print("previous handler, restored:", signal.getsignal(signal.SIGTERM) is previous, flush=True)
    sys.exit(3)

signal.signal(signal.SIGTERM, previous)
assert StopOnSigterm(stop).install()
print(child.pid, flush=True)
time.sleep(60)
"""


def _terminated(script: str) -> tuple[int, int, str]:
    """(the dummy daemon's pid, the script's exit status, what it printed after the pid)
    once the script, sent SIGTERM, has ended."""
    process = subprocess.Popen(  # noqa: S603 - our own script
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    daemon_pid = None
    try:
        daemon_pid = int(process.stdout.readline())
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
        return daemon_pid, process.returncode, output
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if daemon_pid is not None and _alive(daemon_pid):
            os.kill(daemon_pid, signal.SIGKILL)  # the test's own sleep, left by a failure


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has ended, waiting for its parent to read it


def test_a_sigterm_stops_the_clusters_daemons_then_ends_the_run_as_terminated():
    daemon_pid, status, output = _terminated(HARNESS_SCRIPT)
    assert not _alive(daemon_pid)
    # The default action was taken after the stop: ended by SIGTERM, not at the end.
    assert status == -signal.SIGTERM
    assert "not terminated" not in output


def test_a_sigterm_reaches_the_handler_installed_before_once_stopped():
    daemon_pid, status, output = _terminated(CHAINED_SCRIPT)
    assert not _alive(daemon_pid)
    assert output.splitlines() == [
        f"stopped {-signal.SIGTERM}",
        "previous handler, restored: True",
    ]
    assert status == 3  # what the previous handler decided


def test_the_previous_handler_is_put_back_and_only_the_main_thread_installs():
    def previous(signum, frame):
        raise AssertionError("no SIGTERM is sent here")

    before = signal.signal(signal.SIGTERM, previous)
    try:
        handler = StopOnSigterm(lambda: None)
        assert handler.install() and not handler.install()
        assert signal.getsignal(signal.SIGTERM) == handler.handle
        handler.restore()
        assert signal.getsignal(signal.SIGTERM) is previous
        installed = []
        thread = threading.Thread(target=lambda: installed.append(handler.install()))
        thread.start()
        thread.join()
        assert installed == [False] and signal.getsignal(signal.SIGTERM) is previous
    finally:
        signal.signal(signal.SIGTERM, before)
