"""Every reader lists every cluster's Slurm jobs, but another team's workload and team are
not named: the API gives them as null (``mapped`` still says a rule maps the job), the
jobs page says "Another team's workload" and "another team". Admins see every name."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.slurm.models import SlurmMappingRule
from apps.slurm.services import import_sacct
from tests.factories import ClusterFactory, PoolFactory, TeamFactory, UserFactory, WorkloadFactory

pytestmark = pytest.mark.django_db

TEXT = "\n".join(
    [
        "JobID|User|Account|State|Start|End|Elapsed|NNodes|NodeList|AllocTRES",
        "20|bea|proj-b|COMPLETED|2026-11-02T08:00:00|2026-11-02T09:00:00|01:00:00|1|"
        "gpu01|gres/gpu=4",
        "21|ann|proj-alpha|COMPLETED|2026-11-02T08:00:00|2026-11-02T09:00:00|01:00:00|1|"
        "gpu02|gres/gpu=2",
        "22|bea|shared|COMPLETED|2026-11-02T08:00:00|2026-11-02T09:00:00|01:00:00|1|"
        "gpu03|gres/gpu=1",
        "23|carl|physics|COMPLETED|2026-11-02T08:00:00|2026-11-02T09:00:00|01:00:00|1|"
        "gpu04|gres/gpu=1",
    ]
)


@pytest.fixture
def jobs():
    cluster = ClusterFactory(slug="hopper")
    alpha, bravo = TeamFactory(name="Alpha"), TeamFactory(name="Bravo Secret")
    bravo_pool = PoolFactory(cluster=cluster, team=bravo)
    alpha_pool = PoolFactory(cluster=cluster, team=alpha)
    shared_pool = PoolFactory(cluster=cluster)
    bravo_work = WorkloadFactory(name="Bravo pretrain", slug="bravo-pretrain", pool=bravo_pool)
    alpha_work = WorkloadFactory(name="Alpha serve", slug="alpha-serve", pool=alpha_pool)
    shared_work = WorkloadFactory(name="Shared eval", slug="shared-eval", pool=shared_pool)
    # Job 20: Bravo's workload (its team from its pool). Job 21: Alpha's. Job 22: a shared
    # workload whose hours a rule gives to Bravo. Job 23: no rule maps it.
    SlurmMappingRule.objects.create(field="account", pattern="proj-b", workload=bravo_work)
    SlurmMappingRule.objects.create(field="account", pattern="proj-alpha", workload=alpha_work)
    SlurmMappingRule.objects.create(
        field="account", pattern="shared", workload=shared_work, team=bravo
    )
    import_sacct(cluster, TEXT, now=datetime(2026, 11, 3, tzinfo=UTC))
    return {"alpha": alpha, "bravo": bravo}


def _listed(user, **query):
    api = APIClient()
    api.force_authenticate(user)
    response = api.get("/api/v1/slurm/jobs/", query)
    assert response.status_code == 200
    return {
        job["job_id"]: (job["workload"], job["team"], job["mapped"])
        for job in response.json()["results"]
    }


def test_the_api_gives_another_team_s_workload_and_team_as_null(jobs):
    lead = UserFactory(role="lead", teams=[jobs["alpha"]])
    assert _listed(lead) == {
        "20": (None, None, True),
        "21": ("alpha-serve", "alpha", True),
        "22": ("shared-eval", None, True),
        "23": (None, None, False),
    }
    # The filter still keeps the job mapped to Bravo's workload, without naming it.
    assert _listed(lead, mapped="true") == {
        "20": (None, None, True),
        "21": ("alpha-serve", "alpha", True),
        "22": ("shared-eval", None, True),
    }
    admin = UserFactory(role="admin")
    assert _listed(admin) == {
        "20": ("bravo-pretrain", "bravo-secret", True),
        "21": ("alpha-serve", "alpha", True),
        "22": ("shared-eval", "bravo-secret", True),
        "23": (None, None, False),
    }


def test_the_jobs_page_names_no_other_team(jobs, client):
    client.force_login(UserFactory(role="lead", teams=[jobs["alpha"]]))
    page = client.get(reverse("slurm:job_list")).content.decode()
    table = page[page.index('id="slurm-job-table"') :]
    assert "Bravo" not in page and "bravo" not in page
    assert table.count("Another team") == 1  # job 20's workload
    assert table.count(">another team<") == 2  # the teams of jobs 20 and 22
    assert ">Alpha serve</a>" in table and ">Shared eval</a>" in table

    client.force_login(UserFactory(role="admin"))
    page = client.get(reverse("slurm:job_list")).content.decode()
    assert ">Bravo pretrain</a>" in page and page.count("Bravo Secret") == 2
    assert "Another team" not in page and "another team" not in page
