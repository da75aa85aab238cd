"""The squashed migrations keep existing databases working.

Each app's migrations are squashed into one that ``replaces`` the old ones: a new
database runs the squash, and a database made by the old migrations goes on from where
it stands. This test makes such a database for real: a database migrated by the old
graph (the squashes ignored) to just before the pools' price periods, with a pool in it;
then a copy of it migrated to head as ``manage.py migrate`` would. The old migrations
still on the path run on the row, and the squashes count as applied afterwards.
"""

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from tests.migrated_template import migrations_digest, template_comment, template_of

# The last old migration of pools applied before the data goes in: 0012 gives every pool
# its first price period, from the pool's prices.
BEFORE_PRICE_PERIODS = ("pools", "0011_workload_reference_step_seconds")
OLD_POOL_SLUG = "old-pool"
OLD_POOL_IN_SERVICE_FROM = datetime(2024, 3, 1, 9, 30, tzinfo=UTC)


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
    for app_label in set(last) - set(squashed) - _UNSQUASHED:
        if loader.migrations_module(app_label)[0].startswith("apps."):
            del last[app_label]
    # Training's first migration needs pools' last one: it waits with it.
    last.pop("training")
    last["pools"] = BEFORE_PRICE_PERIODS[1]
    return sorted(last.items())


def _migrate_by_the_old_graph_and_add_a_pool(connection) -> None:
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


@pytest.fixture
def database_from_before_the_squash(django_db_blocker):
    """A copy of an installation from before the squash, with a pool, in place of the
    default database while the test runs: the migrations' data steps write through the
    default alias.

    The installation is made for real by the old graph, once for the migration files and
    the day the suite's migrated template is made for (tests/migrated_template.py) and for
    this file, and kept as a template of its own: running the whole old graph is the
    slowest migration there is, and what each run tests is the copy's way to head."""
    test_connection = connections["default"]
    quote = test_connection.ops.quote_name
    name = f"{test_connection.settings_dict['NAME']}_squash"
    template = f"{template_of(test_connection.settings_dict['NAME'])}_before_squash"
    # This file says what the installation holds: a change to it builds it again.
    digest = migrations_digest(Path(__file__))

    def connect(database_name):
        return test_connection.__class__(
            {**test_connection.settings_dict, "NAME": database_name}, alias="default"
        )

    with django_db_blocker.unblock():
        with test_connection._nodb_cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [template])
            try:
                if template_comment(cursor, template) != digest:
                    cursor.execute(f"DROP DATABASE IF EXISTS {quote(template)}")
                    cursor.execute(f"CREATE DATABASE {quote(template)}")
                    building = connections["default"] = connect(template)
                    try:
                        _migrate_by_the_old_graph_and_add_a_pool(building)
                    finally:
                        building.close()
                        connections["default"] = test_connection
                    cursor.execute(f"COMMENT ON DATABASE {quote(template)} IS %s", [digest])
                cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)}")
                cursor.execute(f"CREATE DATABASE {quote(name)} TEMPLATE {quote(template)}")
            finally:
                cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [template])
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
        or app in _UNSQUASHED
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
# Apps with one migration of their own, nothing to squash.
_UNSQUASHED = {"demo", "showback"}
