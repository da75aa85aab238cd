"""The squashed migrations keep existing databases working.

Each app's migrations are squashed into one that ``replaces`` the old ones: a new
database runs the squash, and a database made by the old migrations goes on from where
it stands. This test starts from such a database, made for real: migrated by the old
graph (the squashes ignored) to just before the pools' price periods, with a pool in it
(tests/old_graph.py); it migrates a copy of it to head as ``manage.py migrate`` would.
The old migrations still on the path run on the row, and the squashes count as applied
afterwards.
"""

import gzip
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from tests.old_graph import (
    BEFORE_PRICE_PERIODS,
    BEFORE_SQUASH_DUMP,
    OLD_POOL_SLUG,
    UNSQUASHED,
)


@pytest.fixture
def database_from_before_the_squash(django_db_blocker):
    """A copy of an installation from before the squash, with a pool, in place of the
    default database while the test runs: the migrations' data steps write through the
    default alias.

    The installation was made for real by the old graph and kept as a dump
    (tests/data/migrations/, made by ``python -m tests.old_graph``): the old graph is
    history, and running all of it is the slowest migration there is, where what each run
    tests is the copy's way to head."""
    test_connection = connections["default"]
    quote = test_connection.ops.quote_name
    name = f"{test_connection.settings_dict['NAME']}_squash"

    def connect(database_name):
        return test_connection.__class__(
            {**test_connection.settings_dict, "NAME": database_name}, alias="default"
        )

    with django_db_blocker.unblock():
        with test_connection._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)}")
            cursor.execute(f"CREATE DATABASE {quote(name)}")
        loading = connect(name)
        try:
            with loading.cursor() as cursor:
                # pg_dump's script, statements and settings of its own (search_path among
                # them): on a connection closed after it.
                cursor.execute(gzip.decompress(BEFORE_SQUASH_DUMP.read_bytes()).decode())
        finally:
            loading.close()
        own = connections["default"] = connect(name)
        try:
            yield own
        finally:
            own.close()
            connections["default"] = test_connection
            with test_connection._nodb_cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)}")


def test_a_database_from_before_the_squash_migrates_to_head_with_its_rows(
    database_from_before_the_squash,
):
    own_database = database_from_before_the_squash
    # As `manage.py migrate` does: the graph with the squashes, to every leaf.
    new = MigrationExecutor(own_database)
    assert new.loader.replace_migrations
    assert ("pools", BEFORE_PRICE_PERIODS[1]) in new.loader.applied_migrations
    leaves = new.loader.graph.leaf_nodes()
    new.migrate(leaves)

    with own_database.cursor() as cursor:
        cursor.execute(
            "SELECT p.name, p.gpu_count, pp.effective_from, pp.on_demand_price_per_gpu_hour_usd "
            "FROM pools_pool p JOIN pools_poolpriceperiod pp ON pp.pool_id = p.id "
            "WHERE p.slug = %s",
            [OLD_POOL_SLUG],
        )
        rows = cursor.fetchall()
    # 0012, run from the old graph, gave the pool its first period from its prices.
    assert rows == [("Old pool", 16, datetime(2024, 3, 1, 9, tzinfo=UTC), Decimal("2.9900"))]

    # Read afresh, every app's squash counts as applied (pools' too, now that all the
    # migrations it replaces are), and nothing is left to run.
    again = MigrationExecutor(own_database)
    applied = MigrationRecorder(own_database).applied_migrations()
    squashes = [key for key in again.loader.graph.nodes if "_squashed_" in key[1]]
    assert len(squashes) == 11 and ("pools", "0001_squashed_0012_price_periods") in squashes
    assert all(key in applied for key in squashes)
    assert again.migration_plan(again.loader.graph.leaf_nodes()) == []
    with own_database.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM auth_group")
        assert cursor.fetchone()[0] == 4


def test_a_new_database_runs_only_the_squashes():
    """One migration per app (the data steps of its empty tables elided), then those
    written after its squash: what a new install and every xdist worker's test database
    run."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    own = [key for key in loader.graph.nodes if key[0] in _OWN_APPS]
    squash_ends = {
        app: name.split("_squashed_")[1][:4] for app, name in own if "_squashed_" in name
    }
    assert own and all(
        "_squashed_" in name
        or name == "0001_initial"
        or app in UNSQUASHED
        or (app in squash_ends and name[:4] > squash_ends[app])
        for app, name in own
    ), sorted(own)


_OWN_APPS = {
    "accounts",
    "alerts",
    "backups",
    "catalog",
    "core",
    "demo",
    "pilots",
    "pools",
    "procurement",
    "reports",
    "showback",
    "telemetry",
    "training",
}
