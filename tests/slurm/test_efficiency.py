"""Allocated against used: the figures of tests/slurm/efficiency_data.py, by hand."""

import csv
import io
from datetime import date
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.slurm.efficiency import grouped, job_efficiency
from tests.factories import UserFactory
from tests.slurm.efficiency_data import WEEK_END, WEEK_START, build_week

pytestmark = pytest.mark.django_db

CENT = Decimal("0.01")


@pytest.fixture
def week():
    return build_week()


def test_each_job_is_allocated_busy_idle_and_unmeasured_hour_by_hour(week):
    report = job_efficiency(WEEK_START, WEEK_END)
    jobs = {job.job_id: job for job in report.jobs}
    assert sorted(jobs) == ["500", "501_2", "502"]
    big = jobs["500"].row()
    assert big["allocated_gpu_hours"] == Decimal(4)
    assert big["measured_gpu_hours"] == Decimal(3)
    assert big["busy_gpu_hours"] == Decimal("1.55")
    assert big["idle_gpu_hours"] == Decimal("1.45")
    assert big["unmeasured_gpu_hours"] == Decimal(1)
    assert big["busy_ratio"] == Decimal("1.55") / 3
    assert big["idle_cost_usd"] == (Decimal("1.45") * week["price_a"]).quantize(CENT)
    assert big["team"] == "Vision"

    idle = jobs["501_2"].row()
    assert (idle["allocated_gpu_hours"], idle["measured_gpu_hours"]) == (1, 1)
    assert idle["busy_gpu_hours"] == Decimal("0.005")
    assert idle["idle_cost_usd"] == (Decimal("0.995") * week["price_spare"]).quantize(CENT)
    assert idle["team"] == ""

    blind = jobs["502"].row()
    assert (blind["allocated_gpu_hours"], blind["unmeasured_gpu_hours"]) == (1, 1)
    assert (blind["measured_gpu_hours"], blind["idle_cost_usd"], blind["busy_ratio"]) == (
        0,
        0,
        None,
    )
    assert [job.job_id for job in report.unused_jobs] == ["501_2"]


def test_users_and_teams_add_their_jobs_up(week):
    report = job_efficiency(WEEK_START, WEEK_END)
    users = {row["name"]: row for row in grouped(report.by_user, clusters=report.cluster_names)}
    assert {row["cluster"] for row in users.values()} == {"Hopper"}
    alice_cost = Decimal("1.45") * week["price_a"]
    bob_cost = Decimal("0.995") * week["price_spare"]
    assert users["alice"]["allocated_gpu_hours"] == Decimal(5)
    assert users["alice"]["measured_gpu_hours"] == Decimal(3)
    assert users["alice"]["unmeasured_gpu_hours"] == Decimal(2)
    assert users["alice"]["idle_cost_usd"] == alice_cost.quantize(CENT)
    assert users["bob"]["idle_gpu_hours"] == Decimal("0.995")
    teams = grouped(report.by_team, report.team_names)
    # Vision's idle cost (1.45 GPU-h at A's price) ranks above no team's (0.995 at spare's).
    assert [(row["key"], row["name"]) for row in teams] == [(week["team"].pk, "Vision"), (None, "")]
    total = report.total.shown()
    assert total["allocated_gpu_hours"] == Decimal(6)
    assert total["busy_gpu_hours"] == Decimal("1.555")
    assert total["idle_cost_usd"] == (alice_cost + bob_cost).quantize(CENT)
    # A team's and a user's filter narrow the jobs in SQL.
    assert [job.job_id for job in job_efficiency(WEEK_START, WEEK_END, user="bob").jobs] == [
        "501_2"
    ]
    assert {job.job_id for job in job_efficiency(WEEK_START, WEEK_END, team=week["team"]).jobs} == {
        "500",
        "502",
    }


def test_the_page_ranks_idle_allocations_and_exports_the_same_figures(week, client):
    client.force_login(UserFactory())
    url = reverse("slurm:efficiency")
    response = client.get(url, {"week": "2026-12-02", "group": "team"})
    assert response.status_code == 200
    page = response.content.decode()
    alice_cost = (Decimal("1.45") * week["price_a"]).quantize(CENT)
    bob_cost = (Decimal("0.995") * week["price_spare"]).quantize(CENT)
    assert "2026-11-30" in page and "2026-12-06" in page
    assert f"${alice_cost + bob_cost:,}" in page
    assert "How these figures are computed" in page
    assert 'href="?week=2026-11-23&amp;group=team" id="efficiency-previous-week"' in page
    ranked = page[page.index('id="efficiency-ranked"') :]
    assert ranked.index("500") < ranked.index("501_2")
    unused = page[page.index('id="efficiency-unused"') :]
    assert "501_2" in unused and ">500<" not in unused

    response = client.get(url, {"week": "2026-12-06", "group": "user", "format": "csv"})
    assert response["Content-Disposition"].endswith('-user-2026-11-30.csv"')
    lines = list(csv.reader(io.StringIO(response.content.decode())))
    assert lines[0][:4] == ["User", "Cluster", "Jobs", "Allocated (GPU-h)"]
    by_name = {line[0]: line for line in lines[1:]}
    assert by_name["alice"][1:4] == ["Hopper", "2", "5.000000"]
    assert by_name["alice"][9] == str(alice_cost)
    assert by_name["bob"][6] == "0.995000"
    # Sorted by allocated GPU-hours, ascending.
    response = client.get(url, {"week": "2026-12-01", "sort": "allocated"})
    table = response.content.decode()
    table = table[table.index('id="efficiency-table"') :]
    assert table.index(">bob<") < table.index(">alice<")


def test_an_idle_cost_in_another_currency_is_converted_at_its_month_s_rate(week):
    from apps.currencies.models import ExchangeRate
    from apps.pools.models import Pool, PoolPricePeriod

    # The spare pool (job 501_2, on 2026-12-06) prices in euros.
    spare = Pool.objects.get(name="Hopper spare")
    Pool.objects.filter(pk=spare.pk).update(currency="EUR")
    PoolPricePeriod.objects.filter(pool=spare).update(currency="EUR")
    report = job_efficiency(WEEK_START, WEEK_END)
    assert report.missing_rates == {("EUR", date(2026, 12, 1))}
    jobs = {job.job_id: job.row() for job in report.jobs}
    assert jobs["501_2"]["idle_cost_usd"] == 0  # left out, and the page says why
    ExchangeRate.objects.create(month=date(2026, 12, 1), currency="EUR", units_per_usd="0.8")
    report = job_efficiency(WEEK_START, WEEK_END)
    assert report.missing_rates == set()
    jobs = {job.job_id: job.row() for job in report.jobs}
    expected = Decimal("0.995") * week["price_spare"] / Decimal("0.8")
    assert jobs["501_2"]["idle_cost_usd"] == expected.quantize(CENT)
