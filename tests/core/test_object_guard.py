"""The one guard of object views (apps/core/guard.py, apps/core/crud.py): an object out of
the reader's scope answers 404 whatever the role, as a missing one does; in scope without
the permission, 403; and the object is fetched once."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.pools.models import Pool
from tests.factories import PoolFactory, TeamFactory, UserFactory, WorkloadFactory


@pytest.fixture
def teams(db):
    return TeamFactory(), TeamFactory()


@pytest.fixture
def their_pool(teams, gpu_model):
    return PoolFactory(gpu_model=gpu_model, team=teams[1])


@pytest.fixture
def our_pool(teams, gpu_model):
    return PoolFactory(gpu_model=gpu_model, team=teams[0])


def _pool_queries(queries) -> list[str]:
    return [
        query["sql"]
        for query in queries
        if query["sql"].startswith("SELECT") and 'FROM "pools_pool"' in query["sql"]
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["lead", "reader"])
@pytest.mark.parametrize("action", ["pool_detail", "pool_edit", "pool_delete"])
def test_an_object_out_of_scope_is_a_404_whatever_the_role(client, teams, their_pool, role, action):
    client.force_login(UserFactory(role=role, teams=[teams[0]]))
    response = client.get(reverse(f"pools:{action}", kwargs={"slug": their_pool.slug}))
    assert response.status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["pool_edit", "pool_delete"])
def test_an_object_in_scope_without_the_permission_is_a_403(client, teams, our_pool, action):
    client.force_login(UserFactory(role="reader", teams=[teams[0]]))
    response = client.get(reverse(f"pools:{action}", kwargs={"slug": our_pool.slug}))
    assert response.status_code == 403


@pytest.mark.django_db
def test_a_post_out_of_scope_is_a_404_and_changes_nothing(client, teams, their_pool):
    client.force_login(UserFactory(role="lead", teams=[teams[0]]))
    response = client.post(reverse("pools:pool_archive", kwargs={"slug": their_pool.slug}))
    assert response.status_code == 404
    their_pool.refresh_from_db()
    assert their_pool.archived_at is None


@pytest.mark.django_db
def test_a_missing_object_answers_as_one_out_of_scope(client, teams):
    client.force_login(UserFactory(role="reader", teams=[teams[0]]))
    assert client.get(reverse("pools:pool_edit", kwargs={"slug": "nowhere"})).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url_name", "status"),
    [("pools:pool_edit", 200), ("pools:pool_delete", 200), ("pools:pool_edit", 403)],
)
def test_the_guard_fetches_the_object_once(client, teams, our_pool, url_name, status):
    role = "lead" if status == 200 else "reader"
    client.force_login(UserFactory(role=role, teams=[teams[0]]))
    url = reverse(url_name, kwargs={"slug": our_pool.slug})
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == status
    fetches = [sql for sql in _pool_queries(captured.captured_queries) if "slug" in sql]
    assert len(fetches) == 1, fetches


@pytest.mark.django_db
def test_a_guarded_fetch_is_one_query(rf, our_pool, django_assert_num_queries):
    from apps.core.guard import guarded_object

    request = rf.get("/")
    request.user = UserFactory(role="admin")
    with django_assert_num_queries(1):
        obj = guarded_object(
            request, Pool.objects.all(), {"slug": our_pool.slug}, permission="pools.change_pool"
        )
    assert obj == our_pool


@pytest.mark.django_db
def test_a_nested_object_is_a_404_when_its_parent_is_out_of_scope(client, teams, their_pool):
    """A backup policy is created under its workload: the workload's scope decides."""
    workload = WorkloadFactory(pool=their_pool, team=teams[1])
    client.force_login(UserFactory(role="ops", teams=[teams[0]]))
    url = reverse("backups:policy_create", kwargs={"slug": workload.slug})
    assert client.get(url).status_code == 404


@pytest.mark.django_db
def test_superuser_required_is_one_decorator(client, teams):
    from apps.accounts import views as accounts_views
    from apps.core.guard import superuser_required
    from apps.showback import views as showback_views

    assert not hasattr(showback_views, "superuser_required")
    assert accounts_views.superuser_required is superuser_required
    client.force_login(UserFactory(role="ops", teams=[teams[0]]))
    assert client.get(reverse("accounts:group_mapping_create")).status_code == 403
    assert client.get(reverse("showback:team_create")).status_code == 403
