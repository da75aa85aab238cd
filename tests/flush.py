"""After every transactional test, the database as the migrations left it, fast.

A transactional test commits what it writes. Django's answer is ``flush``: TRUNCATE every
table, which gives each table, index and telemetry partition new files whatever the test
wrote, then reads its serialized copy of the migrated rows back through the ORM. Here a
transactional test ends instead by

- deleting the rows of every table that holds rows the migrations did not leave there,
- and copying the migrated rows (role groups, permissions, the catalog) back with COPY,
  only into a table whose rows differ from the copy taken once after migrating,

in one transaction whose foreign keys are checked at its end (Django declares them
``DEFERRABLE INITIALLY DEFERRED``, so the order of the statements does not matter).
Sequences stay where they are, as after ``flush``.
"""

from dataclasses import dataclass

from django.db import connections, transaction
from django.test import TransactionTestCase


@dataclass(frozen=True)
class MigratedRows:
    """Every model table (those ``flush`` empties), and of those holding rows after
    migrating, a COPY of the rows and a digest of them."""

    tables: tuple[str, ...]
    copies: dict[str, bytes]
    digests: dict[str, str]


def _digests(cursor, quote, tables) -> dict[str, str]:
    if not tables:
        return {}
    cursor.execute(
        " UNION ALL ".join(
            f"SELECT {index}, (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), ''))"  # noqa: S608
            f" FROM {quote(table)} AS t)"
            for index, table in enumerate(tables)
        )
    )
    return {tables[index]: digest for index, digest in cursor.fetchall()}


def _holding_rows(cursor, quote, tables) -> set[str]:
    cursor.execute(
        " UNION ALL ".join(
            f"SELECT {index} WHERE EXISTS (SELECT 1 FROM {quote(table)})"  # noqa: S608
            for index, table in enumerate(tables)
        )
    )
    return {tables[index] for (index,) in cursor.fetchall()}


def capture_migrated_rows(connection) -> MigratedRows:
    tables = tuple(
        sorted(connection.introspection.django_table_names(only_existing=True, include_views=False))
    )
    quote = connection.ops.quote_name
    copies = {}
    with connection.cursor() as cursor:
        for table in sorted(_holding_rows(cursor, quote, tables)):
            with cursor.cursor.copy(f"COPY {quote(table)} TO STDOUT") as copy:
                copies[table] = b"".join(bytes(block) for block in copy)
        digests = _digests(cursor, quote, sorted(copies))
    return MigratedRows(tables, copies, digests)


def restore_migrated_rows(connection, migrated: MigratedRows) -> list[str]:
    """Back to ``migrated``; returns the tables that were written."""
    quote = connection.ops.quote_name
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        changed = [
            table
            for table, digest in _digests(cursor, quote, sorted(migrated.copies)).items()
            if digest != migrated.digests[table]
        ]
        written = sorted(_holding_rows(cursor, quote, migrated.tables) - set(migrated.copies))
        for table in written + changed:
            cursor.execute(f"DELETE FROM {quote(table)}")  # noqa: S608
        for table in changed:
            with cursor.cursor.copy(f"COPY {quote(table)} FROM STDIN") as copy:
                copy.write(migrated.copies[table])
    return written + changed


# The migrated rows of each database alias, captured once the test databases exist.
MIGRATED: dict[str, MigratedRows] = {}
_django_fixture_teardown = TransactionTestCase._fixture_teardown


def _fixture_teardown(self):
    if self.available_apps is not None or self.serialized_rollback:
        return _django_fixture_teardown(self)
    for db_name in self._databases_names(include_mirrors=False):
        restore_migrated_rows(connections[db_name], MIGRATED[db_name])
    return None


def use_the_fast_flush(aliases) -> None:
    """Capture the migrated rows of ``aliases`` and end transactional tests as above."""
    for alias in aliases:
        MIGRATED[alias] = capture_migrated_rows(connections[alias])
    TransactionTestCase._fixture_teardown = _fixture_teardown
