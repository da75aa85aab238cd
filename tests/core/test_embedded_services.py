"""With nothing configured, gpufleet brings its own PostgreSQL and Redis: the settings
start the embedded PostgreSQL, and `make test` starts both on the test addresses when no
server answers there."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import psycopg
import pytest
import redis

REPO_ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(**values) -> dict:
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
    }
    return {**environment, **values}


def _processes_on(path: Path) -> list:
    return [
        process
        for process in psutil.process_iter(["cmdline"])
        if any(str(path) in part for part in (process.info["cmdline"] or []))
    ]


@pytest.fixture
def var_dir():
    """An empty VAR_DIR outside pytest's own temporary directory, which each new pytest
    session makes private to root again, out of reach of the server's service user."""
    directory = Path(tempfile.mkdtemp(prefix="gpufleet-embedded-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_a_command_without_database_url_runs_on_the_embedded_postgresql(var_dir):
    """A manage.py command starts the server on VAR_DIR/postgres, reaches it through its
    Unix socket (no TCP port) and stops it when it exits."""
    tmp_path = var_dir
    script = (
        "from django.db import connection\n"
        "from django.conf import settings\n"
        "with connection.cursor() as cursor:\n"
        "    cursor.execute('SELECT version(), current_database()')\n"
        "    version, database = cursor.fetchone()\n"
        "print('found', version, database, settings.DATABASES['default']['HOST'], sep='|')\n"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=REPO_ROOT,
        env=_environment(VAR_DIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    found = next(line for line in result.stdout.splitlines() if line.startswith("found|"))
    version, database, host = found.split("|")[1:]
    assert version.startswith("PostgreSQL 18.")
    assert database == "gpufleet"
    assert host == str(tmp_path / "postgres")
    assert (tmp_path / "postgres" / "PG_VERSION").read_text().strip() == "18"
    assert _processes_on(tmp_path / "postgres") == []


def test_a_database_url_that_is_not_postgresql_is_refused_with_a_sentence(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_ROOT,
        env=_environment(VAR_DIR=str(tmp_path), DATABASE_URL="mysql://root@127.0.0.1/gpufleet"),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "DATABASE_URL must name a PostgreSQL database" in result.stderr


@pytest.fixture
def path_without_servers(tmp_path):
    """A PATH on which no PostgreSQL or Redis is installed: only what the script runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "seq", "sleep", "ls", "sort", "tail", "id", "mkdir", "cat"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_make_test_starts_embedded_servers_where_none_answers(path_without_servers):
    postgres_port, redis_port = _free_port(), _free_port()
    database_url = f"postgres://postgres@127.0.0.1:{postgres_port}/gpufleet_embedded_check"
    redis_url = f"redis://127.0.0.1:{redis_port}/15"
    environment = _environment(
        PATH=path_without_servers,
        PYTHON=sys.executable,
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
    )
    try:
        result = subprocess.run(
            ["scripts/ensure_services.sh"],
            cwd=REPO_ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "starting the embedded one" in result.stdout

        with psycopg.connect(database_url) as connection:
            assert connection.execute("SHOW server_version").fetchone()[0].startswith("18.")
        client = redis.Redis.from_url(redis_url)
        assert client.ping()
        client.close()
    finally:
        stopped = subprocess.run(
            [sys.executable, "scripts/embedded_test_services.py", "stop"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert "PostgreSQL (embedded): stopped" in stopped.stdout
    assert "Redis (embedded): stopped" in stopped.stdout
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", postgres_port), timeout=2).close()
