"""Pull sources through the API and the page: created by slug with a kind, a URL, an
optional pool and label filters, by the roles that may."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.telemetry.models import PullSource
from tests.factories import PullSourceFactory

TSDB = {
    "name": "Fleet VictoriaMetrics",
    "slug": "fleet-vm",
    "kind": "prometheus_hourly",
    "url": "http://vm.example:8428",
    "label_filters": 'cluster = "a",namespace=~"ml-.*"',
}


@pytest.fixture
def bearer(make_user):
    def headers(role, *, read_only=False):
        _, plaintext = ApiToken.issue(
            user=make_user(role),
            description="script",
            lifetime=timedelta(days=1),
            read_only=read_only,
        )
        return {"Authorization": f"Bearer {plaintext}"}

    return headers


@pytest.mark.django_db
def test_a_lead_creates_an_hourly_tsdb_source_through_the_api(client, bearer, pool):
    response = client.post(
        "/api/v1/pull-sources/",
        {**TSDB, "pool": pool.slug},
        content_type="application/json",
        headers=bearer("lead"),
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    # The filters are stored in one canonical spelling.
    assert body["label_filters"] == 'cluster="a",namespace=~"ml-.*"'
    assert body["pool"] == pool.slug and body["pulled_until"] is None
    source = PullSource.objects.get(slug="fleet-vm")
    assert (source.kind, source.url, source.pool) == (
        PullSource.Kind.PROMETHEUS_HOURLY,
        "http://vm.example:8428",
        pool,
    )
    listed = client.get("/api/v1/pull-sources/?kind=prometheus_hourly", headers=bearer("ops"))
    assert [item["slug"] for item in listed.json()["results"]] == ["fleet-vm"]
    detail = client.get("/api/v1/pull-sources/fleet-vm/", headers=bearer("procurement"))
    assert detail.status_code == 200 and detail.json()["name"] == "Fleet VictoriaMetrics"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("role", "read_only", "status"),
    [("ops", False, 403), ("procurement", False, 403), ("lead", True, 403), ("admin", False, 201)],
)
def test_only_leads_with_a_read_write_token_create_sources(client, bearer, role, read_only, status):
    response = client.post(
        "/api/v1/pull-sources/",
        TSDB,
        content_type="application/json",
        headers=bearer(role, read_only=read_only),
    )
    assert response.status_code == status
    assert PullSource.objects.filter(slug="fleet-vm").exists() == (status == 201)


@pytest.mark.django_db
def test_the_api_refuses_label_filters_that_are_not_promql_and_filters_of_other_kinds(
    client, bearer
):
    headers = bearer("lead")
    bad = client.post(
        "/api/v1/pull-sources/",
        {**TSDB, "label_filters": "cluster=a"},
        content_type="application/json",
        headers=headers,
    )
    assert bad.status_code == 400
    assert "a value in double quotes" in bad.json()["label_filters"][0]
    wrong_kind = client.post(
        "/api/v1/pull-sources/",
        {**TSDB, "kind": "dcgm_exporter"},
        content_type="application/json",
        headers=headers,
    )
    assert wrong_kind.status_code == 400
    assert "prometheus_hourly sources only" in wrong_kind.json()["label_filters"][0]
    no_slug = client.post(
        "/api/v1/pull-sources/",
        {key: value for key, value in TSDB.items() if key != "slug"},
        content_type="application/json",
        headers=headers,
    )
    # Refused writes left nothing; a create without a slug takes the name's.
    assert no_slug.status_code == 201, no_slug.json()
    assert no_slug.json()["slug"] == "fleet-victoriametrics"
    assert list(PullSource.objects.values_list("slug", flat=True)) == ["fleet-victoriametrics"]


@pytest.mark.django_db
def test_the_form_asks_for_label_filters_for_the_hourly_kind_and_checks_them(client, make_user):
    client.force_login(make_user("lead"))
    url = reverse("telemetry:pull_source_create")
    page = client.get(url).content.decode()
    # The hourly section is shown only while the kind is the hourly one.
    assert 'data-show-values="prometheus_hourly"' in page
    assert 'name="label_filters"' in page

    refused = client.post(
        url,
        {**TSDB, "slug": "", "interval_seconds": "60", "label_filters": 'job="a" x'},
    )
    assert refused.status_code == 200
    assert "Not PromQL label matchers: expected" in refused.content.decode()
    assert not PullSource.objects.exists()

    saved = client.post(url, {**TSDB, "slug": "", "interval_seconds": "60", "enabled": "on"})
    assert saved.status_code == 302
    source = PullSource.objects.get()
    # The slug comes from the name, the filters in their canonical spelling.
    assert source.slug == "fleet-victoriametrics"
    assert source.label_filters == 'cluster="a",namespace=~"ml-.*"'

    # Another kind hides the section: a hidden field keeps what it had.
    edit = reverse("telemetry:pull_source_edit", kwargs={"slug": source.slug})
    client.post(
        edit,
        {
            **TSDB,
            "slug": source.slug,
            "kind": "prometheus",
            "interval_seconds": "60",
            "label_filters": "",
        },
    )
    source.refresh_from_db()
    assert source.kind == "prometheus"
    assert source.label_filters == 'cluster="a",namespace=~"ml-.*"'


@pytest.mark.django_db
def test_the_list_shows_where_each_source_stands(client, make_user):
    PullSourceFactory(
        name="Fleet VM",
        kind=PullSource.Kind.PROMETHEUS_HOURLY,
        label_filters='cluster="a"',
        last_status="warning",
        last_pulled_at=timezone.now(),
        last_message="The server answered 2026-12-01 10:00–11:00 UTC partially",
    )
    client.force_login(make_user("procurement"))
    page = client.get(reverse("telemetry:pull_source_list")).content.decode()
    assert "Prometheus-compatible TSDB, hourly aggregates" in page
    assert "cluster=&quot;a&quot;" in page
    assert "answered 2026-12-01 10:00–11:00 UTC partially" in page
    assert "Add a source" not in page  # procurement cannot add one


@pytest.mark.django_db
def test_the_list_of_a_fleet_scraped_node_by_node_goes_on_pages(client, make_user):
    """60 node sources: 25 a page (the lists' page size), in name order, the last page
    holding the 10 left."""
    from apps.telemetry.views import PAGE_SIZE

    for number in range(60):
        PullSourceFactory(name=f"node-{number:03d}", url=f"http://node-{number:03d}:9400/metrics")
    client.force_login(make_user("reader"))
    url = reverse("telemetry:pull_source_list")
    first = client.get(url).content.decode()
    assert first.count('id="pull-source-node-') == PAGE_SIZE == 25
    assert "Showing 1–25 of 60" in first
    last = client.get(url, {"page": 3}).content.decode()
    assert last.count('id="pull-source-node-') == 60 - 2 * PAGE_SIZE
    assert 'id="pull-source-node-059"' in last and 'id="pull-source-node-000"' not in last
