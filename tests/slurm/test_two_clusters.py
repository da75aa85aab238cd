"""Two clusters with the same node name and the same Slurm user name
(tests/slurm/efficiency_data.py, ``build_two_clusters``, every figure by hand): a job's
nodes meet the GPUs and hostname rules of its own cluster's pools only, and a user's
efficiency figures (page, CSV) are their cluster's, while a team's hold every cluster's."""

import csv
import io
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.urls import reverse

from apps.slurm.efficiency import grouped, job_efficiency
from apps.slurm.nodes import hostname_rules_by_cluster, job_pool_gpus
from apps.telemetry.models import HostnameRule
from tests.factories import UserFactory
from tests.slurm.efficiency_data import WEEK_END, WEEK_START, build_two_clusters

pytestmark = pytest.mark.django_db

CENT = Decimal("0.01")


@pytest.fixture
def fleet():
    return build_two_clusters()


def test_a_job_s_node_meets_the_gpus_of_its_own_cluster_s_pools_only(fleet):
    report = job_efficiency(WEEK_START, WEEK_END)
    jobs = {(job.cluster, job.job_id): job.row() for job in report.jobs}
    hopper = jobs[("Hopper", "1")]
    assert (hopper["allocated_gpu_hours"], hopper["measured_gpu_hours"]) == (1, 1)
    assert hopper["busy_gpu_hours"] == Decimal("0.6")
    assert hopper["idle_cost_usd"] == (Decimal("0.4") * fleet.hopper_price).quantize(CENT)
    ampere = jobs[("Ampere", "1")]
    assert (ampere["allocated_gpu_hours"], ampere["measured_gpu_hours"]) == (1, 1)
    assert ampere["busy_gpu_hours"] == Decimal("0.1")
    assert ampere["idle_cost_usd"] == (Decimal("0.9") * fleet.ampere_price).quantize(CENT)
    volta = jobs[("Volta", "1")]
    assert (volta["allocated_gpu_hours"], volta["unmeasured_gpu_hours"]) == (1, 1)
    assert volta["measured_gpu_hours"] == 0
    assert report.total.shown()["unpriced_idle_gpu_hours"] == 0


def test_a_job_s_nodes_join_the_pools_of_its_own_cluster_s_hostname_rules(fleet):
    # Ampere's rule is tried first by priority; a Hopper job's node still joins Hopper's.
    HostnameRule.objects.create(pool=fleet.ampere_pool, hostname_pattern="gpu0*", priority=1)
    HostnameRule.objects.create(pool=fleet.hopper_pool, hostname_pattern="gpu0*", priority=50)
    rules = hostname_rules_by_cluster()
    hopper_job = SimpleNamespace(cluster_id=fleet.hopper.pk, node_names=["gpu01", "gpu02"], gpus=4)
    assert job_pool_gpus(hopper_job, rules) == ({fleet.hopper_pool.pk: Decimal(4)}, Decimal(0))
    ampere_job = SimpleNamespace(cluster_id=fleet.ampere.pk, node_names=["gpu01"], gpus=2)
    assert job_pool_gpus(ampere_job, rules) == ({fleet.ampere_pool.pk: Decimal(2)}, Decimal(0))
    # Volta has no pool, so no rule: its node places nothing, whatever other clusters say.
    volta_job = SimpleNamespace(cluster_id=fleet.volta.pk, node_names=["gpu01"], gpus=1)
    assert job_pool_gpus(volta_job, rules) == ({}, Decimal(1))


def test_a_user_s_figures_are_their_cluster_s_and_teams_still_add_up(fleet):
    report = job_efficiency(WEEK_START, WEEK_END)
    users = {
        (row["cluster"], row["name"]): row
        for row in grouped(report.by_user, clusters=report.cluster_names)
    }
    assert sorted(users) == [
        ("Ampere", "alice"),
        ("Ampere", "bob"),
        ("Hopper", "alice"),
        ("Volta", "carol"),
    ]
    hopper_alice, ampere_alice = users[("Hopper", "alice")], users[("Ampere", "alice")]
    assert (hopper_alice["jobs"], hopper_alice["allocated_gpu_hours"]) == (1, 1)
    assert (hopper_alice["busy_gpu_hours"], hopper_alice["idle_gpu_hours"]) == (
        Decimal("0.6"),
        Decimal("0.4"),
    )
    assert (ampere_alice["jobs"], ampere_alice["allocated_gpu_hours"]) == (1, 1)
    assert (ampere_alice["busy_gpu_hours"], ampere_alice["idle_gpu_hours"]) == (
        Decimal("0.1"),
        Decimal("0.9"),
    )
    # Vision holds both alices' jobs: 1 + 1 GPU-h, busy 0.6 + 0.1.
    vision = report.by_team[fleet.team.pk].shown()
    assert (vision["jobs"], vision["allocated_gpu_hours"]) == (2, 2)
    assert (vision["busy_gpu_hours"], vision["idle_gpu_hours"]) == (Decimal("0.7"), Decimal("1.3"))
    vision_cost = Decimal("0.4") * fleet.hopper_price + Decimal("0.9") * fleet.ampere_price
    assert vision["idle_cost_usd"] == vision_cost.quantize(CENT)
    # Accounts are a cluster's too: every job's account is "physics".
    accounts = grouped(report.by_account, clusters=report.cluster_names)
    assert sorted((row["cluster"], row["jobs"]) for row in accounts) == [
        ("Ampere", 2),
        ("Hopper", 1),
        ("Volta", 1),
    ]


def test_the_page_and_the_csv_show_each_user_s_cluster(fleet, client):
    client.force_login(UserFactory())
    url = reverse("slurm:efficiency")
    page = client.get(url, {"week": "2026-11-30", "group": "user"}).content.decode()
    table = page[page.index('id="efficiency-table"') :]
    table = table[: table.index("</table>")]
    assert table.count(">alice<") == 2
    assert '<div class="small text-secondary">Hopper</div>' in table
    response = client.get(url, {"week": "2026-11-30", "group": "user", "format": "csv"})
    lines = list(csv.reader(io.StringIO(response.content.decode())))
    assert lines[0][:5] == ["User", "Cluster", "Jobs", "Allocated (GPU-h)", "Measured (GPU-h)"]
    rows = {(line[0], line[1]): line for line in lines[1:]}
    assert sorted(rows) == [
        ("alice", "Ampere"),
        ("alice", "Hopper"),
        ("bob", "Ampere"),
        ("carol", "Volta"),
    ]
    # Busy GPU-hours are the sixth column.
    assert rows[("alice", "Hopper")][5] == "0.600000"
    assert rows[("alice", "Ampere")][5] == "0.100000"
