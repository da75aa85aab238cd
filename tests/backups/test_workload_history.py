"""Backups are part of a workload's history: a workload with a backup policy, versions or
drills is archived, never deleted, by any path (its delete page, the API, the admin, the
ORM); a workload with no history at all is still deleted."""

import pytest
from django.db.models import ProtectedError
from django.urls import reverse
from rest_framework.test import APIClient

from apps.backups.models import BackupPolicy, BackupVersion, RestoreDrill, VersionChecksum
from apps.pools.models import Workload
from tests.backups.factories import make_drill, make_policy, make_version

pytestmark = pytest.mark.django_db


def _backups_kept(workload) -> tuple[int, int, int, int]:
    return (
        BackupPolicy.objects.filter(workload=workload).count(),
        BackupVersion.objects.filter(workload=workload).count(),
        VersionChecksum.objects.filter(version__workload=workload).count(),
        RestoreDrill.objects.filter(policy__workload=workload).count(),
    )


def test_deleting_a_workload_never_cascades_to_its_backups(workload):
    policy = make_policy(workload)
    make_drill(policy, make_version(workload))
    assert _backups_kept(workload) == (1, 1, 2, 1)

    with pytest.raises(ProtectedError):
        Workload.objects.get(pk=workload.pk).delete()

    assert Workload.objects.filter(pk=workload.pk).exists()
    assert _backups_kept(workload) == (1, 1, 2, 1)


def test_a_workload_with_only_versions_is_protected_too(workload):
    make_version(workload)
    with pytest.raises(ProtectedError):
        Workload.objects.get(pk=workload.pk).delete()
    assert _backups_kept(workload) == (0, 1, 2, 0)


def test_a_workload_with_only_a_policy_is_protected_too(workload):
    make_policy(workload)
    with pytest.raises(ProtectedError):
        Workload.objects.get(pk=workload.pk).delete()
    assert _backups_kept(workload) == (1, 0, 0, 0)


def test_the_admin_cannot_delete_a_workload_with_backups(client, make_user, workload):
    """No drill yet: nothing else protects the policy and the versions."""
    make_policy(workload)
    make_version(workload)
    client.force_login(make_user("admin"))
    url = reverse("admin:pools_workload_delete", args=[workload.pk])
    page = client.get(url).content.decode()
    assert "protected" in page
    client.post(url, {"post": "yes"})
    assert Workload.objects.filter(pk=workload.pk).exists()
    assert _backups_kept(workload) == (1, 1, 2, 0)


def test_the_delete_page_lists_the_backups_it_keeps_and_archives(client, make_user, workload):
    policy = make_policy(workload)
    version = make_version(workload)
    make_drill(policy, version)
    make_drill(policy, version)
    client.force_login(make_user("lead"))
    url = reverse("pools:workload_delete", args=[workload.slug])
    page = client.get(url).content.decode()
    history = page.split('id="delete-history"', 1)[1].split("</ul>", 1)[0]
    assert "<li>1 backup versions</li>" in history
    assert "<li>1 backup policies</li>" in history
    assert "<li>2 restore drills</li>" in history
    assert reverse("pools:workload_archive", args=[workload.slug]) in page
    assert "cannot be undone" not in page

    client.post(url)
    assert Workload.objects.filter(pk=workload.pk).exists()
    assert _backups_kept(workload) == (1, 1, 2, 2)
    client.post(reverse("pools:workload_archive", args=[workload.slug]))
    workload.refresh_from_db()
    assert workload.archived_at is not None
    assert _backups_kept(workload) == (1, 1, 2, 2)


def test_api_delete_of_a_workload_with_backups_answers_409(make_user, workload):
    make_version(workload)
    api = APIClient()
    api.force_authenticate(make_user("lead"))
    response = api.delete(f"/api/v1/workloads/{workload.slug}/")
    assert response.status_code == 409
    body = response.json()
    assert "1 backup versions" in body["detail"]
    assert body["archive"].endswith(f"/api/v1/workloads/{workload.slug}/archive/")
    assert _backups_kept(workload) == (0, 1, 2, 0)


def test_a_workload_without_history_is_still_deleted(client, make_user, workload):
    client.force_login(make_user("lead"))
    url = reverse("pools:workload_delete", args=[workload.slug])
    page = client.get(url).content.decode()
    assert "cannot be undone" in page and 'id="delete-removes-nothing"' in page
    assert client.post(url).status_code == 302
    assert not Workload.objects.filter(pk=workload.pk).exists()
