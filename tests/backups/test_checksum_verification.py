"""A blank checksum is "not verified": neither a match nor a mismatch, on the page, in the
API and in the drill's verdict and its policy's status."""

import importlib

import pytest
from django.apps import apps as django_apps
from django.urls import reverse

from apps.backups import services
from apps.backups.consistency import checksum_summary, compare_checksums
from apps.backups.models import BackupPolicy, DrillVerdict, RestoreDrill
from tests.backups.factories import SHA_A, SHA_B, make_drill, make_policy, make_version
from tests.backups.test_api import _headers

FOUR_NODES = tuple((f"node-{index}", SHA_A) for index in range(4))


# --- The comparison, without a database ------------------------------------------------


def test_no_checksums_after_the_restore_are_not_verified_not_mismatches():
    comparison = compare_checksums(dict(FOUR_NODES), {})
    # 4 registered, 0 observed: every node lacks one side, so 0 compared, 4 not verified.
    assert comparison.matched == [] and comparison.mismatches == []
    assert [row["node"] for row in comparison.unverified] == [
        "node-0",
        "node-1",
        "node-2",
        "node-3",
    ]
    assert comparison.compared == 0 and comparison.nodes == 4 and not comparison.verified
    assert (
        checksum_summary(matched=0, mismatched_nodes=[], unverified=4)
        == "Checksums not verified (none recorded)"
    )


def test_blank_strings_count_as_not_recorded_on_either_side():
    comparison = compare_checksums({"node-0": "", "node-1": SHA_A}, {"node-0": SHA_A})
    # node-0: registered blank; node-1: observed missing → both not verified.
    assert comparison.compared == 0 and len(comparison.unverified) == 2


def test_partial_checksums_match_where_recorded_and_say_how_many_were_not():
    observed = {"node-0": SHA_A, "node-1": SHA_A}
    comparison = compare_checksums(dict(FOUR_NODES), observed)
    # node-0 and node-1 equal on both sides (2 matched); node-2, node-3 observed blank.
    assert comparison.matched == ["node-0", "node-1"]
    assert comparison.compared == 2 and len(comparison.unverified) == 2
    assert (
        checksum_summary(matched=2, mismatched_nodes=[], unverified=2)
        == "Checksums match on 2 of 4 nodes/replicas; 2 not verified"
    )


def test_a_mismatch_is_only_two_recorded_checksums_that_differ():
    observed = {"node-0": SHA_A, "node-1": SHA_B, "node-2": ""}
    comparison = compare_checksums(dict(FOUR_NODES), observed)
    # node-0 matches, node-1 differs (a vs b), node-2 blank and node-3 absent: unverified.
    assert [row["node"] for row in comparison.mismatches] == ["node-1"]
    assert len(comparison.matched) == 1 and len(comparison.unverified) == 2
    assert (
        checksum_summary(matched=1, mismatched_nodes=["node-1"], unverified=2)
        == "Checksums differ on 1 of 4 nodes/replicas (node-1); 2 not verified"
    )


def test_every_node_matching_is_verified():
    comparison = compare_checksums(dict(FOUR_NODES), dict(FOUR_NODES))
    assert comparison.verified and comparison.compared == 4
    assert (
        checksum_summary(matched=4, mismatched_nodes=[], unverified=0)
        == "Checksums match on 4 of 4 nodes/replicas"
    )


# --- Drills, their policy, the pages and the API ----------------------------------------


@pytest.mark.django_db
def test_a_drill_with_blank_checksums_is_not_verified_and_not_failing(workload):
    policy = make_policy(workload)
    version = make_version(workload, checksums=FOUR_NODES)
    drill = make_drill(policy, version, observed=[])
    # 30 min against an RTO of 60 min, the version 50 min old against an RPO of 120 min,
    # resumed: nothing fails, but 0 of 4 nodes were compared.
    assert drill.failure_reasons == []
    assert drill.verdict == DrillVerdict.NOT_VERIFIED and drill.passed is False
    assert drill.checksums_compared == 0 and drill.checksum_mismatches == []
    assert len(drill.checksums_unverified) == 4
    assert drill.checksum_summary == "Checksums not verified (none recorded)"
    policy.refresh_from_db()
    assert policy.last_drill_passed is None
    assert policy.last_drill_verdict == DrillVerdict.NOT_VERIFIED
    summary = services.overdue_and_failing_summary()
    assert summary["failing"] == 0 and summary["not_verified"] == 1
    assert not BackupPolicy.objects.with_status().get(pk=policy.pk).is_failing


@pytest.mark.django_db
def test_a_drill_that_fails_on_time_with_blank_checksums_fails_on_time_only(workload):
    policy = make_policy(workload, rto_minutes=10)
    version = make_version(workload, checksums=FOUR_NODES)
    drill = make_drill(policy, version, observed=[])
    # 30 min against an RTO of 10 min fails; the checksums add no reason.
    assert drill.verdict == DrillVerdict.FAILED
    assert drill.failure_reasons == ["Took 30 min against an RTO of 10 min."]


@pytest.mark.django_db
def test_the_policy_and_drill_pages_say_not_verified(client, make_user, workload):
    policy = make_policy(workload)
    version = make_version(workload, checksums=FOUR_NODES)
    drill = make_drill(policy, version, observed=FOUR_NODES[:2])
    client.force_login(make_user("reader"))
    page = client.get(policy.get_absolute_url()).content.decode()
    # 2 observed and equal to the registered ones, 2 not recorded.
    assert "Checksums match on 2 of 4 nodes/replicas; 2 not verified" in page
    assert "Checksums differ" not in page
    assert 'id="latest-drill-result"><span class="text-yellow">Not verified</span>' in page
    detail = client.get(drill.get_absolute_url()).content.decode()
    assert "Checksums match on 2 of 4 nodes/replicas; 2 not verified" in detail
    assert 'id="checksums-unverified"' in detail and detail.count("not recorded") == 2
    listing = client.get(reverse("backups:policy_list")).content.decode()
    assert "not verified" in listing
    assert 'id="summary-not-verified">1<' in listing and 'id="summary-failing">0<' in listing


@pytest.mark.django_db
def test_recording_a_drill_without_checksums_says_not_verified(client, make_user, workload):
    from django.utils import timezone

    make_policy(workload)
    version = make_version(workload, checksums=FOUR_NODES)
    client.force_login(make_user("ops"))
    start = timezone.now() - timezone.timedelta(minutes=30)
    data = {
        "version": version.pk,
        "restored_from_tier": "hot",
        "started_at": start.strftime("%Y-%m-%dT%H:%M"),
        "finished_at": (start + timezone.timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M"),
        "resumed": "on",
        "outcome": "restored",
        "observed_checksums": "",
    }
    url = reverse("backups:drill_create", kwargs={"slug": workload.slug})
    body = client.post(url, data, headers={"HX-Request": "true"}).content.decode()
    assert "Drill recorded: not verified. Checksums not verified (none recorded)." in body, body
    assert "Checksums differ" not in body


@pytest.mark.django_db
def test_the_api_gives_the_verdict_and_the_unverified_nodes(client, make_user, workload):
    policy = make_policy(workload)
    version = make_version(workload, checksums=FOUR_NODES)
    make_drill(policy, version, observed=[("node-0", SHA_A), ("node-1", SHA_B)])
    headers = _headers(make_user("lead"), read_only=True)
    drills = client.get("/api/v1/restore-drills/", headers=headers).json()["results"]
    (drill,) = drills
    # node-0 matches, node-1 differs, node-2 and node-3 not recorded after the restore.
    assert drill["verdict"] == "failed" and drill["passed"] is False
    assert drill["checksums_compared"] == 2 and drill["checksums_matched"] == 1
    assert [row["node"] for row in drill["checksum_mismatches"]] == ["node-1"]
    assert drill["checksums_unverified"] == [
        {"node": "node-2", "expected": SHA_A, "observed": None},
        {"node": "node-3", "expected": SHA_A, "observed": None},
    ]
    assert drill["checksum_summary"] == (
        "Checksums differ on 1 of 4 nodes/replicas (node-1); 2 not verified"
    )
    assert drill["failure_reasons"] == [
        "Checksums differ on 1 of 4 nodes/replicas (node-1); 2 not verified."
    ]
    make_drill(policy, version, observed=[])
    unverified = client.get("/api/v1/restore-drills/?verdict=not_verified", headers=headers)
    assert unverified.json()["count"] == 1
    assert unverified.json()["results"][0]["checksum_summary"] == (
        "Checksums not verified (none recorded)"
    )
    assert client.get("/api/v1/restore-drills/?verdict=maybe", headers=headers).status_code == 400
    body = client.get(
        reverse("backup-policy-detail", kwargs={"workload": workload.slug}), headers=headers
    ).json()
    assert body["last_drill_verdict"] == "not_verified" and body["last_drill_passed"] is None


@pytest.mark.django_db
def test_the_migration_turns_stored_blank_mismatches_into_not_verified(workload):
    """Drills stored before: a blank observed checksum was a mismatch, the union of nodes
    was "compared", and the drill failed on it."""
    migration = importlib.import_module("apps.backups.migrations.0004_drill_verdict")
    policy = make_policy(workload)
    version = make_version(workload, checksums=FOUR_NODES)
    drill = make_drill(policy, version, observed=[])
    legacy = [{"node": f"node-{index}", "expected": SHA_A, "observed": None} for index in range(4)]
    RestoreDrill.objects.filter(pk=drill.pk).update(
        checksums_compared=4,
        checksums_matched=0,
        checksum_mismatches=legacy,
        checksums_unverified=[],
        failure_reasons=["Checksums differ on 4 of 4 nodes/replicas (node-0, node-1, …)."],
        verdict=DrillVerdict.FAILED,
        passed=False,
    )
    BackupPolicy.objects.filter(pk=policy.pk).update(last_drill_passed=False)
    migration.reclassify_blank_checksums(django_apps, None)
    drill.refresh_from_db()
    assert drill.verdict == DrillVerdict.NOT_VERIFIED and drill.failure_reasons == []
    assert drill.checksums_compared == 0 and len(drill.checksums_unverified) == 4
    assert drill.checksum_summary == "Checksums not verified (none recorded)"
    policy.refresh_from_db()
    assert policy.last_drill_passed is None
