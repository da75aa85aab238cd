"""Who sees what: a team's objects are seen by its members and the fleet-wide roles, a
shared object (no team) by everyone. Each expectation is written out by hand."""

import pytest

from apps.accounts.scope import Scope, scope_of
from apps.pools.models import Pool, Workload
from tests.factories import PoolFactory, TeamFactory, UserFactory, WorkloadFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet():
    vision, speech = TeamFactory(name="Vision"), TeamFactory(name="Speech")
    pools = {
        "vision": PoolFactory(name="vision-pool", team=vision),
        "speech": PoolFactory(name="speech-pool", team=speech),
        "shared": PoolFactory(name="shared-pool"),
    }
    workloads = {
        "vision-own": WorkloadFactory(name="vision-own", pool=pools["vision"]),
        "speech-own": WorkloadFactory(name="speech-own", pool=pools["speech"]),
        "vision-on-shared": WorkloadFactory(
            name="vision-on-shared", pool=pools["shared"], team=vision
        ),
        "speech-on-shared": WorkloadFactory(
            name="speech-on-shared", pool=pools["shared"], team=speech
        ),
        "shared": WorkloadFactory(name="shared-wl", pool=pools["shared"]),
    }
    return vision, speech, pools, workloads


def visible(user):
    scope = scope_of(user)
    return (
        sorted(Pool.objects.in_scope(scope).values_list("name", flat=True)),
        sorted(Workload.objects.in_scope(scope).values_list("name", flat=True)),
    )


def test_a_team_member_sees_the_team_and_the_shared_objects(fleet):
    vision, _speech, _pools, _workloads = fleet
    user = UserFactory(role="lead", teams=[vision])
    assert visible(user) == (
        ["shared-pool", "vision-pool"],
        ["shared-wl", "vision-on-shared", "vision-own"],
    )


def test_a_user_in_no_team_sees_the_shared_objects_only(fleet):
    assert visible(UserFactory(role="ops")) == (["shared-pool"], ["shared-wl"])


@pytest.mark.parametrize("role", ["finance", "admin"])
def test_fleet_wide_roles_see_everything(fleet, role):
    pools, workloads = visible(UserFactory(role=role))
    assert len(pools) == 3 and len(workloads) == 5


def test_a_member_of_two_teams_sees_both(fleet):
    vision, speech, _pools, _workloads = fleet
    pools, workloads = visible(UserFactory(teams=[vision, speech]))
    assert len(pools) == 3 and len(workloads) == 5


def test_scope_keys_round_trip_and_name_equal_scopes_equally():
    assert Scope.from_cache_key("all") == Scope(everything=True)
    scope = Scope(everything=False, team_ids=frozenset({7, 3}))
    assert scope.cache_key == "t3.7"
    assert Scope.from_cache_key(scope.cache_key) == scope
    assert Scope.from_cache_key("t") == Scope(everything=False)
    with pytest.raises(ValueError):
        Scope.from_cache_key("everything")


def test_a_workload_on_another_teams_pool_is_refused(fleet):
    from django.core.exceptions import ValidationError

    _vision, speech, pools, _workloads = fleet
    workload = WorkloadFactory.build(name="x", slug="x", pool=pools["vision"], team=speech)
    with pytest.raises(ValidationError) as error:
        workload.clean()
    assert "team" in error.value.message_dict
