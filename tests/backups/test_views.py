"""Pages: the fleet view, the htmx drill form, history, delete confirmation, evidence."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from apps.backups.models import BackupVersion, RestoreDrill
from tests.backups.factories import SHA_A, make_drill, make_policy, make_version

pytestmark = pytest.mark.django_db


def test_fleet_view_lists_workloads_without_a_policy_and_ranks_policies(
    client, make_user, workload
):
    client.force_login(make_user("reader"))
    response = client.get(reverse("backups:policy_list"))
    assert "Workloads without a backup policy" in response.content.decode()
    assert "No backup policies yet" in response.content.decode()
    make_policy(workload)
    body = client.get(reverse("backups:policy_list")).content.decode()
    assert "The data version and training config are not kept" in body
    assert "120 min / 60 min" in body


def test_ops_records_a_drill_with_htmx_and_gets_the_compliance_fragment(
    client, make_user, workload
):
    policy = make_policy(workload)
    version = make_version(workload)
    client.force_login(make_user("ops"))
    start = timezone.now() - timezone.timedelta(minutes=30)
    data = {
        "version": version.pk,
        "restored_from_tier": "hot",
        "started_at": start.strftime("%Y-%m-%dT%H:%M"),
        "finished_at": (start + timezone.timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M"),
        "resumed": "on",
        "outcome": "restored",
        "observed_checksums": f"node-0 {SHA_A}\nnode-1 {SHA_A}",
        "evidence": SimpleUploadedFile("restore.log", b"resumed at step 1000\n"),
    }
    url = reverse("backups:drill_create", kwargs={"slug": workload.slug})
    response = client.post(url, data, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in body and 'id="compliance"' in body
    assert "Drill recorded: it passed." in body
    drill = RestoreDrill.objects.get(policy=policy)
    assert drill.performed_by.username.startswith("ops-")
    evidence = client.get(reverse("backups:drill_evidence", kwargs={"pk": drill.pk}))
    assert evidence.status_code == 200
    assert b"".join(evidence.streaming_content) == b"resumed at step 1000\n"
    assert "attachment" in evidence["Content-Disposition"]

    data["finished_at"] = (start - timezone.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M")
    data.pop("evidence")
    refused = client.post(url, data, headers={"HX-Request": "true"}).content.decode()
    assert "before it started" in refused and "The drill was not recorded" in refused
    assert RestoreDrill.objects.count() == 1


def test_lead_reads_the_history_of_policy_versions_and_drills(client, make_user, workload):
    ops = make_user("ops")
    client.force_login(ops)
    policy = make_policy(workload)
    version = make_version(workload)
    make_drill(policy, version)
    form_data = {
        "covered_items": ["checkpoint_weights"],
        "hot_location": "s3://ckpt/hot/",
        "hot_retention_count": "3",
        "rpo_minutes": "90",
        "rto_minutes": "60",
        "drill_frequency_days": "30",
    }
    response = client.post(
        reverse("backups:policy_edit", kwargs={"slug": workload.slug}), form_data
    )
    assert response.status_code == 302
    client.force_login(make_user("lead"))
    body = client.get(reverse("backups:policy_detail", kwargs={"slug": workload.slug}))
    text = body.content.decode()
    assert "RPO target (minutes)</strong>: 120 → 90" in text
    assert f"Version {version.name}" in text and "Drill of" in text
    assert ops.first_name in text or ops.username in text
    assert "Record a drill" not in text  # leads read, Ops record


def test_mark_stable_from_the_version_page(client, make_user, pool):
    from apps.pools.models import Workload, WorkloadKind

    chat = Workload.objects.create(
        name="Chat", slug="chat", kind=WorkloadKind.ONLINE_INFERENCE, pool=pool, gpu_count=2
    )
    make_policy(chat, covered_items=["model_artifact"])
    release = make_version(chat, tag="r1")
    url = reverse("backups:version_mark_stable", kwargs={"pk": release.pk})
    client.force_login(make_user("lead"))
    assert client.post(url).status_code == 403
    client.force_login(make_user("ops"))
    assert client.post(url).status_code == 302
    assert BackupVersion.objects.get(pk=release.pk).stable_since is not None
    page = client.get(reverse("backups:policy_detail", kwargs={"slug": "chat"})).content.decode()
    assert "No earlier stable release" in page


def test_delete_asks_first_and_versions_with_drills_are_kept(client, make_user, workload):
    policy = make_policy(workload)
    version = make_version(workload)
    make_drill(policy, version)
    client.force_login(make_user("ops"))
    url = reverse("backups:version_delete", kwargs={"pk": version.pk})
    assert "cannot be deleted" in client.get(url).content.decode()
    client.post(url)
    assert BackupVersion.objects.filter(pk=version.pk).exists()
    drill = policy.drills.get()
    drill_url = reverse("backups:drill_delete", kwargs={"pk": drill.pk})
    assert "This cannot be undone" in client.get(drill_url).content.decode()
    client.post(drill_url)
    assert not policy.drills.exists()
    policy.refresh_from_db()
    assert policy.last_drill_at is None


def test_evidence_is_for_signed_in_users_only(client, make_user, workload):
    policy = make_policy(workload)
    drill = make_drill(policy, make_version(workload), evidence=b"log\n")
    url = reverse("backups:drill_evidence", kwargs={"pk": drill.pk})
    assert client.get(url).status_code == 302
    client.force_login(make_user("reader"))
    assert client.get(url).status_code == 200
    assert client.get(reverse("backups:drill_detail", kwargs={"pk": drill.pk})).status_code == 200


def test_the_backups_tab_leads_to_the_fleet_view(client, make_user):
    client.force_login(make_user("reader"))
    body = client.get(reverse("backups:policy_list")).content.decode()
    assert '<li class="nav-item active">\n              <a class="nav-link" href="/backups/">' in (
        body
    )


def test_drills_deleted_in_the_admin_move_the_policys_schedule(client, make_user, workload):
    """One by one or as a bulk action, as the drill delete page does (services)."""
    policy = make_policy(workload)
    version = make_version(workload)
    first, second = make_drill(policy, version), make_drill(policy, version)
    policy.refresh_from_db()
    assert policy.last_drill_at is not None
    client.force_login(make_user("admin"))
    one = reverse("admin:backups_restoredrill_delete", args=[first.pk])
    assert client.post(one, {"post": "yes"}).status_code == 302
    bulk = {"action": "delete_selected", "_selected_action": [second.pk], "post": "yes"}
    assert client.post(reverse("admin:backups_restoredrill_changelist"), bulk).status_code == 302
    assert not policy.drills.exists()
    policy.refresh_from_db()
    assert policy.last_drill_at is None


def test_paging_one_table_keeps_the_others_page(client, make_user, workload):
    policy = make_policy(workload)
    versions = [make_version(workload, step=1000 * (n + 1)) for n in range(11)]
    for _ in range(11):
        make_drill(policy, versions[0])
    client.force_login(make_user("reader"))
    url = reverse("backups:policy_detail", kwargs={"slug": workload.slug})
    page = client.get(url, {"versions": 2}).content.decode()
    # The drills' "Next" link stays on the second page of versions, and back.
    assert 'href="?drills=2&amp;versions=2#compliance"' in page
    assert 'href="?versions=1&amp;drills=1#versions"' in page


def test_a_recorded_drill_sends_the_history_card_out_of_band(client, make_user, workload):
    make_policy(workload)
    version = make_version(workload)
    client.force_login(make_user("ops"))
    start = timezone.now() - timezone.timedelta(minutes=30)
    data = {
        "version": version.pk,
        "restored_from_tier": "hot",
        "started_at": start.strftime("%Y-%m-%dT%H:%M"),
        "finished_at": (start + timezone.timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M"),
        "resumed": "on",
        "outcome": "restored",
        "observed_checksums": f"node-0 {SHA_A}\nnode-1 {SHA_A}",
    }
    url = reverse("backups:drill_create", kwargs={"slug": workload.slug})
    headers = {"HX-Request": "true", "HX-Target": "compliance"}
    body = client.post(url, data, headers=headers).content.decode()
    assert '<div class="card" id="history" hx-swap-oob="true">' in body
    # The card lists the drill just recorded, after the #compliance element, not inside.
    history = body[body.index('id="history"') :]
    assert f"Drill of {RestoreDrill.objects.get().finished_at:%Y-%m-%d %H:%M}" in history
    assert body.index('id="history"') > body.rindex("</form>")
    # A refused drill changes no history: the card is not sent.
    data["finished_at"] = (start - timezone.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M")
    refused = client.post(url, data, headers=headers).content.decode()
    assert "before it started" in refused and 'id="history"' not in refused
    # The page itself draws the card in place, never out of band.
    page = client.get(reverse("backups:policy_detail", kwargs={"slug": workload.slug}))
    assert page.content.decode().count('id="history"') == 1
    assert "hx-swap-oob" not in page.content.decode()
