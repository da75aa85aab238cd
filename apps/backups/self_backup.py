"""Backups of gpufleet's own database.

PostgreSQL is dumped with ``pg_dump --format=custom`` and restored with ``pg_restore``;
the embedded SQLite default is copied with SQLite's online backup API, which gives a
consistent copy while the dashboard keeps writing. Either way a backup is written under a
``.partial`` name and renamed when complete, so a file named ``gpufleet-<UTC time>.*``
is always a whole one. MEDIA_ROOT (drill evidence, procurement exports) is not in the
database: back it up beside it (README, "Backups of gpufleet itself").
"""

import os
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import connections

BACKUP_NAME_PREFIX = "gpufleet-"
POSTGRES_SUFFIX = ".dump"
SQLITE_SUFFIX = ".sqlite3"
BACKUP_SUFFIXES = (POSTGRES_SUFFIX, SQLITE_SUFFIX)


class BackupError(Exception):
    """A dump or restore that did not complete; the message says why."""


def _vendor(database: dict) -> str:
    engine = database["ENGINE"]
    if "postgresql" in engine:
        return "postgresql"
    if "sqlite3" in engine:
        return "sqlite"
    raise BackupError(f"gpufleet backs up PostgreSQL and SQLite, not {engine}.")


def _postgres_connection(database: dict) -> tuple[list[str], dict[str, str]]:
    """Connection options for pg_dump/pg_restore, and their environment: the password
    goes through PGPASSWORD so that it never shows in the process list."""
    arguments = []
    if database.get("HOST"):
        arguments.append(f"--host={database['HOST']}")
    if database.get("PORT"):
        arguments.append(f"--port={database['PORT']}")
    if database.get("USER"):
        arguments.append(f"--username={database['USER']}")
    environment = dict(os.environ)
    if database.get("PASSWORD"):
        environment["PGPASSWORD"] = str(database["PASSWORD"])
    if database.get("OPTIONS", {}).get("sslmode"):
        environment["PGSSLMODE"] = database["OPTIONS"]["sslmode"]
    return arguments, environment


def _run(command: list[str], environment: dict[str, str]) -> None:
    try:
        subprocess.run(command, env=environment, check=True, capture_output=True, text=True)  # noqa: S603 - fixed program, arguments from settings
    except FileNotFoundError as error:
        raise BackupError(
            f"{command[0]} is not installed: install the PostgreSQL client tools of the "
            "server's major version (or newer)."
        ) from error
    except subprocess.CalledProcessError as error:
        raise BackupError(f"{command[0]} failed: {error.stderr.strip()}") from error


def _sqlite_copy(source_path, target_path) -> None:
    source = sqlite3.connect(source_path)
    target = sqlite3.connect(target_path)
    try:
        with target:
            source.backup(target)
    finally:
        target.close()
        source.close()


def backup_database(*, directory: Path, now: datetime | None = None, database=None) -> Path:
    """Write a whole backup of ``database`` (default: Django's) into ``directory``, named
    after the UTC time; return its path."""
    database = database or settings.DATABASES["default"]
    vendor = _vendor(database)
    now = now or datetime.now(UTC)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    suffix = POSTGRES_SUFFIX if vendor == "postgresql" else SQLITE_SUFFIX
    target = directory / f"{BACKUP_NAME_PREFIX}{now.astimezone(UTC):%Y%m%dT%H%M%SZ}{suffix}"
    partial = target.with_name(target.name + ".partial")
    try:
        if vendor == "postgresql":
            arguments, environment = _postgres_connection(database)
            _run(
                [
                    "pg_dump",
                    "--format=custom",
                    f"--file={partial}",
                    *arguments,
                    f"--dbname={database['NAME']}",
                ],
                environment,
            )
        else:
            _sqlite_copy(database["NAME"], partial)
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
        if path.name.startswith(BACKUP_NAME_PREFIX) and path.suffix in BACKUP_SUFFIXES
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
    ``path``. On PostgreSQL it runs in one transaction: a restore that fails changes
    nothing."""
    database = database or settings.DATABASES["default"]
    vendor = _vendor(database)
    path = Path(path)
    if not path.is_file():
        raise BackupError(f"{path} does not exist.")
    expected_suffix = POSTGRES_SUFFIX if vendor == "postgresql" else SQLITE_SUFFIX
    if path.suffix != expected_suffix:
        raise BackupError(
            f"{path.name} is not a {vendor} backup (expected a {expected_suffix} file)."
        )
    # Django's own connections would hold locks on the tables being replaced.
    connections.close_all()
    if vendor == "postgresql":
        arguments, environment = _postgres_connection(database)
        _run(
            [
                "pg_restore",
                "--clean",
                "--if-exists",
                "--no-owner",
                "--no-privileges",
                "--single-transaction",
                "--exit-on-error",
                *arguments,
                f"--dbname={database['NAME']}",
                str(path),
            ],
            environment,
        )
    else:
        _sqlite_copy(path, database["NAME"])
