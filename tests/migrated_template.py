"""Each pytest-xdist process's test database, copied from one migrated template.

pytest-django gives every xdist process a test database of its own and migrates each
from nothing: the same work repeated per process, while the processes compete for the
same cores. Here the first process to ask migrates a template database
(``test_<name>_migrated``) and every process's database is a copy of it (PostgreSQL's
``CREATE DATABASE … TEMPLATE``, a file copy). The template is kept between runs and
migrated again only when the migrations differ from those it was built by, or on another
UTC day (the migrations make the partitions of the days around it): a digest of every
migration file and the day is its comment. An advisory lock makes the others wait while one
builds it.
"""

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db.backends.postgresql.creation import DatabaseCreation

_create_test_db_by_migrating = DatabaseCreation.create_test_db


# What the migrations read besides themselves: the role table they grant and the catalog
# they seed.
MIGRATIONS_READ = ("apps/core/roles.py", "apps/catalog/seed.py", "apps/catalog/data/*.csv")
REPO_ROOT = Path(__file__).resolve().parent.parent


def migrations_digest(*extra: Path) -> str:
    """A digest of the migrations, what they read, the UTC day and ``extra`` files."""
    digest = hashlib.sha256()
    # The migrations make the telemetry partitions of the days around today: a template
    # made on another day holds the wrong days, so it is made again each UTC day.
    digest.update(f"{datetime.now(UTC):%Y-%m-%d}\n".encode())
    for app in sorted(apps.get_app_configs(), key=lambda app: app.label):
        folder = Path(app.path) / "migrations"
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else ():
            digest.update(f"{app.label}/{path.name}\n".encode())
            digest.update(path.read_bytes())
    read = [path for pattern in MIGRATIONS_READ for path in sorted(REPO_ROOT.glob(pattern))]
    for path in [*read, *extra]:
        digest.update(f"{path.name}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def template_comment(cursor, template: str) -> str | None:
    cursor.execute(
        "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
        [template],
    )
    row = cursor.fetchone()
    return None if row is None else (row[0] or "")


def template_of(test_database_name: str) -> str:
    """The template a process's test database is copied from."""
    return re.sub(r"_gw\d+$", "", test_database_name) + "_migrated"


def _migrate_template_unless_current(creation, template: str, cursor) -> None:
    """Migrate ``template`` from nothing unless its comment is the current digest; the
    caller holds the template's advisory lock."""
    digest = migrations_digest()
    if template_comment(cursor, template) == digest:
        return
    test_settings = creation.connection.settings_dict["TEST"]
    test_settings["NAME"], original_name = template, test_settings["NAME"]
    try:
        _create_test_db_by_migrating(creation, 0, True, False, False)
    finally:
        test_settings["NAME"] = original_name
    creation.connection.close()
    quote = creation.connection.ops.quote_name
    cursor.execute(f"COMMENT ON DATABASE {quote(template)} IS %s", [digest])


def create_test_db(self, verbosity=1, autoclobber=False, serialize=True, keepdb=False):
    name = self._get_test_db_name()
    template = template_of(name)
    if keepdb or serialize:
        return _create_test_db_by_migrating(self, verbosity, autoclobber, serialize, keepdb)
    quote = self.connection.ops.quote_name
    with self._nodb_cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [template])
        try:
            _migrate_template_unless_current(self, template, cursor)
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)}")
            cursor.execute(f"CREATE DATABASE {quote(name)} TEMPLATE {quote(template)}")
        finally:
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [template])
    self.connection.close()
    settings.DATABASES[self.connection.alias]["NAME"] = name
    self.connection.settings_dict["NAME"] = name
    self.connection.ensure_connection()
    return name


def copy_test_databases_from_a_migrated_template() -> None:
    DatabaseCreation.create_test_db = create_test_db


def main() -> None:
    """Make the migrated template the suite's processes copy, unless it is current:
    ``make test`` runs this beside its other checks, so that pytest's processes find it
    made instead of waiting, both, while one of them migrates it."""
    import os

    import django
    from django.db import connection

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    creation = connection.creation
    template = template_of(creation._get_test_db_name())
    with creation._nodb_cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [template])
        try:
            _migrate_template_unless_current(creation, template, cursor)
        finally:
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [template])
    print(f"test database template: {template}, migrated")


if __name__ == "__main__":
    main()
