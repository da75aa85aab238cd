"""The demo's teams: three teams own the pools, one pool stays shared, finance reads
every team, lead-serving Serving's, and the budgets show several states."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Team
from apps.pools.models import Pool
from apps.showback.models import Budget
from apps.showback.selectors import budget_burndowns


@pytest.mark.django_db
def test_the_demo_has_teams_a_shared_pool_and_budgets_in_several_states(client, role_groups):
    call_command("seed_demo", verbosity=0)
    assert set(Team.objects.values_list("slug", flat=True)) == {"research", "serving", "stores"}
    assert Pool.objects.get(slug="mixed-a100-onprem").team is None
    assert not Pool.objects.filter(team__isnull=True).exclude(slug="mixed-a100-onprem").exists()
    states = {item.figures.state for item in budget_burndowns(Budget.objects.all(), timezone.now())}
    assert len(states) >= 3 and "over" in states

    users = get_user_model().objects
    client.force_login(users.get(username="lead-serving"))
    pools = {row["slug"] for row in client.get(reverse("pool-list")).json()["results"]}
    assert "infer-h100-bj" in pools and "mixed-a100-onprem" in pools
    assert "train-h100-sh" not in pools
    rows = client.get(reverse("api-showback")).json()["rows"]
    assert [row["team"] for row in rows] == ["serving"]

    client.force_login(users.get(username="finance"))
    rows = client.get(reverse("api-showback")).json()["rows"]
    assert [row["team"] for row in rows] == ["research", "serving", "stores", None]

    # A second run changes no budget.
    amounts = list(Budget.objects.order_by("pk").values_list("amount_usd_per_month", flat=True))
    call_command("seed_demo", verbosity=0)
    assert (
        list(Budget.objects.order_by("pk").values_list("amount_usd_per_month", flat=True))
        == amounts
    )
