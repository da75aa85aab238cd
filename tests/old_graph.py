"""The migration graph as it was before each app's migrations were squashed.

Tests of a data migration move the test database back to just before it and forward
again. The squashes replace those migrations in the graph Django builds, so such tests
use this one: the old migrations, which a database made by the squashes has recorded as
applied too (Django records what a squash replaces when it applies it).
"""

import contextlib
import gzip
import os
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from tests.migrated_template import template_of

# An installation from before the squash (tests/core/test_squashed_migrations.py), made by
# this module's main.
BEFORE_SQUASH_DUMP = Path(__file__).parent / "data" / "migrations" / "before-squash.sql.gz"
# The last old migration of pools applied before the data goes in: 0012 gives every pool
# its first price period, from the pool's prices.
BEFORE_PRICE_PERIODS = ("pools", "0011_workload_reference_step_seconds")
OLD_POOL_SLUG = "old-pool"
OLD_POOL_IN_SERVICE_FROM = datetime(2024, 3, 1, 9, 30, tzinfo=UTC)
# Apps with one migration of their own, nothing to squash.
UNSQUASHED = {"demo", "showback"}


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


# --- The installation from before the squash ----------------------------------------------


def _old_graph_targets(loader):
    """Every app's last migration before the squash, pools' stopping short of 0012: the
    last one a squash replaces, or the last of an app without a squash. Apps of this
    project first written after the squashes (no squash, no migration it replaces) had
    no tables then and are left out."""
    last, squashed = {}, {}
    for (app_label, name), migration in loader.disk_migrations.items():
        if "_squashed_" in name:
            squashed[app_label] = max(replaced for _app, replaced in migration.replaces)
    for app_label, name in loader.graph.nodes:
        if "_squashed_" not in name:
            last[app_label] = max(last.get(app_label, name), name)
    last.update(squashed)
    for app_label in set(last) - set(squashed) - UNSQUASHED:
        if loader.migrations_module(app_label)[0].startswith("apps."):
            del last[app_label]
    # Training's first migration needs pools' last one: it waits with it.
    last.pop("training")
    last["pools"] = BEFORE_PRICE_PERIODS[1]
    return sorted(last.items())


def migrate_by_the_old_graph_and_add_a_pool(connection) -> None:
    """The old graph (the squashes ignored) to just before pools' 0012, then a pool."""
    old = MigrationExecutor(connection)
    old.loader = MigrationLoader(connection, replace_migrations=False)
    targets = _old_graph_targets(old.loader)
    plan = old.migration_plan(targets)
    assert plan and not any("_squashed_" in migration.name for migration, _ in plan)
    state = old.migrate(targets, plan=plan)

    historical = state.apps
    gpu_model = historical.get_model("catalog", "GpuModel").objects.get(slug="h100-sxm")
    historical.get_model("pools", "Pool").objects.create(
        name="Old pool",
        slug=OLD_POOL_SLUG,
        purpose="training",
        deployment="cloud_on_demand",
        gpu_model=gpu_model,
        gpu_count=16,
        on_demand_price_per_gpu_hour_usd=Decimal("2.99"),
        effective_price_per_gpu_hour_usd=Decimal("2.99"),
        in_service_from=OLD_POOL_IN_SERVICE_FROM,
    )


def main() -> None:
    """Make the installation from before the squash in a new database of DATABASE_URL's
    server and keep its dump in BEFORE_SQUASH_DUMP (pg_dump on PATH):

        DATABASE_URL=postgres://postgres@127.0.0.1:5432/before_squash \\
            .venv/bin/python -m tests.old_graph
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    connection = connections["default"]
    name = connection.settings_dict["NAME"]
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)}")
        cursor.execute(f"CREATE DATABASE {connection.ops.quote_name(name)}")
    migrate_by_the_old_graph_and_add_a_pool(connection)
    connection.close()
    # Plain INSERTs, no COPY: the test runs the script through one cursor.
    dump = subprocess.run(  # noqa: S603 - pg_dump with our arguments
        [
            "pg_dump",
            "--no-owner",
            "--no-privileges",
            "--inserts",
            "--dbname",
            os.environ["DATABASE_URL"],
        ],  # noqa: S607
        check=True,
        capture_output=True,
    ).stdout
    # psql's meta-commands (\restrict and its random key) are not SQL.
    dump = b"\n".join(line for line in dump.split(b"\n") if not line.startswith(b"\\"))
    BEFORE_SQUASH_DUMP.parent.mkdir(parents=True, exist_ok=True)
    BEFORE_SQUASH_DUMP.write_bytes(gzip.compress(dump, mtime=0))
    print(f"{BEFORE_SQUASH_DUMP}: {len(dump):,} bytes of SQL", file=sys.stderr)


if __name__ == "__main__":
    main()
