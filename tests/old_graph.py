"""The migration graph as it was before each app's migrations were squashed.

Tests of a data migration move the test database back to just before it and forward
again. The squashes replace those migrations in the graph Django builds, so such tests
use this one: the old migrations, which a database made by the squashes has recorded as
applied too (Django records what a squash replaces when it applies it).
"""

from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader


def old_graph_executor(connection) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader = MigrationLoader(connection, replace_migrations=False)
    return executor


def old_leaf_nodes(executor: MigrationExecutor, app_label: str | None = None):
    """Each app's last migration before the squash (the squashes, leaves of this graph
    too, left out)."""
    return [
        node
        for node in executor.loader.graph.leaf_nodes()
        if "_squashed_" not in node[1] and (app_label is None or node[0] == app_label)
    ]


def migrate_to_head(connection) -> None:
    """As ``manage.py migrate`` does: the graph with the squashes, to every leaf. The old
    graph moved back and forth unapplies what depends on the migrations it passes,
    migrations written after the squashes included; this applies them again."""
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
