"""Pools and workloads by team: what a team member lists, totals, opens, chooses, edits
and writes through the API, each expectation written out from the fleet below.

Vision owns one pool, Speech another; a third pool is shared and runs a workload of
each team and one of none. A Speech lead sees the Speech and shared pools, the Speech
workloads and the shared one, and nothing of Vision's answers anything but 404.
"""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.accounts.models import ApiToken
from apps.pools.models import Pool, Workload
from tests.factories import PoolFactory, TeamFactory, UserFactory, WorkloadFactory
from tests.test_urls_roles import _form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet():
    vision, speech = TeamFactory(name="Vision"), TeamFactory(name="Speech")
    pools = {
        "vision": PoolFactory(
            name="Vision pool", team=vision, gpu_count=64, on_demand_price_per_gpu_hour_usd="3.10"
        ),
        "speech": PoolFactory(
            name="Speech pool", team=speech, gpu_count=24, on_demand_price_per_gpu_hour_usd="2.50"
        ),
        "shared": PoolFactory(
            name="Shared pool", gpu_count=16, on_demand_price_per_gpu_hour_usd="1.75"
        ),
    }
    workloads = {
        "vision-own": WorkloadFactory(name="Vision own", pool=pools["vision"]),
        "speech-own": WorkloadFactory(name="Speech own", pool=pools["speech"]),
        "vision-on-shared": WorkloadFactory(
            name="Vision on shared", pool=pools["shared"], team=vision
        ),
        "speech-on-shared": WorkloadFactory(
            name="Speech on shared", pool=pools["shared"], team=speech
        ),
        "shared": WorkloadFactory(name="Shared workload", pool=pools["shared"]),
    }
    return {"vision": vision, "speech": speech, "pools": pools, "workloads": workloads}


@pytest.fixture
def speech_lead(client, fleet):
    user = UserFactory(role="lead", teams=[fleet["speech"]])
    client.force_login(user)
    return user


def _api_headers(user, read_only=False):
    _, plaintext = ApiToken.issue(
        user=user, description="test", lifetime=timedelta(hours=1), read_only=read_only
    )
    return {"Authorization": f"Bearer {plaintext}"}


# --- Lists and totals -------------------------------------------------------------------


def test_the_pool_list_and_its_totals_hold_the_team_and_shared_pools_only(client, speech_lead):
    response = client.get(reverse("pools:pool_list"))
    assert [pool.name for pool in response.context["page"]] == ["Shared pool", "Speech pool"]
    totals = response.context["totals"]
    # By hand: Speech 24 GPUs × $2.50 = $60.00/h, shared 16 × $1.75 = $28.00/h.
    assert totals["pool_count"] == 2
    assert totals["gpu_total"] == 24 + 16
    assert totals["price_per_hour_usd_total"] == Decimal("60.00") + Decimal("28.00")
    assert "Vision pool" not in response.content.decode()


def test_the_pool_lists_workload_counts_count_the_workloads_in_scope(client, speech_lead):
    page = client.get(reverse("pools:pool_list")).context["page"]
    counts = {pool.name: pool.workload_count for pool in page}
    # The shared pool runs three workloads; the Vision one is not the Speech lead's.
    assert counts == {"Shared pool": 2, "Speech pool": 1}


def test_finance_lists_every_pool_and_totals_them_all(client, fleet):
    client.force_login(UserFactory(role="finance"))
    totals = client.get(reverse("pools:pool_list")).context["totals"]
    assert totals["gpu_total"] == 64 + 24 + 16
    assert totals["price_per_hour_usd_total"] == Decimal("198.40") + Decimal("60") + Decimal("28")


def test_the_workload_list_holds_the_team_and_shared_workloads(client, speech_lead):
    page = client.get(reverse("pools:workload_list")).context["page"]
    assert sorted(workload.name for workload in page) == [
        "Shared workload",
        "Speech on shared",
        "Speech own",
    ]


@pytest.mark.parametrize(
    ("team", "pools", "workloads"),
    [
        ("speech", ["Speech pool"], ["Speech on shared", "Speech own"]),
        ("shared", ["Shared pool"], ["Shared workload"]),
        ("vision", [], []),  # not one of the lead's teams: nothing, as an unknown slug
    ],
)
def test_the_team_filter_of_the_lists(client, fleet, speech_lead, team, pools, workloads):
    slug = fleet[team].slug if team != "shared" else "shared"
    pool_page = client.get(reverse("pools:pool_list"), {"team": slug}).context["page"]
    workload_page = client.get(reverse("pools:workload_list"), {"team": slug}).context["page"]
    if team == "vision":
        # The page's choices are the lead's teams: Vision's slug is refused, not applied.
        form = client.get(reverse("pools:pool_list"), {"team": slug}).context["filter"].form
        assert "team" in form.errors
        assert [pool.name for pool in pool_page] == ["Shared pool", "Speech pool"]
        return
    assert [pool.name for pool in pool_page] == pools
    assert sorted(workload.name for workload in workload_page) == workloads


def test_the_team_filter_offers_the_users_teams_and_shared(client, fleet, speech_lead):
    form = client.get(reverse("pools:pool_list")).context["filter"].form
    assert [value for value, _label in form.fields["team"].choices] == ["", "shared", "speech"]


def test_the_pool_list_queries_do_not_grow_with_teams_and_pools(client, fleet, gpu_model):
    from apps.reports.cache import bump_reports_version

    member = UserFactory(role="lead", teams=[fleet["speech"], fleet["vision"]])
    client.force_login(member)

    def count_queries():
        bump_reports_version()
        with CaptureQueriesContext(connection) as context:
            assert client.get(reverse("pools:pool_list")).status_code == 200
        return len(context)

    before = count_queries()
    for index in range(6):
        team = TeamFactory()
        team.members.add(member)
        PoolFactory(name=f"Extra {index}", gpu_model=gpu_model, team=team)
    member = type(member).objects.get(pk=member.pk)  # a new request: its scope is read anew
    client.force_login(member)
    assert count_queries() == before


# --- Pages ------------------------------------------------------------------------------


def test_the_pool_page_names_the_team_and_lists_only_workloads_in_scope(client, fleet, speech_lead):
    shared = client.get(reverse("pools:pool_detail", args=[fleet["pools"]["shared"].slug]))
    html = shared.content.decode()
    assert '<dd class="col-7" id="pool-team">Shared</dd>' in html
    assert "Speech on shared" in html and "Shared workload" in html
    assert "Vision on shared" not in html
    own = client.get(reverse("pools:pool_detail", args=[fleet["pools"]["speech"].slug]))
    assert '<dd class="col-7" id="pool-team">Speech</dd>' in own.content.decode()


def test_the_workload_page_names_its_team_or_its_pools(client, fleet, speech_lead):
    def team_cell(key):
        url = reverse("pools:workload_detail", args=[fleet["workloads"][key].slug])
        html = client.get(url).content.decode()
        return html.split('id="workload-team">', 1)[1].split("</dd>", 1)[0]

    assert team_cell("speech-on-shared") == "Speech"
    assert team_cell("speech-own") == "Speech (the pool's team)"
    assert team_cell("shared") == "Shared"


def test_the_calculator_does_not_start_from_another_teams_workload(client, fleet, speech_lead):
    vision = fleet["workloads"]["vision-own"]
    vision.gpu_count, vision.data_parallel = 16, 16
    vision.save()
    form = client.get(reverse("pools:calculator"), {"workload": vision.slug}).context["form"]
    assert form["gpus"].value() in (None, "")  # the defaults, not Vision's 16 GPUs


def test_the_delete_page_of_a_shared_pool_counts_other_teams_workloads_without_names(
    client, fleet, speech_lead
):
    url = reverse("pools:pool_delete", args=[fleet["pools"]["shared"].slug])
    html = client.get(url).content.decode()
    assert "Speech on shared" in html and "Shared workload" in html
    assert "Vision on shared" not in html
    assert "1 workload of another team" in html


# --- Forms ------------------------------------------------------------------------------


def test_the_pool_forms_team_choices_are_the_users_teams_and_none(client, fleet, speech_lead):
    form = client.get(reverse("pools:pool_create")).context["form"]
    choices = [(str(value), label) for value, label in form.fields["team"].choices]
    assert choices == [("", "Shared (no team)"), (str(fleet["speech"].pk), "Speech")]
    # A lead of one team creates for it unless they choose otherwise.
    assert form["team"].value() == fleet["speech"].pk


def test_a_superuser_chooses_any_team(client, fleet):
    client.force_login(UserFactory(role="admin"))
    form = client.get(reverse("pools:pool_create")).context["form"]
    labels = [label for _value, label in form.fields["team"].choices]
    assert labels == ["Shared (no team)", "Speech", "Vision"]


def test_the_workload_form_offers_the_pools_in_scope_and_refuses_another_teams(
    client, fleet, speech_lead
):
    url = reverse("pools:workload_create")
    form = client.get(url).context["form"]
    assert sorted(pool.name for pool in form.fields["pool"].queryset) == [
        "Shared pool",
        "Speech pool",
    ]
    data = {
        **_form_data(form),
        "name": "Posted workload",
        "slug": "posted-workload",
        "kind": "full_fine_tune",
        "pool": str(fleet["pools"]["vision"].pk),
        "gpu_count": "8",
        "data_parallel": "8",
    }
    response = client.post(url, data)
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "Select a valid choice" in errors["pool"][0]
    assert not Workload.objects.filter(slug="posted-workload").exists()


def test_an_archived_pool_of_another_team_is_not_named(client, fleet, speech_lead):
    vision = fleet["pools"]["vision"]
    Pool.objects.filter(pk=vision.pk).update(archived_at="2026-01-01T00:00Z")
    form = client.get(reverse("pools:workload_create")).context["form"]
    data = {**_form_data(form), "name": "X", "slug": "x", "pool": str(vision.pk)}
    errors = client.post(reverse("pools:workload_create"), data).context["form"].errors
    assert "Select a valid choice" in errors["pool"][0]
    assert "Vision pool" not in errors["pool"][0]


def test_a_workload_of_another_team_than_its_pools_is_refused_on_the_team_field(client, fleet):
    both = UserFactory(role="lead", teams=[fleet["speech"], fleet["vision"]])
    client.force_login(both)
    workload = fleet["workloads"]["speech-own"]
    url = reverse("pools:workload_edit", args=[workload.slug])
    form = client.get(url).context["form"]
    response = client.post(url, {**_form_data(form), "team": str(fleet["vision"].pk)})
    assert response.status_code == 200
    assert response.context["form"].errors["team"] == [
        "The pool belongs to team Speech: a workload on it is that team's or has no team."
    ]
    workload.refresh_from_db()
    assert workload.team is None


def test_a_pool_cannot_change_team_under_another_teams_workloads(client, fleet, speech_lead):
    shared = fleet["pools"]["shared"]
    url = reverse("pools:pool_edit", args=[shared.slug])
    form = client.get(url).context["form"]
    response = client.post(url, {**_form_data(form), "team": str(fleet["speech"].pk)})
    assert response.context["form"].errors["team"] == [
        "1 workload on this pool belongs to another team: a pool's workloads are its team's "
        "or have no team. Move it first."
    ]
    shared.refresh_from_db()
    assert shared.team is None


def test_a_lead_gives_a_shared_pool_to_their_team_and_the_history_says_so(client, fleet):
    lead = UserFactory(role="lead", teams=[fleet["vision"]])
    client.force_login(lead)
    spare = PoolFactory(name="Spare pool")
    url = reverse("pools:pool_edit", args=[spare.slug])
    form = client.get(url).context["form"]
    response = client.post(url, {**_form_data(form), "team": str(fleet["vision"].pk)})
    assert response.status_code == 302, response.context["form"].errors
    spare.refresh_from_db()
    assert spare.team == fleet["vision"]
    history = client.get(reverse("pools:pool_detail", args=[spare.slug])).context["history"]
    change = next(c for c in history[0].changes if c.label == "Team")
    assert (change.old, change.new) == ("—", "Vision")


def test_a_workloads_history_records_its_team(client, fleet, speech_lead):
    workload = fleet["workloads"]["shared"]
    url = reverse("pools:workload_edit", args=[workload.slug])
    form = client.get(url).context["form"]
    assert (
        client.post(url, {**_form_data(form), "team": str(fleet["speech"].pk)}).status_code == 302
    )
    history = client.get(reverse("pools:workload_detail", args=[workload.slug])).context["history"]
    change = next(c for c in history[0].changes if c.label == "Team")
    assert (change.old, change.new) == ("—", "Speech")


# --- Writes out of scope ----------------------------------------------------------------


def _pool_state(pool):
    return Pool.objects.filter(pk=pool.pk).values("name", "description", "archived_at").first()


@pytest.mark.parametrize("action", ["pool_edit", "pool_delete", "pool_archive", "pool_restore"])
def test_another_teams_lead_gets_404_and_the_pool_is_unchanged(client, fleet, speech_lead, action):
    vision = fleet["pools"]["vision"]
    vision.workloads.all().delete()  # deletable, were it in scope
    if action == "pool_restore":
        Pool.objects.filter(pk=vision.pk).update(archived_at="2026-01-01T00:00Z")
    before = _pool_state(vision)
    url = reverse(f"pools:{action}", args=[vision.slug])
    response = client.post(url, {"name": "Taken", "description": "Taken"})
    assert response.status_code == 404
    assert _pool_state(vision) == before


@pytest.mark.parametrize(
    "action", ["workload_edit", "workload_delete", "workload_archive", "workload_restore"]
)
def test_another_teams_lead_gets_404_and_the_workload_is_unchanged(
    client, fleet, speech_lead, action
):
    for key in ("vision-own", "vision-on-shared"):
        workload = fleet["workloads"][key]
        before = Workload.objects.filter(pk=workload.pk).values().first()
        response = client.post(reverse(f"pools:{action}", args=[workload.slug]), {"name": "x"})
        assert response.status_code == 404
        assert Workload.objects.filter(pk=workload.pk).values().first() == before


# --- API --------------------------------------------------------------------------------


def test_the_api_lists_and_filters_by_team(client, fleet, speech_lead):
    headers = _api_headers(speech_lead, read_only=True)

    def slugs(path, **query):
        response = client.get(path, query, headers=headers)
        assert response.status_code == 200, response.content
        return sorted(row["slug"] for row in response.json()["results"])

    pools = fleet["pools"]
    assert slugs("/api/v1/pools/") == sorted([pools["shared"].slug, pools["speech"].slug])
    assert slugs("/api/v1/pools/", team="speech") == [pools["speech"].slug]
    assert slugs("/api/v1/pools/", team="shared") == [pools["shared"].slug]
    assert slugs("/api/v1/pools/", team="vision") == []
    assert slugs("/api/v1/pools/", team="no-such-team") == []
    workloads = fleet["workloads"]
    assert slugs("/api/v1/workloads/", team="speech") == sorted(
        [workloads["speech-own"].slug, workloads["speech-on-shared"].slug]
    )
    assert slugs("/api/v1/workloads/", team="shared") == [workloads["shared"].slug]
    detail = client.get(f"/api/v1/pools/{pools['speech'].slug}/", headers=headers).json()
    assert detail["team"] == "speech"
    shared = client.get(f"/api/v1/pools/{pools['shared'].slug}/", headers=headers).json()
    assert shared["team"] is None
    for path in (f"/api/v1/pools/{pools['vision'].slug}/", "/api/v1/workloads/vision-own/"):
        assert client.get(path, headers=headers).status_code == 404


def _new_pool(**fields):
    return {
        "name": "API pool",
        "slug": "api-pool",
        "purpose": "training",
        "deployment": "cloud_on_demand",
        "gpu_model": "h100-sxm",
        "gpu_count": 8,
        "on_demand_price_per_gpu_hour_usd": "2.00",
        **fields,
    }


def test_a_lead_creates_pools_for_their_team_or_none_through_the_api(client, fleet, speech_lead):
    headers = _api_headers(speech_lead)
    own = client.post(
        "/api/v1/pools/", _new_pool(team="speech"), content_type="application/json", headers=headers
    )
    assert own.status_code == 201, own.content
    assert Pool.objects.get(slug="api-pool").team == fleet["speech"]
    shared = client.post(
        "/api/v1/pools/",
        _new_pool(slug="api-shared", name="API shared", team=None),
        content_type="application/json",
        headers=headers,
    )
    assert shared.status_code == 201, shared.content
    assert Pool.objects.get(slug="api-shared").team is None


def test_another_teams_slug_is_refused_naming_the_field(client, fleet, speech_lead):
    headers = _api_headers(speech_lead)
    response = client.post(
        "/api/v1/pools/", _new_pool(team="vision"), content_type="application/json", headers=headers
    )
    assert response.status_code == 400
    assert response.json() == {
        "team": ["You are not a member of team “vision”: give one of your teams (speech) or null."]
    }
    assert not Pool.objects.filter(slug="api-pool").exists()
    nul = client.post(
        "/api/v1/pools/", _new_pool(team="a\x00b"), content_type="application/json", headers=headers
    )
    assert nul.status_code == 400 and list(nul.json()) == ["team"]
    moved = client.patch(
        f"/api/v1/pools/{fleet['pools']['speech'].slug}/",
        {"team": "vision"},
        content_type="application/json",
        headers=headers,
    )
    assert moved.status_code == 400 and list(moved.json()) == ["team"]
    assert Pool.objects.get(pk=fleet["pools"]["speech"].pk).team == fleet["speech"]


def test_a_workload_cannot_be_put_on_another_teams_pool_through_the_api(client, fleet, speech_lead):
    headers = _api_headers(speech_lead)
    workload = fleet["workloads"]["speech-on-shared"]
    response = client.patch(
        f"/api/v1/workloads/{workload.slug}/",
        {"pool": fleet["pools"]["vision"].slug},
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code == 400
    assert response.json() == {
        "pool": [f"Object with slug={fleet['pools']['vision'].slug} does not exist."]
    }
    workload.refresh_from_db()
    assert workload.pool == fleet["pools"]["shared"]


def test_a_workloads_team_follows_its_pools_in_the_api(client, fleet):
    both = UserFactory(role="lead", teams=[fleet["speech"], fleet["vision"]])
    headers = _api_headers(both)
    response = client.patch(
        f"/api/v1/workloads/{fleet['workloads']['speech-own'].slug}/",
        {"team": "vision"},
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code == 400
    assert response.json() == {
        "team": ["The pool belongs to team Speech: a workload on it is that team's or has no team."]
    }


def test_the_api_refuses_another_teams_writes_with_404(client, fleet, speech_lead):
    headers = _api_headers(speech_lead)
    vision = fleet["pools"]["vision"]
    before = _pool_state(vision)
    for method, path in (
        ("patch", f"/api/v1/pools/{vision.slug}/"),
        ("delete", f"/api/v1/pools/{vision.slug}/"),
        ("post", f"/api/v1/pools/{vision.slug}/archive/"),
    ):
        response = getattr(client, method)(
            path, {"description": "Taken"}, content_type="application/json", headers=headers
        )
        assert response.status_code == 404, (method, path)
    assert _pool_state(vision) == before
