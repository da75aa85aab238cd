"""Budgets: one of a team or a pool, positive amounts, history kept; the burn-down from
the showback's own figures; the API and the pages; teams changed by superusers only."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from apps.accounts.models import Team
from apps.showback.models import Budget
from apps.showback.selectors import budget_burndowns
from tests.factories import PoolFactory, TeamFactory, UserFactory
from tests.showback.fleet import make_fleet

NOW = datetime(2026, 3, 15, 12, 30, tzinfo=UTC)
DAYS_LEFT = 16 + 11 / 24
HOURS_SO_FAR = 14 * 24 + 13  # up to the end of the current hour
WINDOW_HOURS = 7 * 24


@pytest.fixture
def fleet(db):
    return make_fleet()


def test_a_team_budget_burns_down_with_the_teams_showback(fleet):
    teams, _pools, _workloads = fleet
    budget = Budget.objects.create(team=teams["serving"], amount_per_month=Decimal("1000"))
    (item,) = budget_burndowns(Budget.objects.filter(pk=budget.pk), NOW)
    # Serving: pool C (2 GPUs × $1) every hour, and a2's $20 and b2's $90 on 10 March.
    spent = 2 * HOURS_SO_FAR + 20 + 90
    window = 2 * WINDOW_HOURS + 20 + 90
    assert item.figures.spent == pytest.approx(spent)
    assert item.figures.used_pct == pytest.approx(spent / 10)
    assert float(item.figures.forecast) == pytest.approx(spent + window / 7 * DAYS_LEFT)
    assert item.figures.state == "75"


def test_a_pool_budget_counts_the_pools_whole_cost(fleet):
    _teams, pools, _workloads = fleet
    budget = Budget.objects.create(pool=pools["pool-b"], amount_per_month=Decimal("5000"))
    (item,) = budget_burndowns([budget], NOW)
    assert item.figures.spent == pytest.approx(8 * 3 * HOURS_SO_FAR)
    assert item.figures.state == "over"  # 8,376 USD of 5,000: over, in words


@pytest.mark.django_db
def test_a_budget_is_for_exactly_one_team_or_pool_and_positive():
    team, pool = TeamFactory(), PoolFactory()
    for values in ({}, {"team": team, "pool": pool}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Budget.objects.create(amount_per_month=Decimal("10"), **values)
    with pytest.raises(IntegrityError), transaction.atomic():
        Budget.objects.create(team=team, amount_per_month=Decimal("0"))


@pytest.mark.django_db
def test_the_api_reads_in_scope_and_only_superusers_write(client):
    mine, theirs = TeamFactory(name="Mine", slug="mine"), TeamFactory(name="Theirs", slug="theirs")
    Budget.objects.create(team=mine, amount_per_month=Decimal("100"))
    Budget.objects.create(team=theirs, amount_per_month=Decimal("100"))
    member = UserFactory(role="lead", teams=[mine])
    client.force_login(member)
    listed = client.get(reverse("budget-list")).json()["results"]
    assert [row["team"] for row in listed] == ["mine"]
    assert set(listed[0]) >= {"spent_usd", "used_pct", "forecast_usd", "state", "pool"}
    assert [row["slug"] for row in client.get(reverse("team-list")).json()["results"]] == ["mine"]
    body = {"team": "mine", "amount_per_month": "500"}
    assert (
        client.post(reverse("budget-list"), body, content_type="application/json").status_code
        == 403
    )
    assert client.get(reverse("team-detail", args=["theirs"])).status_code == 404

    client.force_login(UserFactory(role="admin"))
    both = client.post(
        reverse("budget-list"),
        {"team": "mine", "pool": None, "amount_per_month": "-5"},
        content_type="application/json",
    )
    assert both.status_code == 400 and "amount_per_month" in both.json()
    pool = PoolFactory(slug="p1")
    created = client.post(
        reverse("budget-list"),
        {"pool": pool.slug, "amount_per_month": "2500.00", "note": "Q1"},
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["pool"] == "p1" and created.json()["team"] is None
    team = client.post(
        reverse("team-list"),
        {"slug": "new-team", "name": "New team", "members": [member.username]},
        content_type="application/json",
    )
    assert team.status_code == 201, team.content
    assert list(Team.objects.get(slug="new-team").members.all()) == [member]


@pytest.mark.django_db
def test_budget_history_is_kept():
    budget = Budget.objects.create(team=TeamFactory(), amount_per_month=Decimal("100"))
    budget.amount_per_month = Decimal("250")
    budget.save()
    assert [record.amount_per_month for record in budget.history.order_by("history_date")] == [
        Decimal("100.00"),
        Decimal("250.00"),
    ]


@pytest.mark.django_db
def test_a_team_that_owns_pools_is_not_deleted(client):
    team = TeamFactory(name="Owner", slug="owner")
    PoolFactory(name="Owned pool", team=team)
    client.force_login(UserFactory(role="admin"))
    url = reverse("showback:team_delete", args=["owner"])
    page = client.get(url).content.decode()
    assert "Owned pool" in page and "history keeps an owner" in page
    client.post(url)
    assert Team.objects.filter(slug="owner").exists()
    assert client.delete(reverse("team-detail", args=["owner"])).status_code == 409
    empty = TeamFactory(name="Empty", slug="empty")
    client.post(reverse("showback:team_delete", args=["empty"]))
    assert not Team.objects.filter(pk=empty.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["lead", "ops", "procurement", "reader", "finance", "admin"])
def test_only_superusers_create_teams_and_budgets_on_the_pages(client, role):
    client.force_login(UserFactory(role=role))
    team_post = client.post(reverse("showback:team_create"), {"name": "Posted", "slug": ""})
    budget_post = client.post(
        reverse("showback:budget_create"),
        {"team": "", "pool": str(PoolFactory().pk), "amount_per_month": "100"},
    )
    allowed = role == "admin"
    assert team_post.status_code == (302 if allowed else 403)
    assert budget_post.status_code == (302 if allowed else 403)
    assert Team.objects.filter(slug="posted").exists() == allowed
    assert Budget.objects.exists() == allowed


@pytest.mark.django_db
def test_the_budget_form_names_what_is_wrong(client):
    client.force_login(UserFactory(role="admin"))
    team = TeamFactory()
    neither = client.post(reverse("showback:budget_create"), {"amount_per_month": "100"})
    assert "one team or one pool" in neither.content.decode()
    comma = client.post(
        reverse("showback:budget_create"), {"team": team.pk, "amount_per_month": "1,5"}
    )
    assert "use a decimal point" in comma.content.decode()
    zero = client.post(
        reverse("showback:budget_create"), {"team": team.pk, "amount_per_month": "0"}
    )
    assert "a budget is above 0" in zero.content.decode()


@pytest.mark.django_db
def test_the_overview_card_and_the_budget_list_say_the_state_in_words(client):
    team = TeamFactory(name="Spenders", slug="spenders")
    PoolFactory(team=team, gpu_count=8)  # in service since the factory's start: it costs
    Budget.objects.create(team=team, amount_per_month=Decimal("0.01"))
    client.force_login(UserFactory(role="finance"))
    card = client.get(
        reverse("showback:budget_list"),
        headers={"HX-Request": "true", "HX-Target": "budgets-panel"},
    )
    body = card.content.decode()
    assert 'id="budgets-panel"' in body and "<html" not in body
    assert "Over budget" in body and 'data-state="over"' in body
    overview = client.get(reverse("dashboard:overview")).content.decode()
    assert reverse("showback:budget_list") in overview


@pytest.mark.django_db
def test_the_overview_card_is_cached_until_a_budget_changes(
    client, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    team = TeamFactory(name="Spenders", slug="spenders")
    PoolFactory(team=team, gpu_count=8)
    with django_capture_on_commit_callbacks(execute=True):
        budget = Budget.objects.create(team=team, amount_per_month=Decimal("0.01"))
    client.force_login(UserFactory(role="finance"))
    card_url = reverse("showback:budget_list")
    headers = {"HX-Request": "true", "HX-Target": "budgets-panel"}
    assert 'data-state="over"' in client.get(card_url, headers=headers).content.decode()
    # Again: the session, the user and the cache version, never the four cost reports.
    with django_assert_max_num_queries(6):
        assert 'data-state="over"' in client.get(card_url, headers=headers).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        budget.amount_per_month = Decimal("100000000")
        budget.save()
    assert 'data-state="ok"' in client.get(card_url, headers=headers).content.decode()
