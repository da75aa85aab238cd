"""A real one-node Slurm for the tests, and the ``sacct`` text of jobs it ran.

Debian's ``slurm-wlm`` and ``slurmdbd`` (``scripts/ensure_slurm.sh``) run as a private
cluster: a munged with its own key and socket, slurmdbd on the machine's MariaDB (a
database of the run's own, dropped at the end), slurmctld and one slurmd, all in the
foreground (``-D``) as subprocesses on free 127.0.0.1 ports, with every file in a
temporary directory. The node declares four A100s as generic resources without devices.

The jobs cover the ways a job ends that the importer must read: one completes, one fails
(exit 1), one runs past its one-minute limit (TIMEOUT), one is requeued while it runs and
completes on its second run, one is cancelled while it runs, and a two-task array
completes; they ask for GPUs as ``--gres=gpu:N`` and ``--gpus=N``. Once all have ended,
``sacct --parsable2 --duplicates`` prints every job and step row, requeued runs included.

The timeout costs a minute and more (Slurm counts limits in whole minutes and checks them
every 30 s), so the run starts in a background thread as soon as the tests that need it
are collected (``BackgroundCapture``, tests/slurm/conftest.py) and those tests run last.
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from string import Template

from apps.slurm.pull import sacct_arguments
from tests.slurm.sigterm import StopOnSigterm
from tests.telemetry.tsdb_servers import free_port

CONF_DIR = Path(__file__).resolve().parent / "conf"

SACCT_FORMAT = (
    "JobID,JobIDRaw,User,Account,Partition,QOS,JobName,State,Start,End,Elapsed,"
    "ElapsedRaw,NNodes,NodeList,AllocTRES,ReqTRES"
)
NODE_NAME = "gpu01"
ACCOUNT = "ml-research"
RESULT_PREFIX = "gpufleet-slurm-run-"
STARTUP_SECONDS = 60
# The timeout job ends 60 to 90 s after it starts: the limit is one minute and slurmctld
# looks for jobs past their limit every 30 s. The rest is margin for a loaded machine.
JOBS_SECONDS = 180
# How long a test waits for the capture another thread or process makes: the start's
# three waits, the jobs', and the stop's.
CAPTURE_SECONDS = 3 * STARTUP_SECONDS + JOBS_SECONDS + 60
# A script's first commands for a job that something is done to while it runs.
RAN_A_WHILE = 'sleep 2; touch "ran-a-while-$SLURM_JOB_ID"'
TERMINAL_STATES = {
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "REQUEUED",
    "TIMEOUT",
}


# Set when the test run is interrupted: every wait gives up, and the cluster stops.
ABORT = threading.Event()
# The clusters started and not yet stopped, which a SIGTERM stops (``STOP_ON_SIGTERM``).
RUNNING: set["OneNodeSlurm"] = set()
RUNNING_LOCK = threading.Lock()


# A capture of this harness kept as test data (tests/data/slurm/README.md), with the job
# ids sbatch printed in that run.
KEPT_PATH = CONF_DIR.parent.parent / "data" / "slurm" / "real-one-node-cluster.sacct"
KEPT_JOB_IDS = {
    "timeout": "1",
    "requeued": "2",
    "completed": "3",
    "failed": "4",
    "array": "5",
    "cancelled": "6",
}


class SlurmHarnessError(RuntimeError):
    """The cluster did not start or a job did not do what the run asked of it."""


@dataclass(frozen=True)
class SacctCapture:
    """What the run captured: ``sacct``'s text, header included, and which job is which.

    ``job_ids`` maps a purpose (``completed``, ``failed``, ``timeout``, ``requeued``,
    ``cancelled``, ``array``) to the job id ``sbatch`` printed; the array's tasks are
    ``<id>_0`` and ``<id>_1`` in the text. ``text_without_duplicates`` is the same query
    without ``--duplicates``: a requeued job's last run only, as sacct prints by default.
    """

    text: str
    cluster: str
    job_ids: dict[str, str]
    slurm_version: str
    seconds_to_ready: float
    seconds_to_jobs_ended: float
    text_without_duplicates: str = ""
    seconds_in_all: float = 0.0
    # What ``manage.py pull_slurm``'s own sacct command line (apps/slurm/pull.py) printed
    # on the live cluster, from the same start.
    pull_text: str = ""


def _binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if found is None:
        raise SlurmHarnessError(f"{name} is not installed: run scripts/ensure_slurm.sh")
    return found


def _wait(condition, *, seconds: float, what: str, on_timeout=lambda: ""):
    """Return ``condition()``'s first truthy value, checking every 0.2 s until the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if found:
            return found
        if ABORT.is_set():
            raise SlurmHarnessError(f"interrupted while waiting for {what}")
        if time.monotonic() > deadline:
            message = f"timed out after {seconds} s waiting for {what}"
            raise SlurmHarnessError(f"{message}\n{on_timeout()}")
        time.sleep(0.2)


@dataclass(frozen=True)
class MySQL:
    """Where slurmdbd keeps its tables: the machine's MariaDB unless SLURM_TEST_MYSQL_*
    say otherwise."""

    host: str = os.environ.get("SLURM_TEST_MYSQL_HOST", "127.0.0.1")
    port: int = int(os.environ.get("SLURM_TEST_MYSQL_PORT", "3306"))
    user: str = os.environ.get("SLURM_TEST_MYSQL_USER", "root")
    password: str = os.environ.get("SLURM_TEST_MYSQL_PASSWORD", "")

    def run(self, statement: str) -> None:
        client = shutil.which("mariadb") or shutil.which("mysql")
        if client is None:
            raise SlurmHarnessError("the MariaDB client (mariadb or mysql) is not installed")
        command = [client, "-h", self.host, "-P", str(self.port), "-u", self.user]
        environment = dict(os.environ, MYSQL_PWD=self.password) if self.password else None
        result = subprocess.run(
            [*command, "-e", statement],
            capture_output=True,
            text=True,
            timeout=30,
            env=environment,
            check=False,
        )
        if result.returncode != 0:
            raise SlurmHarnessError(f"MariaDB refused {statement!r}: {result.stderr.strip()}")


def kept_capture() -> SacctCapture:
    """The kept capture, as the tests read a fresh one (its timings are not kept)."""
    return SacctCapture(
        text=KEPT_PATH.read_text(),
        cluster="kept",
        job_ids=KEPT_JOB_IDS,
        slurm_version="slurm-wlm 22.05.8",
        seconds_to_ready=0.0,
        seconds_to_jobs_ended=0.0,
    )


class OneNodeSlurm:
    """A private cluster in ``workdir``: ``start()``, ``sbatch()``… then ``stop()``.

    Every daemon and every job inherits ``GPUFLEET_SLURM_RUN=<cluster>``, so ``stop()``
    finds anything of this run still alive (a job step's processes outlive slurmd) and
    ends it.
    """

    def __init__(self, workdir: Path, mysql: MySQL | None = None):
        self.workdir = Path(workdir)
        self.mysql = mysql or MySQL()
        token = secrets.token_hex(4)
        # ClusterName names slurmdbd's tables: lower-case letters and digits only.
        self.cluster = f"gpufleet{token}"
        self.database = f"slurm_acct_{token}"
        self.processes: dict[str, subprocess.Popen] = {}
        self.database_created = False
        self.conf_dir = self.workdir / "etc"
        self.log_dir = self.workdir / "log"
        self.jobs_dir = self.workdir / "jobs"
        self.environment = dict(
            os.environ,
            SLURM_CONF=str(self.conf_dir / "slurm.conf"),
            GPUFLEET_SLURM_RUN=self.cluster,
            # The clients print dates as sacct's default ISO 8601, whatever the caller set.
            SLURM_TIME_FORMAT="standard",
        )
        for name in list(self.environment):
            # A developer's own SBATCH_*, SACCT_* or SQUEUE_* settings would change the
            # jobs or what the clients print.
            if name.startswith(("SBATCH_", "SACCT_", "SQUEUE_")):
                del self.environment[name]

    # Starting and stopping

    def start(self) -> None:
        if os.geteuid() != 0:
            # slurmd starts each job as its user, and the configuration runs every
            # daemon as root (SlurmUser=root): no unprivileged cluster without a second user.
            raise SlurmHarnessError("the one-node Slurm runs as root: run the Slurm tests as root")
        with RUNNING_LOCK:
            RUNNING.add(self)
        for directory in ("etc", "log", "run", "state", "spool", "jobs", "munge"):
            (self.workdir / directory).mkdir(parents=True, exist_ok=True)
        self._write_configuration()
        self._start_munged()
        self.mysql.run(f"CREATE DATABASE `{self.database}`")
        self.database_created = True
        self._start("slurmdbd", [_binary("slurmdbd"), "-D"])
        _wait(
            lambda: self._answers(["sacctmgr", "-n", "list", "cluster"]),
            seconds=STARTUP_SECONDS,
            what="slurmdbd to answer sacctmgr",
            on_timeout=self.logs,
        )
        self.run(["sacctmgr", "-i", "add", "cluster", self.cluster])
        self.run(["sacctmgr", "-i", "add", "account", ACCOUNT, f"cluster={self.cluster}"])
        self.run(["sacctmgr", "-i", "add", "user", "root", f"account={ACCOUNT}"])
        # -c: a run never reads an earlier run's state.
        self._start("slurmctld", [_binary("slurmctld"), "-D", "-c"])
        _wait(
            lambda: "is UP" in self._output(["scontrol", "ping"]),
            seconds=STARTUP_SECONDS,
            what="slurmctld to answer scontrol ping",
            on_timeout=self.logs,
        )
        self._start("slurmd", [_binary("slurmd"), "-D", "-N", NODE_NAME])
        _wait(
            lambda: self._output(["sinfo", "-h", "-N", "-o", "%t"]).strip() == "idle",
            seconds=STARTUP_SECONDS,
            what=f"node {NODE_NAME} to be idle",
            on_timeout=self.logs,
        )

    def stop(self) -> None:
        """End every job, daemon and job process of the run and drop its database."""
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            self._answers(["scancel", "--full", "-u", "root"])
        for name in ("slurmd", "slurmctld", "slurmdbd", "munged"):
            process = self.processes.get(name)
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
        self._kill_what_is_left()
        if self.database_created:
            self.mysql.run(f"DROP DATABASE IF EXISTS `{self.database}`")
            self.database_created = False
        with RUNNING_LOCK:
            RUNNING.discard(self)

    def logs(self) -> str:
        """The last lines of each daemon's log, for an error message."""
        parts = []
        for path in sorted(self.log_dir.glob("*.log")):
            lines = path.read_text(errors="replace").splitlines()[-25:]
            parts.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(parts)

    # Jobs

    def sbatch(self, name: str, *arguments: str, script: str) -> str:
        output = self.run(
            [
                "sbatch",
                "--parsable",
                f"--job-name={name}",
                f"--account={ACCOUNT}",
                f"--chdir={self.jobs_dir}",
                f"--output={self.jobs_dir}/%x-%A_%a.out",
                *arguments,
                f"--wrap={script}",
            ]
        )
        return output.strip().split(";")[0]

    def job_state(self, job_id: str) -> str:
        """The controller's state of a job (empty once it has left the controller)."""
        return self._output(["squeue", "-h", "-j", job_id, "-o", "%T"]).strip()

    def wait_ran_a_while(self, job_id: str) -> None:
        """Wait for the file a job's script writes once it has run for a while
        (``RAN_A_WHILE``), so that what is done to it next finds an elapsed time."""
        _wait(
            lambda: (self.jobs_dir / f"ran-a-while-{job_id}").exists(),
            seconds=JOBS_SECONDS,
            what=f"job {job_id} to run for a while",
            on_timeout=self.logs,
        )

    def sacct(
        self, since: str, *arguments: str, fields: str = SACCT_FORMAT, duplicates: bool = True
    ) -> str:
        command = ["sacct", "--parsable2", "--allusers", f"--starttime={since}"]
        if duplicates:
            command.append("--duplicates")
        return self.run([*command, f"--format={fields}", *arguments])

    def all_ended(self, since: str) -> bool:
        """Every job left the controller and every row in slurmdbd has its end."""
        if self._output(["squeue", "-h", "-o", "%i"]).strip():
            return False
        rows = self.sacct(since, "--noheader", fields="JobID,State,End").splitlines()
        for row in rows:
            _, state, end = row.split("|")
            if end == "Unknown" or state.split()[0] not in TERMINAL_STATES:
                return False
        return bool(rows)

    # Processes

    def run(self, command: list[str]) -> str:
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=60,
            env=self.environment,
            check=False,
        )
        if result.returncode != 0:
            raise SlurmHarnessError(
                f"{' '.join(command)} failed ({result.returncode}): "
                f"{result.stderr.strip()}\n{self.logs()}"
            )
        return result.stdout

    def _output(self, command: list[str]) -> str:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=60, env=self.environment, check=False
        )
        return result.stdout if result.returncode == 0 else ""

    def _answers(self, command: list[str]) -> bool:
        result = subprocess.run(
            command, capture_output=True, timeout=60, env=self.environment, check=False
        )
        return result.returncode == 0

    def _start(self, name: str, command: list[str]) -> None:
        if ABORT.is_set():
            # A stop may already have run: a daemon started now would outlive the run.
            raise SlurmHarnessError(f"the test run was stopped before {name} started")
        with (self.log_dir / f"{name}.out").open("ab") as output:
            self.processes[name] = subprocess.Popen(  # noqa: S603 - our own arguments
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.environment,
                cwd=self.workdir,
                start_new_session=True,
            )

    def _start_munged(self) -> None:
        munge_dir = self.workdir / "munge"
        key = munge_dir / "munge.key"
        self.run([_binary("mungekey"), "--create", f"--keyfile={key}"])
        # --force: munged refuses a socket in a directory others can enter (/tmp's
        # sticky-bit directories count); the key stays readable by root only.
        self._start(
            "munged",
            [
                _binary("munged"),
                "--foreground",
                "--force",
                f"--key-file={key}",
                f"--socket={self.munge_socket}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--seed-file={munge_dir / 'munged.seed'}",
                f"--log-file={self.log_dir / 'munged.log'}",
            ],
        )
        _wait(
            lambda: self._answers([_binary("munge"), "-n", "-S", str(self.munge_socket)]),
            seconds=STARTUP_SECONDS,
            what="munged to encode a credential",
            on_timeout=self.logs,
        )

    @property
    def munge_socket(self) -> Path:
        return self.workdir / "munge" / "munge.sock"

    def _write_configuration(self) -> None:
        password = self.mysql.password
        values = {
            "cluster": self.cluster,
            "node_name": NODE_NAME,
            "hardware": self._hardware(),
            "device_dir": str(self._make_gpu_devices()),
            "slurmctld_port": str(free_port()),
            "slurmd_port": str(free_port()),
            "slurmdbd_port": str(free_port()),
            "munge_socket": str(self.munge_socket),
            "state_dir": str(self.workdir / "state"),
            "spool_dir": str(self.workdir / "spool"),
            "run_dir": str(self.workdir / "run"),
            "log_dir": str(self.log_dir),
            "database": self.database,
            "mysql_host": self.mysql.host,
            "mysql_port": str(self.mysql.port),
            "mysql_user": self.mysql.user,
            "mysql_password_line": f"StoragePass={password}" if password else "",
        }
        for name in ("slurm.conf", "gres.conf", "slurmdbd.conf"):
            text = Template((CONF_DIR / name).read_text()).substitute(values)
            path = self.conf_dir / name
            path.write_text(text)
            # slurmdbd refuses a configuration with a password others could read.
            path.chmod(0o600)

    def _hardware(self) -> str:
        """The CPU layout ``slurmd -C`` reports, as NodeName parameters."""
        found = self.run([_binary("slurmd"), "-C"]).split()
        keep = ("CPUs=", "Boards=", "SocketsPerBoard=", "CoresPerSocket=", "ThreadsPerCore=")
        return " ".join(item for item in found if item.startswith(keep))

    def _make_gpu_devices(self) -> Path:
        """Four character devices like /dev/null (1:3) for gres.conf's File=; a plain file
        where the machine refuses mknod (slurmd then logs an error but counts the GPU)."""
        device_dir = self.workdir / "dev"
        device_dir.mkdir(exist_ok=True)
        for index in range(4):
            path = device_dir / f"nvidia{index}"
            try:
                os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
            except PermissionError:
                path.touch()
        return device_dir

    def _kill_what_is_left(self) -> None:
        marker = f"GPUFLEET_SLURM_RUN={self.cluster}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    os.kill(int(entry.name), signal.SIGKILL)


def stop_running_clusters() -> None:
    """What a SIGTERM does before it ends the run: every wait gives up and every cluster
    still running stops (``OneNodeSlurm.stop``, as the end of a capture does)."""
    ABORT.set()
    with RUNNING_LOCK:
        clusters = list(RUNNING)
    for slurm in clusters:
        slurm.stop()


# Installed while a capture runs (``BackgroundCapture``): the daemons run in sessions of
# their own, so without it a SIGTERM to pytest would leave them running.
STOP_ON_SIGTERM = StopOnSigterm(stop_running_clusters)


def run_the_jobs(slurm: OneNodeSlurm) -> tuple[dict[str, str], str]:
    """Submit the jobs, requeue and cancel two while they run, wait until all have ended;
    return the job ids by purpose and the ``--starttime`` that covers them."""
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 60))
    jobs = {}
    # The timeout job goes first: its minute is the longest wait, and the node's other CPU
    # runs the rest meanwhile.
    jobs["timeout"] = slurm.sbatch("runs-too-long", "--gres=gpu:1", "--time=1", script="sleep 600")
    jobs["requeued"] = slurm.sbatch(
        "requeued",
        "--gres=gpu:1",
        "--requeue",
        # The first run says it has run a while (a file), then waits to be requeued; the
        # second (Slurm counts restarts) completes.
        script=(
            '[ "${SLURM_RESTART_COUNT:-0}" -gt 0 ] && sleep 2 && exit 0; '
            f"{RAN_A_WHILE}; sleep 600"
        ),
    )
    # The short jobs sleep a little so that their rows have an elapsed time to count.
    jobs["completed"] = slurm.sbatch("completes", "--gres=gpu:2", script="sleep 3")
    jobs["failed"] = slurm.sbatch("fails", "--gpus=1", script="sleep 1; exit 1")
    jobs["array"] = slurm.sbatch("array", "--array=0-1", "--gpus=1", script="sleep 2")
    jobs["cancelled"] = slurm.sbatch("cancelled", "--gpus=1", script=f"{RAN_A_WHILE}; sleep 600")

    slurm.wait_ran_a_while(jobs["requeued"])
    slurm.run(["scontrol", "requeue", jobs["requeued"]])
    # A requeued job may start again only two minutes later (its begin time); the test
    # wants its second run, not the wait, so the begin time moves to now.
    _wait(
        lambda: slurm.job_state(jobs["requeued"]) == "PENDING",
        seconds=JOBS_SECONDS,
        what=f"job {jobs['requeued']} to wait again after its requeue",
        on_timeout=slurm.logs,
    )
    slurm.run(["scontrol", "update", f"JobId={jobs['requeued']}", "StartTime=now"])
    slurm.wait_ran_a_while(jobs["cancelled"])
    slurm.run(["scancel", jobs["cancelled"]])
    _wait(
        lambda: slurm.all_ended(since),
        seconds=JOBS_SECONDS,
        what="every job to end and reach slurmdbd",
        on_timeout=lambda: slurm.sacct(since) + "\n" + slurm.logs(),
    )
    return jobs, since


def capture(workdir: Path) -> SacctCapture:
    """Start a cluster in ``workdir``, run the jobs, capture ``sacct``, stop everything."""
    began = time.monotonic()
    slurm = OneNodeSlurm(workdir)
    try:
        slurm.start()
        ready = time.monotonic()
        jobs, since = run_the_jobs(slurm)
        ended = time.monotonic()
        text = slurm.sacct(since)
        text_without_duplicates = slurm.sacct(since, duplicates=False)
        pull_text = slurm.run(
            sacct_arguments("sacct", datetime.strptime(since, "%Y-%m-%dT%H:%M:%S"))
        )
        version = slurm.run(["sacct", "--version"]).strip()
    finally:
        slurm.stop()
    return SacctCapture(
        text=text,
        cluster=slurm.cluster,
        job_ids=jobs,
        slurm_version=version,
        seconds_to_ready=round(ready - began, 1),
        seconds_to_jobs_ended=round(ended - began, 1),
        text_without_duplicates=text_without_duplicates,
        seconds_in_all=round(time.monotonic() - began, 1),
        pull_text=pull_text,
    )


class BackgroundCapture:
    """One capture per test run, started early in one process, read by any.

    Under pytest-xdist the first worker (gw0) runs the capture and writes it to a file
    named by the run's id, which every worker shares; without xdist the one process
    runs it. ``result()`` waits for it.
    """

    def __init__(self):
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"solo{os.getpid()}"
        self.alone = worker == ""
        self.starts_here = worker in ("", "gw0")
        self.result_dir = Path(tempfile.gettempdir()) / f"{RESULT_PREFIX}{run_id}"
        self.thread: threading.Thread | None = None

    @property
    def result_path(self) -> Path:
        return self.result_dir / "capture.json"

    @property
    def error_path(self) -> Path:
        return self.result_dir / "error.txt"

    def start(self) -> None:
        if not self.starts_here or self.thread is not None:
            return
        # Under xdist no worker knows when the others have read the result; the next run
        # removes what earlier ones left (a few kilobytes each).
        for old in Path(tempfile.gettempdir()).glob(f"{RESULT_PREFIX}*"):
            if old.stat().st_mtime < time.time() - 3600:
                shutil.rmtree(old, ignore_errors=True)
        self.result_dir.mkdir(parents=True, exist_ok=True)
        # From the main thread (a collection hook): only it can set a signal handler.
        STOP_ON_SIGTERM.install()
        self.thread = threading.Thread(target=self._run, name="slurm-capture", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with tempfile.TemporaryDirectory(prefix="gpufleet-slurm-cluster-") as workdir:
                result = capture(Path(workdir))
            self._write(self.result_path, json.dumps(asdict(result)))
        except Exception as error:  # noqa: BLE001 - every failure reaches the tests
            self._write(self.error_path, f"{type(error).__name__}: {error}")

    @staticmethod
    def _write(path: Path, text: str) -> None:
        partial = path.with_suffix(".partial")
        partial.write_text(text)
        partial.replace(path)

    def result(self, timeout_seconds: float = CAPTURE_SECONDS) -> SacctCapture:
        self.start()

        def written():
            if self.error_path.exists():
                raise SlurmHarnessError(self.error_path.read_text())
            if self.result_path.exists():
                return SacctCapture(**json.loads(self.result_path.read_text()))
            return None

        return _wait(written, seconds=timeout_seconds, what="the Slurm capture")

    def finish(self, *, interrupted: bool) -> None:
        """The starting process waits for the capture (and the cluster's stop) before it
        exits, as another worker may still be waiting for the result; an interrupted run
        stops the cluster at once."""
        if interrupted:
            ABORT.set()
        if self.thread is not None:
            self.thread.join()
        STOP_ON_SIGTERM.restore()
        if self.alone:
            shutil.rmtree(self.result_dir, ignore_errors=True)
