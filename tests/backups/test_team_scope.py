"""Backups by team: a policy, version or drill is its workload's team's. An Ops member of
another team neither lists, opens, downloads, records nor registers anything of them
(404), and the fleet view's counts are of the workloads in scope, counted here by hand."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.backups.models import BackupPolicy, BackupVersion, RestoreDrill
from tests.backups.factories import make_drill, make_policy, make_version
from tests.factories import PoolFactory, TeamFactory, UserFactory, WorkloadFactory
from tests.test_urls_roles import _form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet():
    """Vision: a workload with a policy that is overdue, a version and a drill, and one
    without a policy. Speech: a workload on the shared pool with a policy. Shared: one
    workload without a policy."""
    vision, speech = TeamFactory(name="Vision"), TeamFactory(name="Speech")
    vision_pool, shared_pool = PoolFactory(name="Vision pool", team=vision), PoolFactory()
    vision_job = WorkloadFactory(name="Vision job", pool=vision_pool)
    WorkloadFactory(name="Vision spare", pool=vision_pool)
    speech_job = WorkloadFactory(name="Speech job", pool=shared_pool, team=speech)
    WorkloadFactory(name="Shared spare", pool=shared_pool)
    vision_policy = make_policy(vision_job)
    version = make_version(vision_job)
    drill = make_drill(vision_policy, version, evidence=b"restored\n")
    BackupPolicy.objects.filter(pk=vision_policy.pk).update(
        drill_due_at=timezone.now() - timedelta(days=2)
    )
    make_policy(speech_job)
    return {
        "vision": vision,
        "speech": speech,
        "vision_job": vision_job,
        "speech_job": speech_job,
        "version": version,
        "drill": drill,
    }


@pytest.fixture
def speech_ops(client, fleet):
    user = UserFactory(role="ops", teams=[fleet["speech"]])
    client.force_login(user)
    return user


def test_the_fleet_view_lists_and_counts_the_workloads_in_scope(client, fleet, speech_ops):
    response = client.get(reverse("backups:policy_list"))
    assert [policy.workload.name for policy in response.context["page"]] == ["Speech job"]
    assert [w.name for w in response.context["uncovered_workloads"]] == ["Shared spare"]
    summary = response.context["summary"]
    # Speech job's policy is the only one in scope, new and never drilled; Vision's
    # overdue policy is not counted; Shared spare is the one workload without a policy.
    assert summary["policies"] == 1
    assert summary["overdue"] == 0
    assert summary["never_drilled"] == 1
    assert summary["workloads_without_policy"] == 1
    html = response.content.decode()
    assert "Vision job" not in html and "Vision spare" not in html


def test_the_team_reads_its_own(client, fleet):
    client.force_login(UserFactory(teams=[fleet["vision"]]))
    summary = client.get(reverse("backups:policy_list")).context["summary"]
    assert (summary["policies"], summary["overdue"], summary["workloads_without_policy"]) == (
        1,
        1,
        2,  # Vision spare and Shared spare
    )


def test_every_page_and_download_of_another_team_is_404(client, fleet, speech_ops):
    slug, version, drill = fleet["vision_job"].slug, fleet["version"], fleet["drill"]
    for url in (
        reverse("backups:policy_detail", args=[slug]),
        reverse("backups:policy_edit", args=[slug]),
        reverse("backups:policy_delete", args=[slug]),
        reverse("backups:policy_create", args=[slug]),
        reverse("backups:drill_create", args=[slug]),
        reverse("backups:version_create", args=[slug]),
        reverse("backups:version_detail", args=[version.pk]),
        reverse("backups:version_edit", args=[version.pk]),
        reverse("backups:version_delete", args=[version.pk]),
        reverse("backups:drill_detail", args=[drill.pk]),
        reverse("backups:drill_evidence", args=[drill.pk]),
        reverse("backups:drill_delete", args=[drill.pk]),
    ):
        assert client.get(url).status_code == 404, url


def test_another_teams_ops_writes_nothing(client, fleet, speech_ops):
    slug, version, drill = fleet["vision_job"].slug, fleet["version"], fleet["drill"]
    policy_before = BackupPolicy.objects.filter(workload__slug=slug).values().first()
    version_before = BackupVersion.objects.filter(pk=version.pk).values().first()
    posts = {
        reverse("backups:policy_edit", args=[slug]): {"rpo_minutes": "5", "rto_minutes": "5"},
        reverse("backups:policy_delete", args=[slug]): {},
        reverse("backups:drill_create", args=[slug]): {"outcome": "restored"},
        reverse("backups:version_create", args=[slug]): {"model_name": "x"},
        reverse("backups:version_edit", args=[version.pk]): {"tier": "cold"},
        reverse("backups:version_mark_stable", args=[version.pk]): {},
        reverse("backups:version_delete", args=[version.pk]): {},
        reverse("backups:drill_delete", args=[drill.pk]): {},
    }
    for url, data in posts.items():
        assert client.post(url, data).status_code == 404, url
    assert BackupPolicy.objects.filter(workload__slug=slug).values().first() == policy_before
    assert BackupVersion.objects.filter(pk=version.pk).values().first() == version_before
    assert RestoreDrill.objects.filter(pk=drill.pk).exists()
    assert BackupVersion.objects.filter(workload__slug=slug).count() == 1


def test_ops_keep_their_teams_policies(client, fleet, speech_ops):
    url = reverse("backups:policy_edit", args=[fleet["speech_job"].slug])
    data = {**_form_data(client.get(url).context["form"]), "rpo_minutes": "45"}
    assert client.post(url, data).status_code == 302
    assert BackupPolicy.objects.get(workload=fleet["speech_job"]).rpo_minutes == 45


def _headers(user, read_only=False):
    _, plaintext = ApiToken.issue(
        user=user, description="test", lifetime=timedelta(hours=1), read_only=read_only
    )
    return {"Authorization": f"Bearer {plaintext}"}


def test_the_api_holds_the_workloads_in_scope_only(client, fleet, speech_ops):
    headers = _headers(speech_ops, read_only=True)

    def results(path):
        response = client.get(path, headers=headers)
        assert response.status_code == 200
        return response.json()["results"]

    speech = fleet["speech_job"].slug
    assert [row["workload"] for row in results("/api/v1/backup-policies/")] == [speech]
    assert results("/api/v1/backup-versions/") == []
    assert results("/api/v1/restore-drills/") == []
    assert results(f"/api/v1/backup-versions/?workload={fleet['vision_job'].slug}") == []
    for path in (
        f"/api/v1/backup-policies/{fleet['vision_job'].slug}/",
        f"/api/v1/backup-versions/{fleet['version'].pk}/",
        f"/api/v1/restore-drills/{fleet['drill'].pk}/",
    ):
        assert client.get(path, headers=headers).status_code == 404, path


def test_a_version_of_another_teams_workload_is_refused_as_an_unknown_workload(
    client, fleet, speech_ops
):
    vision = fleet["vision_job"].slug
    body = {
        "workload": vision,
        "kind": "training_checkpoint",
        "model_name": "llama-3-8b",
        "precision": "bf16",
        "data_version": "corpus-v2",
        "config_hash": "3f9a1c2b7d4e",
        "step": 2000,
        "tier": "hot",
        "location": "s3://x/",
        "size_bytes": 1000,
        "created_at": timezone.now().isoformat(),
    }
    response = client.post(
        "/api/v1/backup-versions/",
        body,
        content_type="application/json",
        headers=_headers(speech_ops),
    )
    assert response.status_code == 400
    assert response.json() == {"workload": [f"Object with slug={vision} does not exist."]}
    assert BackupVersion.objects.filter(workload__slug=vision).count() == 1
    checksums = client.post(
        f"/api/v1/backup-versions/{fleet['version'].pk}/checksums/",
        {"checksums": [{"node": "node-9", "checksum": "0" * 64}]},
        content_type="application/json",
        headers=_headers(speech_ops),
    )
    assert checksums.status_code == 404
    assert not fleet["version"].checksums.filter(node="node-9").exists()


def test_the_api_lists_filter_by_the_team_the_workload_runs_for(client, fleet):
    """A fleet-wide reader sees both teams' versions and drills; ``?team=`` keeps one."""
    speech_version = make_version(fleet["speech_job"])
    speech_drill = make_drill(make_policy(fleet["speech_job"]), speech_version)
    headers = _headers(UserFactory(role="finance"), read_only=True)

    def ids(path):
        response = client.get(path, headers=headers)
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["results"]]

    assert sorted(ids("/api/v1/backup-versions/")) == sorted(
        [fleet["version"].pk, speech_version.pk]
    )
    assert ids("/api/v1/backup-versions/?team=vision") == [fleet["version"].pk]
    assert ids("/api/v1/backup-versions/?team=speech") == [speech_version.pk]
    assert ids("/api/v1/backup-versions/?team=shared") == []
    assert ids("/api/v1/restore-drills/?team=speech") == [speech_drill.pk]
    assert ids("/api/v1/restore-drills/?team=vision") == [fleet["drill"].pk]
