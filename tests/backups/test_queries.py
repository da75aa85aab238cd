"""Query counts of the pages and readings that run often: they must not grow per row."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.backups import services
from apps.pools.models import Workload, WorkloadKind
from tests.backups.factories import make_drill, make_policy, make_version

pytestmark = pytest.mark.django_db


def _fleet(pool, count, start=0):
    for index in range(start, start + count):
        workload = Workload.objects.create(
            name=f"Job {index}",
            slug=f"job-{index}",
            kind=WorkloadKind.FULL_FINE_TUNE,
            pool=pool,
            gpu_count=8,
        )
        policy = make_policy(workload)
        make_drill(policy, make_version(workload))


def _queries(call):
    with CaptureQueriesContext(connection) as context:
        call()
    return len(context.captured_queries)


def test_the_summary_counts_in_two_queries(pool):
    _fleet(pool, 3)
    assert _queries(services.overdue_and_failing_summary) == 2


def test_fleet_and_policy_pages_do_not_grow_with_the_fleet(client, make_user, pool):
    client.force_login(make_user("ops"))
    _fleet(pool, 2)
    list_url = reverse("backups:policy_list")
    detail_url = reverse("backups:policy_detail", kwargs={"slug": "job-0"})
    few = (_queries(lambda: client.get(list_url)), _queries(lambda: client.get(detail_url)))
    job = Workload.objects.get(slug="job-0")
    for index in range(3):
        make_drill(make_policy(job), make_version(job, tag=f"t{index}"))
    _fleet(pool, 4, start=2)
    many = (_queries(lambda: client.get(list_url)), _queries(lambda: client.get(detail_url)))
    assert many == few


def test_version_pages_read_the_policy_with_the_version(client, make_user, pool):
    client.force_login(make_user("ops"))
    _fleet(pool, 1)
    version = Workload.objects.get(slug="job-0").backup_versions.get()
    for url in (
        version.get_absolute_url(),
        reverse("backups:version_delete", kwargs={"pk": version.pk}),
    ):
        with CaptureQueriesContext(connection) as context:
            response = client.get(url)
        assert response.status_code == 200
        own_policy_reads = [
            query["sql"]
            for query in context.captured_queries
            if query["sql"].startswith("SELECT") and 'FROM "backups_backuppolicy"' in query["sql"]
        ]
        assert own_policy_reads == []
    assert response.context["object"] == version
    detail = client.get(version.get_absolute_url())
    assert detail.context["policy"] == make_policy(version.workload)
