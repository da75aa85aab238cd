"""The URL × role walk, again, across teams: the walk's pool belongs to team A, and so
does everything built on it (its workload, their backups, imports, sources, rules,
interruptions, scenarios). A member of team A holding a role gets exactly what
tests/test_urls_roles.py expects; a member of team B holding the same role gets 404 from
every page, fragment and API detail of those objects, as NetBox answers for another
tenant's object, and their lists do not name them. Finance and superusers see both.

Each app joins the walk (``SCOPED_APPS``) once its views, fragments and API filter by
scope; ``test_every_app_with_team_owned_objects_is_walked`` fails while one has not.
"""

import pytest
from django.urls import reverse

from tests.factories import TeamFactory, UserFactory
from tests.test_urls_roles import (
    API_ROUTES,
    ROUTES,
    _expected_from_roles_table,
    _url,
)

# kwargs kinds of tests/test_urls_roles.py whose object belongs to the walk pool's team.
TEAM_OWNED_KINDS = {
    "pool",
    "workload",
    "import_run",
    "hostname_rule",
    "pull_source",
    "interruption",
    "backup_policy",
    "backup_policy_api",
    "backup_version",
    "restore_drill",
    "scenario",
    "scenario_option",
    "export",
    "alert_rule",
    "alert_channel",
    "alert",
    "silence",
}
# URL namespaces (apps) whose views filter by scope.
SCOPED_APPS: set[str] = {"alerts"}
# API route names of tests/test_urls_roles.py whose app filters by scope.
SCOPED_API_PREFIXES: set[str] = {"alert", "silence"}

ROLE_KEYS = ["lead", "ops", "procurement", "reader"]


def _app_of(name: str) -> str:
    return name.split(":", 1)[0]


def _team_owned_routes():
    return sorted(
        name
        for name, (kind, _rule) in ROUTES.items()
        if kind in TEAM_OWNED_KINDS and _app_of(name) in SCOPED_APPS
    )


def _team_owned_api_routes():
    return sorted(
        name
        for name, kind in API_ROUTES.items()
        if kind in TEAM_OWNED_KINDS and name.split("-", 1)[0] in SCOPED_API_PREFIXES
    )


@pytest.fixture
def teams(pool, workload):
    """Team A owns the walk's pool (and so its workload); team B owns nothing here."""
    team_a, team_b = TeamFactory(name="Team A"), TeamFactory(name="Team B")
    pool.team = team_a
    pool.save(update_fields=["team"])
    return team_a, team_b


@pytest.mark.django_db
@pytest.mark.parametrize("role_key", ROLE_KEYS)
@pytest.mark.parametrize("name", _team_owned_routes())
def test_in_scope_as_the_roles_say_out_of_scope_404(client, name, role_key, pool, workload, teams):
    team_a, team_b = teams
    kind, rule = ROUTES[name]
    insider = UserFactory(role=role_key, teams=[team_a])
    outsider = UserFactory(role=role_key, teams=[team_b])
    url = _url(name, kind, pool=pool, workload=workload, user=insider)
    allowed = _expected_from_roles_table(role_key, rule)

    client.force_login(insider)
    assert client.get(url).status_code == (200 if allowed else 403), url
    fragment = client.get(url, headers={"HX-Request": "true"})
    assert fragment.status_code == (200 if allowed else 403), url

    client.force_login(outsider)
    assert client.get(url).status_code == 404, url
    assert client.get(url, headers={"HX-Request": "true"}).status_code == 404, url


@pytest.mark.django_db
@pytest.mark.parametrize("role_key", ["finance", "admin"])
@pytest.mark.parametrize("name", _team_owned_routes())
def test_fleet_wide_roles_read_every_team(client, name, role_key, pool, workload, teams):
    kind, rule = ROUTES[name]
    user = UserFactory(role=role_key)
    url = _url(name, kind, pool=pool, workload=workload, user=user)
    client.force_login(user)
    allowed = role_key == "admin" or rule == "everyone"
    assert client.get(url).status_code == (200 if allowed else 403), url


@pytest.mark.django_db
@pytest.mark.parametrize("name", _team_owned_api_routes())
def test_api_details_answer_404_out_of_scope(client, name, pool, workload, teams):
    team_a, team_b = teams
    url = _url(name, API_ROUTES[name], pool=pool, workload=workload, user=None)
    client.force_login(UserFactory(teams=[team_a]))
    assert client.get(url).status_code == 200, url
    client.force_login(UserFactory(teams=[team_b]))
    assert client.get(url).status_code == 404, url
    client.force_login(UserFactory(role="finance"))
    assert client.get(url).status_code == 200, url


# List page or API list → how the walk's team-A object appears in it.
LISTS_NAMING_THE_POOL = {}
LISTS_NAMING_THE_WORKLOAD = {}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name", sorted(set(LISTS_NAMING_THE_POOL) | set(LISTS_NAMING_THE_WORKLOAD))
)
def test_lists_name_team_objects_only_to_the_team(client, name, pool, workload, teams):
    team_a, team_b = teams
    shown = pool.name if name in LISTS_NAMING_THE_POOL else workload.name
    url = reverse(name)
    client.force_login(UserFactory(teams=[team_a]))
    assert shown in client.get(url).content.decode(), url
    client.force_login(UserFactory(teams=[team_b]))
    response = client.get(url)
    assert response.status_code == 200
    assert shown not in response.content.decode(), url
