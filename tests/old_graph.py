"""The migration graph as it was before each app's migrations were squashed.

Tests of a data migration move the test database back to just before it and forward
again. The squashes replace those migrations in the graph Django builds, so such tests
use this one: the old migrations, which a database made by the squashes has recorded as
applied too (Django records what a squash replaces when it applies it).
"""

import contextlib

from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from tests.migrated_template import template_of


def old_graph_executor(connection) -> MigrationExecutor:
    """The old migrations, without the squashes: a migration written after a squash
    follows the last migration the squash replaces, as it would have followed it had the
    squash never been written (Django's own remapping of a squash it cannot use)."""
    executor = MigrationExecutor(connection)
    executor.loader = MigrationLoader(connection, replace_migrations=False)
    for squash, migration in executor.loader.replacements.items():
        executor.loader.graph.remove_replacement_node(squash, migration.replaces)
    return executor


def old_leaf_nodes(executor: MigrationExecutor, app_label: str | None = None):
    """Each app's last migration before the squash (the squashes, leaves of this graph
    too, left out)."""
    return [
        node
        for node in executor.loader.graph.leaf_nodes()
        if "_squashed_" not in node[1] and (app_label is None or node[0] == app_label)
    ]


@contextlib.contextmanager
def scratch_database(django_db_blocker):
    """A copy of the migrated template in place of the test database while the block
    runs, then dropped: moving the old graph back and forth unapplies and re-runs old
    migrations, which would leave the test database of every later test on this process
    short of what the migrations written since added."""
    test_connection = connections["default"]
    name = f"{test_connection.settings_dict['NAME']}_scratch"
    template = template_of(test_connection.settings_dict["NAME"])
    quote = test_connection.ops.quote_name
    with django_db_blocker.unblock():
        with test_connection._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)}")
            cursor.execute(f"CREATE DATABASE {quote(name)} TEMPLATE {quote(template)}")
        scratch = test_connection.__class__(
            {**test_connection.settings_dict, "NAME": name}, alias="default"
        )
        connections["default"] = scratch
        try:
            yield scratch
        finally:
            scratch.close()
            connections["default"] = test_connection
            with test_connection._nodb_cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)}")
