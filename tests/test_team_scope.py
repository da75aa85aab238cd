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

from apps.telemetry.models import HostnameRule, ImportRun
from tests.factories import PullSourceFactory, TeamFactory, UserFactory
from tests.test_urls_roles import (
    API_ROUTES,
    ROUTES,
    _expected_from_roles_table,
    _pilot_result,
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
    "pilot_result",
    "pilot_result_api",
    "team",
    "budget",
}
# URL namespaces (apps) whose views filter by scope.
SCOPED_APPS: set[str] = {
    "pools",
    "backups",
    "telemetry",
    "alerts",
    "reports",
    "dashboard",
    "procurement",
    "training",
    "pilots",
    "showback",
}
# API route names of tests/test_urls_roles.py whose app filters by scope.
SCOPED_API_PREFIXES: set[str] = {
    "pool",
    "workload",
    "backup",
    "restore",
    "pull",
    "alert",
    "silence",
    "interruption",
    "scenario",
    "pilot",
    "team",
    "budget",
}

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


# List page or API list → how the walk's team-A object appears in it: its name on a page,
# its slug in the API's JSON. The lists of backups and telemetry show the objects
# ``team_a_records`` builds on the walk's pool and workload.
LISTS_NAMING_THE_POOL = {
    "pools:pool_list": "name",
    "pools:workload_list": "name",  # the workload's row names its pool
    "telemetry:import_list": "name",
    "telemetry:rule_list": "name",
    "telemetry:pull_source_list": "name",
    "telemetry:reconciliation": "name",  # the pool filter's choices
    "reports:report": "name",  # the pool filter's choices
    "pool-list": "slug",
    "pull-source-list": "slug",
}
LISTS_NAMING_THE_WORKLOAD = {
    "pools:workload_list": "name",
    "backups:policy_list": "name",
    "workload-list": "slug",
    "backup-policy-list": "slug",
    "backup-version-list": "slug",
    "restore-drill-list": "slug",
    "pilot-list": "slug",
}


@pytest.fixture
def team_a_records(pool, workload):
    """A backup policy, version and drill and a pilot result of the walk's workload; an
    import, a hostname rule and a pull source of its pool: each lists under team A's
    objects."""
    from tests.backups.factories import make_drill, make_policy, make_version

    policy = make_policy(workload)
    make_drill(policy, make_version(workload))
    ImportRun.objects.create(
        kind="gpu", format="dcgm", source="upload", filename="team.prom", pool=pool
    )
    HostnameRule.objects.create(pool=pool, hostname_pattern="team-a-*")
    PullSourceFactory(name="team-a-source", pool=pool)
    _pilot_result(workload)


def _list_pairs():
    return [
        (name, kind)
        for kind, lists in (
            ("pool", LISTS_NAMING_THE_POOL),
            ("workload", LISTS_NAMING_THE_WORKLOAD),
        )
        for name in sorted(lists)
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "kind"), _list_pairs())
def test_lists_name_team_objects_only_to_the_team(
    client, name, kind, pool, workload, teams, team_a_records
):
    team_a, team_b = teams
    lists = LISTS_NAMING_THE_POOL if kind == "pool" else LISTS_NAMING_THE_WORKLOAD
    shown = getattr(pool if kind == "pool" else workload, lists[name])
    url = reverse(name)
    client.force_login(UserFactory(teams=[team_a]))
    assert shown in client.get(url).content.decode(), url
    client.force_login(UserFactory(teams=[team_b]))
    response = client.get(url)
    assert response.status_code == 200
    assert shown not in response.content.decode(), url
    client.force_login(UserFactory(role="finance"))
    assert shown in client.get(url).content.decode(), url


def test_every_app_with_team_owned_objects_is_walked():
    """An app whose URLs or API routes name a team's object is walked: its views answer
    404 out of scope."""
    apps_with_team_objects = {
        _app_of(name) for name, (kind, _rule) in ROUTES.items() if kind in TEAM_OWNED_KINDS
    }
    assert apps_with_team_objects - SCOPED_APPS == set()
    api_prefixes = {
        name.split("-", 1)[0] for name, kind in API_ROUTES.items() if kind in TEAM_OWNED_KINDS
    }
    assert api_prefixes - SCOPED_API_PREFIXES == set()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["procurement:scenario_list", "scenario-list"])
def test_scenario_lists_name_team_scenarios_only_to_the_team(client, name, pool, teams):
    from apps.procurement.models import Scenario

    team_a, team_b = teams
    Scenario.objects.create(
        name="Team A purchase",
        slug="team-a-purchase",
        demand_source="measured_pool",
        demand_pool=pool,
        team=team_a,
    )
    shown = "Team A purchase" if ":" in name else "team-a-purchase"
    url = reverse(name)
    client.force_login(UserFactory(teams=[team_a]))
    assert shown in client.get(url).content.decode(), url
    client.force_login(UserFactory(teams=[team_b]))
    response = client.get(url)
    assert response.status_code == 200
    assert shown not in response.content.decode(), url
    client.force_login(UserFactory(role="finance"))
    assert shown in client.get(url).content.decode(), url
