"""The rows a management command adds, captured once and copied into later tests.

``seed_demo`` writes 28 days of hourly usage, backups and scenarios: seconds of work that
tests reading the demo would otherwise repeat. ``capture_added_rows`` runs it inside a
transaction it rolls back, keeping with PostgreSQL's COPY the rows each table gained;
``restore_rows`` copies them into the current test's database. Sequences are not rolled
back, so later inserts never reuse the captured ids.
"""

from collections.abc import Callable

from django.db import connection, transaction

Snapshot = dict[str, bytes]


def _tables_with_integer_keys(cursor) -> dict[str, str]:
    """Table → its integer primary-key column, for every table in the public schema."""
    cursor.execute(
        """
        SELECT table_constraints.table_name, key_columns.column_name
        FROM information_schema.table_constraints
        JOIN information_schema.key_column_usage AS key_columns
          USING (constraint_schema, constraint_name, table_name)
        JOIN information_schema.columns AS columns
          ON columns.table_schema = table_constraints.table_schema
         AND columns.table_name = table_constraints.table_name
         AND columns.column_name = key_columns.column_name
        WHERE table_constraints.table_schema = 'public'
          AND table_constraints.constraint_type = 'PRIMARY KEY'
          AND columns.data_type IN ('integer', 'bigint', 'smallint')
        """
    )
    return dict(cursor.fetchall())


def _fingerprints(cursor, keys: dict[str, str], below: dict[str, int]) -> dict[str, str]:
    """A digest of each table's rows up to ``below`` (the rows that existed before)."""
    digests = {}
    for table, key in keys.items():
        cursor.execute(
            f"SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t.\"{key}\"), '')) "  # noqa: S608
            f'FROM "{table}" AS t WHERE t."{key}" <= %s',
            [below[table]],
        )
        digests[table] = cursor.fetchone()[0]
    return digests


def capture_added_rows(command: Callable[[], object]) -> Snapshot:
    """Run ``command`` in a rolled-back transaction; return the rows it added, per table.

    Fails if it changed a row that existed before or added rows to a table without an
    integer key: those could not be restored by copying new rows alone.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        keys = _tables_with_integer_keys(cursor)
        cursor.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
        other_tables = sorted({row[0] for row in cursor.fetchall()} - set(keys))
        before = {}
        for table, key in keys.items():
            cursor.execute(f'SELECT coalesce(max("{key}"), 0) FROM "{table}"')  # noqa: S608
            before[table] = cursor.fetchone()[0]
        counts_elsewhere = _counts(cursor, other_tables)
        fingerprints = _fingerprints(cursor, keys, before)

        command()

        changed = [
            table
            for table, digest in _fingerprints(cursor, keys, before).items()
            if digest != fingerprints[table]
        ]
        changed += [
            table
            for table, count in _counts(cursor, other_tables).items()
            if count != counts_elsewhere[table]
        ]
        assert not changed, f"the command changed rows it did not add, in {changed}"
        snapshot = {}
        for table, key in keys.items():
            # Names from PostgreSQL's own catalog, an integer bound: nothing user-supplied.
            query = f'COPY (SELECT * FROM "{table}" WHERE "{key}" > {int(before[table])}) TO STDOUT'  # noqa: S608, E501
            with cursor.cursor.copy(query) as copy:
                rows = b"".join(bytes(block) for block in copy)
            if rows:
                snapshot[table] = rows
        transaction.set_rollback(True)
    return snapshot


def _counts(cursor, tables) -> dict[str, int]:
    counts = {}
    for table in tables:
        cursor.execute(f'SELECT count(*) FROM "{table}"')  # noqa: S608
        counts[table] = cursor.fetchone()[0]
    return counts


def restore_rows(snapshot: Snapshot) -> None:
    """Copy captured rows into the database, in one transaction: foreign keys are
    checked once every table is filled (Django declares them deferrable)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        for table, rows in snapshot.items():
            with cursor.cursor.copy(f'COPY "{table}" FROM STDIN') as copy:
                copy.write(rows)
