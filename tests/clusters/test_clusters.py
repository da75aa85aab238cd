"""Clusters: the ``default`` cluster every pool and pull source starts in, the pages, the
delete that pools block and Slurm jobs turn into an archive, and the API."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.clusters.models import DEFAULT_CLUSTER_SLUG, Cluster
from apps.slurm.services import import_sacct
from tests.factories import ClusterFactory, PoolFactory, PullSourceFactory, UserFactory

pytestmark = pytest.mark.django_db

SACCT = (
    "JobID|State|Start|End|Elapsed|AllocTRES\n"
    "9|COMPLETED|2026-11-02T08:00:00|2026-11-02T09:00:00|01:00:00|gres/gpu=2\n"
)


def test_pools_and_pull_sources_start_in_the_default_cluster():
    default = Cluster.objects.get(slug=DEFAULT_CLUSTER_SLUG)
    assert PoolFactory().cluster == default
    assert PullSourceFactory().cluster == default


def test_a_lead_creates_a_cluster_with_a_derived_slug(client):
    client.force_login(UserFactory(role="lead"))
    data = {"name": "北京训练", "kind": "slurm", "region": "cn-north", "timezone": "Asia/Shanghai"}
    response = client.post(reverse("clusters:cluster_create"), data)
    cluster = Cluster.objects.get(name="北京训练")
    assert response.url == cluster.get_absolute_url()
    assert (cluster.slug, cluster.kind) == ("bei-jing-xun-lian", "slurm")
    refused = client.post(
        reverse("clusters:cluster_create"), {**data, "name": "x", "timezone": "Mars/Base"}
    )
    assert "is not an IANA time zone" in refused.content.decode()
    page = client.get(reverse("clusters:cluster_list")).content.decode()
    assert "北京训练" in page and "Asia/Shanghai" in page


def test_pools_block_the_delete_and_slurm_jobs_turn_it_into_an_archive(client):
    client.force_login(UserFactory(role="lead"))
    cluster = ClusterFactory(name="Busy")
    pool = PoolFactory(cluster=cluster)
    delete_url = reverse("clusters:cluster_delete", kwargs={"slug": cluster.slug})
    assert pool.name in client.get(delete_url).content.decode()
    client.post(delete_url)
    assert Cluster.objects.filter(pk=cluster.pk).exists()

    pool.cluster = Cluster.objects.get(slug=DEFAULT_CLUSTER_SLUG)
    pool.save()
    import_sacct(cluster, SACCT, now=datetime(2026, 11, 3, tzinfo=UTC))
    page = client.get(delete_url).content.decode()
    assert "Archive Busy" in page
    client.post(delete_url)
    assert Cluster.objects.filter(pk=cluster.pk).exists()
    client.post(reverse("clusters:cluster_archive", kwargs={"slug": cluster.slug}))
    cluster.refresh_from_db()
    assert cluster.archived_at is not None
    listed = client.get(reverse("clusters:cluster_list"))
    assert cluster not in listed.context["clusters"]
    shown = client.get(reverse("clusters:cluster_list") + "?archived=1")
    assert cluster in shown.context["clusters"]
    client.post(reverse("clusters:cluster_restore", kwargs={"slug": cluster.slug}))
    cluster.refresh_from_db()
    assert cluster.archived_at is None

    empty = ClusterFactory(name="Empty")
    client.post(reverse("clusters:cluster_delete", kwargs={"slug": empty.slug}))
    assert not Cluster.objects.filter(pk=empty.pk).exists()


def test_the_default_cluster_and_a_cluster_with_pulls_are_never_deleted(client):
    from apps.slurm.models import SlurmPull

    lead = UserFactory(role="lead")
    client.force_login(lead)
    default = Cluster.objects.get(slug=DEFAULT_CLUSTER_SLUG)
    client.post(reverse("clusters:cluster_delete", kwargs={"slug": default.slug}))
    client.post(reverse("clusters:cluster_archive", kwargs={"slug": default.slug}))
    default.refresh_from_db()
    assert default.archived_at is None
    api = APIClient()
    api.force_authenticate(lead)
    answer = api.delete(reverse("cluster-detail", kwargs={"slug": default.slug}))
    assert answer.status_code == 409
    assert "default cluster stays" in answer.json()["detail"]

    pulled = ClusterFactory(name="Pulled")
    now = datetime(2026, 11, 3, tzinfo=UTC)
    SlurmPull.objects.create(cluster=pulled, started_at=now, since=now, until=now)
    answer = api.delete(reverse("cluster-detail", kwargs={"slug": pulled.slug}))
    assert answer.status_code == 409
    assert "1 Slurm pulls" in answer.json()["detail"]
    client.post(reverse("clusters:cluster_delete", kwargs={"slug": pulled.slug}))
    assert SlurmPull.objects.filter(cluster=pulled).count() == 1


def test_a_reader_may_not_archive(client):
    client.force_login(UserFactory(role="reader"))
    cluster = ClusterFactory()
    url = reverse("clusters:cluster_archive", kwargs={"slug": cluster.slug})
    assert client.post(url).status_code == 403


def test_the_detail_page_shows_pools_jobs_and_history(client):
    client.force_login(UserFactory(role="reader"))
    cluster = ClusterFactory(name="Hopper")
    PoolFactory(cluster=cluster, name="Hopper pool")
    import_sacct(cluster, SACCT, now=datetime(2026, 11, 3, tzinfo=UTC))
    page = client.get(cluster.get_absolute_url()).content.decode()
    assert "Hopper pool" in page
    # 2 GPUs × 1 h.
    assert "2.00 GPU-h" in page


def test_the_api_creates_without_a_slug_and_pools_name_their_cluster(gpu_model):
    client = APIClient()
    client.force_authenticate(UserFactory(role="lead"))
    response = client.post(
        reverse("cluster-list"), {"name": "East K8s", "kind": "kubernetes"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["slug"] == "east-k8s"
    assert (
        response.json()["slurm_pull_enabled"],
        response.json()["slurm_pull_interval_minutes"],
    ) == (
        False,
        60,
    )
    url = reverse("cluster-detail", kwargs={"slug": "east-k8s"})
    pulls = client.patch(
        url, {"slurm_pull_enabled": True, "slurm_pull_interval_minutes": 15}, format="json"
    )
    assert pulls.json()["slurm_pull_interval_minutes"] == 15, pulls.content
    too_often = client.patch(url, {"slurm_pull_interval_minutes": 1}, format="json")
    assert too_often.status_code == 400
    assert "slurm_pull_interval_minutes" in too_often.json()
    pool = PoolFactory()
    url = reverse("pool-detail", kwargs={"slug": pool.slug})
    assert client.get(url).json()["cluster"] == DEFAULT_CLUSTER_SLUG
    moved = client.patch(url, {"cluster": "east-k8s"}, format="json")
    assert moved.status_code == 200, moved.content
    assert moved.json()["cluster"] == "east-k8s"
    assert client.patch(url, {"cluster": "nowhere"}, format="json").status_code == 400
    blocked = client.delete(reverse("cluster-detail", kwargs={"slug": "east-k8s"}))
    assert blocked.status_code == 409


def test_the_pool_form_moves_a_pool_and_keeps_it_when_the_field_is_left_out(client):
    from tests.test_urls_roles import _rendered_form_data

    client.force_login(UserFactory(role="lead"))
    pool = PoolFactory()
    target = ClusterFactory(name="Target")
    url = reverse("pools:pool_edit", kwargs={"slug": pool.slug})
    data = _rendered_form_data(url, {"cluster": str(target.pk)})
    assert client.post(url, data).status_code == 302
    pool.refresh_from_db()
    assert pool.cluster == target
    data.pop("cluster")
    assert client.post(url, data).status_code == 302
    pool.refresh_from_db()
    assert pool.cluster == target
    detail = client.get(pool.get_absolute_url()).content.decode()
    assert f'<a href="{target.get_absolute_url()}">Target</a>' in detail


def test_a_pull_source_names_its_cluster_in_the_api():
    client = APIClient()
    client.force_authenticate(UserFactory(role="lead"))
    ClusterFactory(slug="east")
    created = client.post(
        reverse("pull-source-list"),
        {
            "name": "East Prometheus",
            "slug": "east-prom",
            "kind": "prometheus",
            "url": "http://prometheus.example:9090",
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["cluster"] == DEFAULT_CLUSTER_SLUG
    url = reverse("pull-source-detail", kwargs={"slug": "east-prom"})
    moved = client.patch(url, {"cluster": "east"}, format="json")
    assert moved.json()["cluster"] == "east"


def test_an_archived_cluster_takes_no_import():
    client = APIClient()
    client.force_authenticate(UserFactory(role="ops"))
    ClusterFactory(slug="old", archived_at=datetime(2026, 11, 1, tzinfo=UTC))
    body = {"cluster": "old", "text": SACCT}
    response = client.post(reverse("api-slurm-jobs"), body, format="json")
    assert response.status_code == 400 and "cluster" in response.json()
