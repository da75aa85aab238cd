"""Retire, don't delete: a pool or workload with usage history is archived (hidden from
lists, kept with its history in every report, export and API answer, restorable);
only one without history is deleted, after a confirmation that lists what goes."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.pools.models import Interruption, Pool, Workload, WorkloadKind
from apps.pools.services import save_pool
from apps.reports.cost.report import cost_report
from apps.telemetry.models import (
    HostnameRule,
    PoolDailyUsage,
    PoolHourlyUsage,
    WorkloadHourlyRequests,
)
from apps.telemetry.rollups.days import rebuild_days

ROLES = ["lead", "ops", "procurement", "reader", "admin"]
MAY_CHANGE_POOLS = {"lead", "admin"}
HISTORY_START = datetime(2026, 10, 1, tzinfo=UTC)
HISTORY_HOURS = 48


def _history(pool):
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=HISTORY_START + timedelta(hours=offset),
            reporting_gpus=pool.gpu_count,
            capacity_gpu_hours=pool.gpu_count,
            busy_gpu_hours=pool.gpu_count / 2,
            avg_utilization_pct=50.0,
            max_utilization_pct=60.0,
            max_memory_used_mib=1000.0,
            energy_kwh=3.0,
        )
        for offset in range(HISTORY_HOURS)
    )
    rebuild_days(HISTORY_START, HISTORY_START + timedelta(hours=HISTORY_HOURS))


def _requests(workload):
    WorkloadHourlyRequests.objects.create(
        workload=workload,
        hour=HISTORY_START,
        requests=100,
        input_tokens=1000,
        output_tokens=100,
        errors=0,
    )


@pytest.fixture
def spare_pool(pool, gpu_model):
    """A pool with no history and no workload: the only kind that can be deleted."""
    spare = Pool.objects.create(
        name="Spare pool",
        slug="spare-pool",
        purpose=pool.purpose,
        deployment=pool.deployment,
        gpu_model=gpu_model,
        gpu_count=8,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=pool.on_demand_price_per_gpu_hour_usd,
        in_service_from=pool.in_service_from,
    )
    save_pool(spare)
    return spare


def _client(make_user, role):
    from django.test import Client

    client = Client()
    client.force_login(make_user(role))
    return client


def _api(make_user, role):
    client = APIClient()
    client.force_authenticate(make_user(role))
    return client


@pytest.mark.django_db
def test_the_delete_page_of_a_pool_with_history_offers_to_archive(pool, make_user):
    _history(pool)
    client = _client(make_user, "lead")
    page = client.get(reverse("pools:pool_delete", args=[pool.slug])).content.decode()
    assert "is archived rather than deleted" in page and "history stays" in page
    assert f"{HISTORY_HOURS} hourly usage rows" in page
    assert reverse("pools:pool_archive", args=[pool.slug]) in page
    assert "cannot be undone" not in page

    # A POST to the delete URL itself still deletes nothing.
    pool.workloads.all().delete()
    client.post(reverse("pools:pool_delete", args=[pool.slug]))
    assert Pool.objects.filter(pk=pool.pk).exists()


@pytest.mark.django_db
def test_a_pool_with_history_and_workloads_can_be_archived_at_once(pool, workload, make_user):
    """Archiving keeps everything, so the workloads need not be moved first (deleting
    would need that)."""
    _history(pool)
    client = _client(make_user, "lead")
    page = client.get(reverse("pools:pool_delete", args=[pool.slug])).content.decode()
    assert reverse("pools:pool_archive", args=[pool.slug]) in page
    assert 'id="delete-archive-keeps"' in page and workload.name in page
    assert 'id="delete-blocked"' not in page
    client.post(reverse("pools:pool_archive", args=[pool.slug]))
    pool.refresh_from_db()
    assert pool.archived_at is not None


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_every_role_archives_and_restores_as_its_permissions_say(role, pool, make_user):
    _history(pool)
    client = _client(make_user, role)
    archive = client.post(reverse("pools:pool_archive", args=[pool.slug]))
    pool.refresh_from_db()
    if role not in MAY_CHANGE_POOLS:
        assert archive.status_code == 403 and pool.archived_at is None
        assert client.get(reverse("pools:pool_archive", args=[pool.slug])).status_code in (
            403,
            405,
        )
        return
    assert archive.status_code == 302 and pool.archived_at is not None
    assert PoolHourlyUsage.objects.filter(pool=pool).count() == HISTORY_HOURS
    assert PoolDailyUsage.objects.filter(pool=pool).count() == 2
    detail = client.get(pool.get_absolute_url()).content.decode()
    assert "Archived" in detail and reverse("pools:pool_restore", args=[pool.slug]) in detail

    client.post(reverse("pools:pool_restore", args=[pool.slug]))
    pool.refresh_from_db()
    assert pool.archived_at is None


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_every_role_archives_workloads_as_its_permissions_say(role, workload, make_user):
    _requests(workload)
    client = _client(make_user, role)
    response = client.post(reverse("pools:workload_archive", args=[workload.slug]))
    workload.refresh_from_db()
    if role not in MAY_CHANGE_POOLS:
        assert response.status_code == 403 and workload.archived_at is None
        return
    assert response.status_code == 302 and workload.archived_at is not None
    client.post(reverse("pools:workload_restore", args=[workload.slug]))
    workload.refresh_from_db()
    assert workload.archived_at is None


@pytest.mark.django_db
def test_lists_hide_archived_objects_until_asked(pool, spare_pool, workload, make_user):
    _history(pool)
    _requests(workload)
    client = _client(make_user, "reader")
    pool.archived_at = workload.archived_at = datetime(2026, 11, 1, tzinfo=UTC)
    pool.save()
    workload.save()

    listed = client.get(reverse("pools:pool_list")).content.decode()
    assert spare_pool.name in listed and pool.name not in listed
    shown = client.get(reverse("pools:pool_list"), {"archived": "all"}, HTTP_HX_REQUEST="true")
    shown = shown.content.decode()
    assert pool.name in shown and spare_pool.name in shown and "Archived" in shown
    assert "<html" not in shown  # the htmx filter swaps the table only
    only = client.get(reverse("pools:pool_list"), {"archived": "true"}).content.decode()
    assert pool.name in only and spare_pool.name not in only

    workloads = client.get(reverse("pools:workload_list")).content.decode()
    assert workload.name not in workloads
    fragment = client.get(
        reverse("pools:workload_list"),
        {"archived": "all"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="workloads",
    ).content.decode()
    assert workload.name in fragment and "Archived" in fragment and "<html" not in fragment


@pytest.mark.django_db
def test_reports_keep_an_archived_pool_and_its_costs(pool, spare_pool):
    _history(pool)
    end = HISTORY_START + timedelta(hours=HISTORY_HOURS)
    before = {row.key: row.busy_gpu_hours for row in cost_report(HISTORY_START, end)}
    pool.archived_at = datetime(2026, 11, 1, tzinfo=UTC)
    pool.save()

    after = {row.key: row.busy_gpu_hours for row in cost_report(HISTORY_START, end)}

    assert after == before
    assert pool.gpu_count / 2 * HISTORY_HOURS in after.values()


@pytest.mark.django_db
def test_a_pool_without_history_is_deleted_after_listing_what_goes(spare_pool, make_user):
    HostnameRule.objects.create(pool=spare_pool, hostname_pattern="spare-*")
    client = _client(make_user, "lead")
    page = client.get(reverse("pools:pool_delete", args=[spare_pool.slug])).content.decode()
    assert "cannot be undone" in page and "These go with it" in page
    assert "1 hostname rules" in page

    client.post(reverse("pools:pool_delete", args=[spare_pool.slug]))

    assert not Pool.objects.filter(pk=spare_pool.pk).exists()


@pytest.mark.django_db
def test_a_workload_with_interruptions_is_archived_not_deleted(workload, make_user):
    Interruption.objects.create(
        workload=workload, occurred_at=HISTORY_START, cause="hardware", restart_minutes=5
    )
    client = _client(make_user, "lead")
    page = client.get(reverse("pools:workload_delete", args=[workload.slug])).content.decode()
    assert "1 interruptions" in page and "Archive" in page
    client.post(reverse("pools:workload_delete", args=[workload.slug]))
    assert Workload.objects.filter(pk=workload.pk).exists()


# --- API -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_api_delete_of_a_pool_with_history_answers_409_json(pool, make_user):
    _history(pool)
    pool.workloads.all().delete()
    response = _api(make_user, "lead").delete(f"/api/v1/pools/{pool.slug}/")
    assert response.status_code == 409
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert "usage history" in body["detail"]
    assert body["archive"].endswith(f"/api/v1/pools/{pool.slug}/archive/")
    assert PoolHourlyUsage.objects.filter(pool=pool).count() == HISTORY_HOURS


@pytest.mark.django_db
def test_api_delete_refused_by_the_database_answers_409_json(pool, workload, make_user):
    """A pool with workloads (PROTECT): without a handler, Django's ProtectedError would
    answer 500 HTML."""
    assert pool.workloads.exists()
    response = _api(make_user, "lead").delete(f"/api/v1/pools/{pool.slug}/")
    assert response.status_code == 409
    assert "workloads" in response.json()["detail"]
    assert Pool.objects.filter(pk=pool.pk).exists()


@pytest.mark.django_db
def test_api_deletes_a_pool_without_history(spare_pool, make_user):
    response = _api(make_user, "lead").delete(f"/api/v1/pools/{spare_pool.slug}/")
    assert response.status_code == 204
    assert not Pool.objects.filter(pk=spare_pool.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_api_archive_and_restore_for_every_role(role, pool, workload, make_user):
    _history(pool)
    client = _api(make_user, role)
    for kind, obj in (("pools", pool), ("workloads", workload)):
        archived = client.post(f"/api/v1/{kind}/{obj.slug}/archive/")
        obj.refresh_from_db()
        if role not in MAY_CHANGE_POOLS:
            assert archived.status_code == 403 and obj.archived_at is None
            continue
        assert archived.status_code == 200 and archived.json()["archived"] is True
        assert obj.archived_at is not None
        assert client.get(f"/api/v1/{kind}/{obj.slug}/").json()["archived"] is True
        restored = client.post(f"/api/v1/{kind}/{obj.slug}/restore/")
        assert restored.status_code == 200 and restored.json()["archived"] is False


@pytest.mark.django_db
def test_api_lists_filter_by_archived(pool, spare_pool, workload, architecture, make_user):
    pool.archived_at = datetime(2026, 11, 1, tzinfo=UTC)
    pool.save()
    Workload.objects.create(
        name="Archived job",
        slug="archived-job",
        kind=WorkloadKind.FULL_FINE_TUNE,
        model_architecture=architecture,
        pool=spare_pool,
        gpu_count=8,
        archived_at=datetime(2026, 11, 2, tzinfo=UTC),
    )
    client = _api(make_user, "reader")

    def slugs(path, archived=None):
        query = {"archived": archived} if archived else {}
        return {row["slug"] for row in client.get(path, query).json()["results"]}

    assert slugs("/api/v1/pools/") == {spare_pool.slug}
    assert slugs("/api/v1/pools/", "false") == {spare_pool.slug}
    assert slugs("/api/v1/pools/", "true") == {pool.slug}
    assert slugs("/api/v1/pools/", "all") == {pool.slug, spare_pool.slug}
    assert slugs("/api/v1/workloads/") == {workload.slug}
    assert slugs("/api/v1/workloads/", "true") == {"archived-job"}
    # An archived object stays addressable by its slug.
    assert client.get(f"/api/v1/pools/{pool.slug}/").status_code == 200


# --- the confirmation page names what its button does -------------------------------------


def _confirmation(client, url) -> tuple[str, str, list[str]]:
    """(page title, heading, submit buttons' labels) of a confirmation page."""
    page = client.get(url).content.decode()
    title = re.search(r"<title>(.*?) · gpufleet</title>", page, re.S).group(1).strip()
    heading = re.search(r'<h2 class="page-title">(.*?)</h2>', page, re.S).group(1).strip()
    body = page.split('class="page-body"', 1)[1]  # not the header's sign-out button
    buttons = re.findall(r'<button type="submit"[^>]*>\s*(.*?)\s*</button>', body)
    return title, heading, buttons


@pytest.mark.django_db
def test_the_page_of_a_pool_with_history_is_titled_archive(pool, make_user):
    _history(pool)
    client = _client(make_user, "lead")
    title, heading, buttons = _confirmation(client, reverse("pools:pool_delete", args=[pool.slug]))
    assert title == heading == f"Archive {pool.name}"
    assert "Archive" in buttons and "Delete" not in buttons


@pytest.mark.django_db
def test_the_page_of_a_workload_with_history_is_titled_archive(workload, make_user):
    _requests(workload)
    client = _client(make_user, "lead")
    url = reverse("pools:workload_delete", args=[workload.slug])
    title, heading, buttons = _confirmation(client, url)
    assert title == heading == f"Archive {workload.name}"
    assert "Archive" in buttons and "Delete" not in buttons


@pytest.mark.django_db
def test_the_page_of_an_archived_pool_says_it_is_archived(pool, make_user):
    _history(pool)
    pool.archived_at = datetime(2026, 11, 1, tzinfo=UTC)
    pool.save()
    client = _client(make_user, "lead")
    title, heading, buttons = _confirmation(client, reverse("pools:pool_delete", args=[pool.slug]))
    assert title == heading == f"{pool.name} is archived"
    assert buttons == []


@pytest.mark.django_db
def test_the_page_of_a_pool_without_history_is_titled_delete(spare_pool, workload, make_user):
    client = _client(make_user, "lead")
    url = reverse("pools:pool_delete", args=[spare_pool.slug])
    title, heading, buttons = _confirmation(client, url)
    assert title == heading == f"Delete {spare_pool.name}"
    assert buttons == ["Delete"]
    # Blocked by its workloads, without history: still a delete, once they are moved.
    title, heading, buttons = _confirmation(
        client, reverse("pools:pool_delete", args=[workload.pool.slug])
    )
    assert title == heading == f"Delete {workload.pool.name}"
    assert buttons == []
