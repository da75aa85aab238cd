"""Mapping rules: the first matching rule by priority maps a job to its workload and team,
at import and again whenever the rules change; pages, API and the unmapped count."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.slurm.mapping import mapping_of, remap_jobs
from apps.slurm.models import SlurmJob, SlurmMappingRule
from apps.slurm.services import import_sacct
from tests.factories import ClusterFactory, PoolFactory, TeamFactory, UserFactory, WorkloadFactory

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parent.parent / "data" / "slurm"
HEADER = (
    "JobID|User|Account|Partition|QOS|JobName|State|Start|End|Elapsed|NNodes|NodeList|AllocTRES"
)
TEXT = "\n".join(
    [
        HEADER,
        "10|alice|proj-llm|gpu|high|pretrain-7b|COMPLETED|2026-11-02T08:00:00|"
        "2026-11-02T09:00:00|01:00:00|1|gpu01|gres/gpu=4",
        "11|bob|proj-vision|gpu|normal|vit|COMPLETED|2026-11-02T08:00:00|"
        "2026-11-02T09:00:00|01:00:00|1|gpu02|gres/gpu=2",
        "12|carol|physics|debug|normal|md|COMPLETED|2026-11-02T08:00:00|"
        "2026-11-02T09:00:00|01:00:00|1|gpu03|gres/gpu=1",
    ]
)
NOW = datetime(2026, 11, 3, tzinfo=UTC)


@pytest.fixture
def setup():
    cluster = ClusterFactory(slug="hopper")
    team = TeamFactory(name="LLM")
    pool = PoolFactory(cluster=cluster, team=team)
    llm = WorkloadFactory(name="LLM", slug="llm", pool=pool)
    vision = WorkloadFactory(name="Vision", slug="vision", pool=PoolFactory(cluster=cluster))
    return {"cluster": cluster, "team": team, "llm": llm, "vision": vision}


def _mapping(cluster):
    return {
        job.job_id: (job.workload and job.workload.slug, job.team and job.team.slug)
        for job in SlurmJob.objects.filter(cluster=cluster).select_related("workload", "team")
    }


def test_the_first_matching_rule_by_priority_wins_and_a_workload_gives_its_team(setup):
    cluster, team = setup["cluster"], setup["team"]
    other_team = TeamFactory(name="Physics")
    # proj-* (priority 50) is tried before the exact account proj-llm (priority 100).
    SlurmMappingRule.objects.create(
        field="account", pattern="proj-*", workload=setup["vision"], priority=50
    )
    SlurmMappingRule.objects.create(
        field="account", pattern="proj-llm", workload=setup["llm"], priority=10
    )
    SlurmMappingRule.objects.create(field="partition", pattern="debug", team=other_team)
    # Another cluster's rule never maps this cluster's jobs.
    SlurmMappingRule.objects.create(
        cluster=ClusterFactory(), field="user", pattern="*", workload=setup["llm"], priority=1
    )
    import_sacct(cluster, TEXT, now=NOW)
    assert _mapping(cluster) == {
        # priority 10 before 50; the workload's pool's team.
        "10": ("llm", team.slug),
        # the vision workload's pool has no team: none.
        "11": ("vision", None),
        # a team-only rule: a team, no workload.
        "12": (None, other_team.slug),
    }


def test_an_exact_pattern_does_not_match_a_longer_value_and_case_counts(setup):
    job = SlurmJob(cluster=setup["cluster"], account="proj-llm-2")
    exact = SlurmMappingRule(field="account", pattern="proj-llm", workload=setup["llm"])
    upper = SlurmMappingRule(field="account", pattern="PROJ-*", workload=setup["llm"])
    assert mapping_of(job, [exact, upper]) == (None, None)
    job.account = "proj-llm"
    assert mapping_of(job, [exact])[0] == setup["llm"].pk


def test_changing_the_rules_remaps_the_stored_jobs(setup, client):
    cluster = setup["cluster"]
    import_sacct(cluster, TEXT, now=NOW)
    assert _mapping(cluster)["10"] == (None, None)
    # A rule names a workload the lead can see: the LLM team's is their team's.
    client.force_login(UserFactory(role="lead", teams=[setup["team"]]))
    response = client.post(
        reverse("slurm:rule_create"),
        {"field": "job_name", "pattern": "pretrain-*", "workload": setup["llm"].pk, "priority": 5},
        follow=True,
    )
    assert "1 job re-mapped" in response.content.decode()
    assert _mapping(cluster)["10"] == ("llm", setup["team"].slug)
    rule = SlurmMappingRule.objects.get()
    assert rule.history.count() == 1
    response = client.post(
        reverse("slurm:rule_edit", kwargs={"pk": rule.pk}),
        {"field": "job_name", "pattern": "vit", "workload": setup["vision"].pk, "priority": 5},
        follow=True,
    )
    assert "2 jobs re-mapped" in response.content.decode()
    assert _mapping(cluster)["10"] == (None, None)
    assert _mapping(cluster)["11"] == ("vision", None)
    page = client.get(reverse("slurm:rule_delete", kwargs={"pk": rule.pk}))
    assert page.status_code == 200 and b"Delete" in page.content
    client.post(reverse("slurm:rule_delete", kwargs={"pk": rule.pk}))
    assert not SlurmMappingRule.objects.exists()
    assert _mapping(cluster)["11"] == (None, None)


def test_a_rule_must_map_to_something_and_have_a_pattern(setup, client):
    client.force_login(UserFactory(role="lead"))
    response = client.post(reverse("slurm:rule_create"), {"field": "user", "pattern": "  "})
    body = response.content.decode()
    assert "Name a workload, a team, or both." in body
    assert "This field is required." in body  # the blank pattern
    assert not SlurmMappingRule.objects.exists()


def test_readers_see_rules_but_cannot_write_them(setup, client):
    client.force_login(UserFactory(role="reader"))
    assert client.get(reverse("slurm:rule_list")).status_code == 200
    assert client.get(reverse("slurm:rule_create")).status_code == 403


def test_the_job_list_shows_the_mapping_and_filters_the_unmapped(setup, client):
    cluster = setup["cluster"]
    SlurmMappingRule.objects.create(field="account", pattern="proj-llm", workload=setup["llm"])
    import_sacct(cluster, TEXT, now=NOW)
    client.force_login(UserFactory(role="reader"))
    # The LLM workload is its team's: a reader of another team sees that much only.
    page = client.get(reverse("slurm:job_list")).content.decode()
    assert "Another team" in page and ">LLM</a>" not in page
    client.force_login(UserFactory(role="reader", teams=[setup["team"]]))
    page = client.get(reverse("slurm:job_list")).content.decode()
    assert "2 no rule maps" in page and ">LLM</a>" in page
    unmapped = client.get(reverse("slurm:job_list"), {"mapping": "unmapped"}).content.decode()
    assert "2 jobs" in unmapped and "pretrain-7b" not in unmapped
    rules = client.get(reverse("slurm:rule_list")).content.decode()
    assert "2 of 3 jobs have no workload" in rules


def test_the_api_reads_writes_and_remaps(setup):
    cluster = setup["cluster"]
    import_sacct(cluster, TEXT, now=NOW)
    api = APIClient()
    api.force_authenticate(UserFactory(role="lead", teams=[setup["team"]]))
    refused = api.post("/api/v1/slurm/rules/", {"field": "user", "pattern": "x"}, format="json")
    assert refused.status_code == 400 and "workload" in refused.json()
    created = api.post(
        "/api/v1/slurm/rules/",
        {"cluster": "hopper", "field": "user", "pattern": "bob", "workload": "llm"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["workload"] == "llm" and created.json()["team"] is None
    jobs = api.get("/api/v1/slurm/jobs/", {"mapped": "true"}).json()
    assert [(job["job_id"], job["workload"], job["team"]) for job in jobs["results"]] == [
        ("11", "llm", setup["team"].slug)
    ]
    unmapped = api.get("/api/v1/slurm/jobs/", {"mapped": "false"}).json()
    assert sorted(job["job_id"] for job in unmapped["results"]) == ["10", "12"]
    rule_id = created.json()["id"]
    assert api.delete(f"/api/v1/slurm/rules/{rule_id}/").status_code == 204
    assert _mapping(cluster)["11"] == (None, None)
    reader = APIClient()
    reader.force_authenticate(UserFactory(role="reader"))
    assert reader.get("/api/v1/slurm/rules/").status_code == 200
    denied = reader.post(
        "/api/v1/slurm/rules/", {"field": "user", "pattern": "x", "workload": "llm"}, format="json"
    )
    assert denied.status_code == 403


def test_the_real_clusters_jobs_are_mapped_by_their_account(setup):
    """The kept real capture (account ml-research on every job; sacct -D's second row of
    job 2 refused): the seven jobs it keeps (1, 2, 3, 4, 6 and array tasks 5_0, 5_1) all
    map."""
    cluster = setup["cluster"]
    SlurmMappingRule.objects.create(field="account", pattern="ml-*", workload=setup["llm"])
    import_sacct(cluster, (DATA / "real-one-node-cluster.sacct").read_text(), now=NOW)
    mapped = _mapping(cluster)
    assert sorted(mapped) == ["1", "2", "3", "4", "5_0", "5_1", "6"]
    assert set(mapped.values()) == {("llm", setup["team"].slug)}
    assert remap_jobs() == 0
