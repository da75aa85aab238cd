"""Scenarios belong to a team or are shared, as pools do: the form offers the user's own
teams and the pools and workloads in their scope, the API names the team by slug, and
another team's scenario, its options and its exports answer 404."""

import pytest
from django.urls import reverse

from apps.procurement.forms import ScenarioForm
from apps.procurement.models import ComparisonExport
from tests.factories import PoolFactory, ScenarioFactory, TeamFactory, UserFactory


@pytest.fixture
def teams(db):
    return TeamFactory(name="Vision team"), TeamFactory(name="Speech team")


@pytest.mark.django_db
def test_the_form_offers_the_users_teams_and_the_pools_in_their_scope(teams):
    vision, speech = teams
    own_pool = PoolFactory(name="Vision pool", team=vision)
    other_pool = PoolFactory(name="Speech pool", team=speech)
    shared_pool = PoolFactory(name="Shared pool")
    form = ScenarioForm(user=UserFactory(role="procurement", teams=[vision]))
    assert list(form.fields["team"].queryset) == [vision]
    assert not form.fields["team"].required  # none: a shared scenario, as a pool may be
    offered = set(form.fields["demand_pool"].queryset)
    assert {own_pool, shared_pool} <= offered
    assert other_pool not in offered
    everything = ScenarioForm(user=UserFactory(role="finance"))
    assert set(everything.fields["team"].queryset) == {vision, speech}


@pytest.mark.django_db
def test_a_team_scenario_is_read_by_its_team_only(client, teams):
    vision, speech = teams
    scenario = ScenarioFactory(name="Vision purchase", team=vision, demand_pool__team=vision)
    export = ComparisonExport.objects.create(scenario=scenario, format="csv")
    detail = reverse("procurement:scenario_detail", kwargs={"slug": scenario.slug})
    api = reverse("scenario-detail", kwargs={"slug": scenario.slug})
    export_url = reverse("procurement:export_detail", kwargs={"pk": export.pk})

    client.force_login(UserFactory(teams=[vision]))
    page = client.get(detail)
    assert page.status_code == 200
    assert "Vision team" in page.content.decode()  # the demand card names the team
    response = client.get(api)
    assert response.status_code == 200
    assert response.json()["team"] == vision.slug
    assert client.get(export_url).status_code == 200

    client.force_login(UserFactory(teams=[speech]))
    for url in (detail, api, export_url):
        assert client.get(url).status_code == 404, url

    client.force_login(UserFactory(role="finance"))
    assert client.get(api).json()["team"] == vision.slug


@pytest.mark.django_db
def test_a_shared_scenario_is_read_by_everyone(client, teams):
    scenario = ScenarioFactory(name="Shared purchase")
    client.force_login(UserFactory(teams=[teams[1]]))
    response = client.get(reverse("scenario-detail", kwargs={"slug": scenario.slug}))
    assert response.status_code == 200
    assert response.json()["team"] is None
