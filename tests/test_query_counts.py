"""Query-count guards on the hottest pages and endpoints: each is fetched with a small
and a ten times larger fleet, and must run the same number of queries.

Guards kept beside their app's tests: the Overview and the cost report
(tests/reports/test_views.py), the pool list (tests/reports/test_pool_list_columns.py,
tests/pools/test_pool_views.py), the upload history (tests/telemetry/test_views.py),
budgets, the catalog, backups and training imports. This module holds the others, one
test each; their figures are computed on every count (the reports cache is bumped), not
read from the cache.
"""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.pools.models import Interruption
from apps.reports.cache import bump_reports_version
from tests.alerts.factories import make_alert, make_rule
from tests.factories import (
    PoolFactory,
    ScenarioFactory,
    ScenarioOptionFactory,
    TeamFactory,
    UserFactory,
    WorkloadFactory,
)
from tests.reports.test_views import _make_pools

pytestmark = pytest.mark.django_db

SMALL, LARGE = 3, 30


def _queries(client, url, **headers):
    bump_reports_version()  # the figures computed, not a cache hit
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, headers=headers)
    assert response.status_code == 200, (url, response.status_code)
    return len(captured.captured_queries)


def _flat(client, url, grow, **headers):
    """The count with SMALL rows, then with LARGE: equal."""
    grow(0, SMALL)
    small = _queries(client, url, **headers)
    grow(SMALL, LARGE)
    large = _queries(client, url, **headers)
    assert large == small, f"{url}: {small} queries with {SMALL} rows, {large} with {LARGE}"
    return small


@pytest.fixture
def reader(client, make_user):
    client.force_login(make_user("reader"))
    return client


@pytest.fixture
def finance(client, make_user):
    client.force_login(make_user("finance"))
    return client


def _pools(gpu_model):
    def grow(first, last):
        _make_pools(gpu_model, last - first, first=first, hours=24)

    return grow


def test_pool_detail(reader, pool):
    """Workloads and their interruptions on one pool."""
    now = timezone.now()

    def grow(first, last):
        for index in range(first, last):
            workload = WorkloadFactory(pool=pool, gpu_count=1)
            Interruption.objects.create(
                workload=workload,
                occurred_at=now - timedelta(hours=index + 1),
                cause="hardware",
                restart_minutes=10,
            )

    _flat(reader, reverse("pools:pool_detail", args=[pool.slug]), grow)


def test_workload_list(reader, pool):
    def grow(first, last):
        for _ in range(first, last):
            WorkloadFactory(pool=pool, gpu_count=1)

    _flat(reader, reverse("pools:workload_list"), grow)


def test_showback_page(finance, gpu_model):
    """Teams, each with a pool of its own."""

    def grow(first, last):
        for index in range(first, last):
            team = TeamFactory()
            PoolFactory(team=team, gpu_model=gpu_model, name=f"Team pool {index}")

    _flat(finance, reverse("showback:showback"), grow)


def test_alert_list(reader, pool):
    rule = make_rule()

    def grow(first, last):
        for _index in range(first, last):
            make_alert(rule, PoolFactory(gpu_model=pool.gpu_model))

    _flat(reader, reverse("alerts:alert_list"), grow)


def test_procurement_scenario_list(reader, pool):
    def grow(first, last):
        for _ in range(first, last):
            ScenarioOptionFactory(scenario=ScenarioFactory(demand_pool=pool))

    _flat(reader, reverse("procurement:scenario_list"), grow)


def test_api_pool_list(reader, gpu_model):
    _flat(reader, "/api/v1/pools/", _pools(gpu_model))


def test_api_workload_list(reader, pool):
    def grow(first, last):
        for _ in range(first, last):
            WorkloadFactory(pool=pool, gpu_count=1)

    _flat(reader, "/api/v1/workloads/", grow)


def test_api_cost_report(reader, gpu_model):
    _flat(reader, "/api/v1/reports/cost/", _pools(gpu_model))


def test_api_showback(finance, gpu_model):
    def grow(first, last):
        for index in range(first, last):
            team = TeamFactory()
            PoolFactory(team=team, gpu_model=gpu_model, name=f"Team pool {index}")

    _flat(finance, "/api/v1/showback/", grow)


def test_api_alert_list(reader, pool):
    rule = make_rule()

    def grow(first, last):
        for _index in range(first, last):
            make_alert(rule, PoolFactory(gpu_model=pool.gpu_model))

    _flat(reader, "/api/v1/alerts/", grow)


def test_overview_for_a_team_member(client, make_user, gpu_model):
    """The Overview as someone who sees their team's pools and the shared ones: the scope
    is one filter, not one query per pool."""
    team = TeamFactory()
    client.force_login(UserFactory(role="lead", teams=[team]))

    def grow(first, last):
        for index in range(first, last):
            PoolFactory(
                team=team if index % 2 else None,
                gpu_model=gpu_model,
                on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
            )

    _flat(client, reverse("dashboard:overview"), grow)
