"""The migrations that introduce clusters put every pool and pull source that existed
before them into the ``default`` cluster."""

import pytest
from django.db.migrations.executor import MigrationExecutor

from tests.old_graph import scratch_database


@pytest.fixture
def scratch(django_db_blocker):
    """Migrations move a copy of the migrated database, never the test database."""
    with scratch_database(django_db_blocker) as database:
        yield database


@pytest.mark.django_db(transaction=True)
def test_existing_pools_and_pull_sources_join_the_default_cluster(scratch):
    executor = MigrationExecutor(scratch)
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate([("clusters", None)])
    executor = MigrationExecutor(scratch)
    graph = executor.loader.graph
    applied = [key for key in executor.loader.applied_migrations if key in graph.nodes]
    state = executor.loader.project_state(applied)
    pool_model = state.apps.get_model("pools", "Pool")
    gpu_model = state.apps.get_model("catalog", "GpuModel").objects.get(slug="h100-sxm")
    pool = pool_model.objects.create(
        name="Before clusters",
        slug="before-clusters",
        purpose="training",
        deployment="cloud_on_demand",
        gpu_model=gpu_model,
        gpu_count=8,
        in_service_from="2026-01-01T00:00:00Z",
    )
    source = state.apps.get_model("telemetry", "PullSource").objects.create(
        name="Before clusters", slug="before-clusters", kind="prometheus", url="http://prom:9090"
    )

    executor.loader.build_graph()
    executor.migrate(latest)

    with scratch.cursor() as cursor:
        cursor.execute("SELECT id, name FROM clusters_cluster WHERE slug = 'default'")
        ((default_id, name),) = cursor.fetchall()
        cursor.execute("SELECT cluster_id FROM pools_pool WHERE id = %s", [pool.pk])
        assert cursor.fetchone() == (default_id,)
        cursor.execute("SELECT cluster_id FROM telemetry_pullsource WHERE id = %s", [source.pk])
        assert cursor.fetchone() == (default_id,)
    assert name == "default"
