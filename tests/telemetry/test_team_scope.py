"""Telemetry by team: imports, hostname rules, pull sources, GPUs and reconciliation
through their pool (or workload), what each person may choose, and what an import
started by a team member may write: nothing of another team's pools.

Vision and Speech own a pool each; the shared pool is nobody's. The Speech lead is the
person acting unless a test says otherwise.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.accounts.models import ApiToken
from apps.accounts.scope import Scope
from apps.telemetry.ingest import importer
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    HostnameRule,
    ImportRun,
    PoolHourFlag,
    PoolHourlyUsage,
    PullSource,
)
from tests.factories import (
    HostnameRuleFactory,
    PoolFactory,
    PullSourceFactory,
    TeamFactory,
    UserFactory,
    WorkloadFactory,
)
from tests.test_urls_roles import _form_data

pytestmark = pytest.mark.django_db

COLUMNS = {"timestamp": "time", "device": "gpu", "hostname": "host", "utilization_pct": "util"}
COLUMNS_TEXT = "timestamp=time,device=gpu,hostname=host,utilization_pct=util"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def fleet():
    vision, speech = TeamFactory(name="Vision"), TeamFactory(name="Speech")
    pools = {
        "vision": PoolFactory(name="Vision pool", team=vision),
        "speech": PoolFactory(name="Speech pool", team=speech),
        "shared": PoolFactory(name="Shared pool"),
    }
    return {"vision": vision, "speech": speech, "pools": pools}


@pytest.fixture
def speech_lead(client, fleet):
    user = UserFactory(role="lead", teams=[fleet["speech"]])
    client.force_login(user)
    return user


def _headers(user):
    _, plaintext = ApiToken.issue(
        user=user, description="agent", lifetime=timedelta(days=1), read_only=False
    )
    return {"Authorization": f"Bearer {plaintext}"}


def _csv(rows) -> str:
    return "time,gpu,host,util\n" + "".join(f"{t.isoformat()},{g},{h},{u}\n" for t, g, h, u in rows)


def _hour_ago():
    return (datetime.now(UTC) - timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)


# --- Choices ----------------------------------------------------------------------------


def test_the_upload_forms_offer_and_take_only_pools_and_workloads_in_scope(
    client, fleet, speech_lead
):
    url = reverse("telemetry:import_create")
    pools = client.get(url).context["form"].fields["pool"].queryset
    assert sorted(pool.name for pool in pools) == ["Shared pool", "Speech pool"]
    response = client.post(
        url,
        {
            "kind": "gpu",
            "format": "csv",
            "columns": COLUMNS_TEXT,
            "time_zone": "UTC",
            "pool": fleet["pools"]["vision"].pk,
            "file": SimpleUploadedFile("x.csv", _csv([(_hour_ago(), "GPU-1", "h", 5)]).encode()),
        },
    )
    assert response.status_code == 200
    assert "Select a valid choice" in response.context["form"].errors["pool"][0]
    vision_workload = WorkloadFactory(pool=fleet["pools"]["vision"])
    refused = client.post(
        url,
        {
            "kind": "requests",
            "format": "csv",
            "time_zone": "UTC",
            "workload": vision_workload.pk,
            "file": SimpleUploadedFile("r.csv", b"ts,i,o\n"),
        },
    )
    assert "Select a valid choice" in refused.context["form"].errors["workload"][0]
    assert not ImportRun.objects.exists()


def test_a_rule_names_a_pool_in_scope(client, fleet, speech_lead):
    url = reverse("telemetry:rule_create")
    data = {"pool": fleet["pools"]["vision"].pk, "hostname_pattern": "vis-*", "priority": "1"}
    response = client.post(url, data)
    assert "Select a valid choice" in response.context["form"].errors["pool"][0]
    assert not HostnameRule.objects.exists()
    assert client.post(url, {**data, "pool": fleet["pools"]["speech"].pk}).status_code == 302


def test_rules_and_sources_of_another_team_are_not_listed_nor_reachable(client, fleet, speech_lead):
    vision = fleet["pools"]["vision"]
    rule = HostnameRuleFactory(pool=vision, hostname_pattern="vis-*")
    source = PullSourceFactory(name="vision-exporter", pool=vision)
    PullSourceFactory(name="fleet-exporter")  # no pool: shared
    rules = client.get(reverse("telemetry:rule_list")).context["rules"]
    assert list(rules) == []
    sources = client.get(reverse("telemetry:pull_source_list")).context["sources"]
    assert [s.name for s in sources] == ["fleet-exporter"]
    assert client.post(reverse("telemetry:rule_delete", args=[rule.pk])).status_code == 404
    assert HostnameRule.objects.filter(pk=rule.pk).exists()
    edit = reverse("telemetry:pull_source_edit", args=[source.slug])
    assert client.post(edit, {"name": "taken", "enabled": ""}).status_code == 404
    assert PullSource.objects.get(pk=source.pk).name == "vision-exporter"


def test_a_pull_source_names_a_pool_in_scope_on_its_page_and_in_the_api(client, fleet, speech_lead):
    url = reverse("telemetry:pull_source_create")
    data = {
        **_form_data(client.get(url).context["form"]),
        "name": "Mine",
        "slug": "mine",
        "kind": "dcgm_exporter",
        "url": "http://node:9400/metrics",
        "interval_seconds": "60",
        "pool": str(fleet["pools"]["vision"].pk),
    }
    response = client.post(url, data)
    assert "Select a valid choice" in response.context["form"].errors["pool"][0]
    api = client.post(
        "/api/v1/pull-sources/",
        {
            "name": "Mine",
            "slug": "mine",
            "kind": "dcgm_exporter",
            "url": "http://node.example:9400/metrics",
            "pool": fleet["pools"]["vision"].slug,
        },
        content_type="application/json",
        headers=_headers(speech_lead),
    )
    assert api.status_code == 400
    assert api.json() == {
        "pool": [f"Object with slug={fleet['pools']['vision'].slug} does not exist."]
    }
    assert not PullSource.objects.exists()


# --- GPUs -------------------------------------------------------------------------------


def _device(uuid, hostname, pool=None):
    moment = datetime(2026, 11, 1, 10, tzinfo=UTC)
    return GpuDevice.objects.create(
        key=uuid, uuid=uuid, hostname=hostname, pool=pool, first_seen_at=moment, last_seen_at=moment
    )


def test_gpus_go_only_to_pools_in_scope_and_another_teams_stay_where_they_are(
    client, fleet, speech_lead
):
    waiting = _device("GPU-wait", "node-1")
    theirs = _device("GPU-theirs", "vis-1", pool=fleet["pools"]["vision"])
    assign = reverse("telemetry:device_assign")
    client.post(assign, {"pool": fleet["pools"]["vision"].pk, "devices": [waiting.pk]})
    waiting.refresh_from_db()
    assert waiting.pool is None
    client.post(assign, {"pool": fleet["pools"]["speech"].pk, "devices": [theirs.pk]})
    theirs.refresh_from_db()
    assert theirs.pool == fleet["pools"]["vision"]
    client.post(assign, {"pool": fleet["pools"]["speech"].pk, "devices": [waiting.pk]})
    waiting.refresh_from_db()
    assert waiting.pool == fleet["pools"]["speech"]


def test_the_triage_suggests_only_pools_in_scope(client, fleet, speech_lead):
    HostnameRuleFactory(pool=fleet["pools"]["vision"], hostname_pattern="vis-*", priority=1)
    HostnameRuleFactory(pool=fleet["pools"]["speech"], hostname_pattern="sp-*", priority=2)
    vision_host, speech_host = _device("GPU-v", "vis-7"), _device("GPU-s", "sp-7")
    page = client.get(reverse("telemetry:device_unassigned"))
    suggestions = {device.uuid: device.suggestion for device in page.context["page"]}
    assert suggestions["GPU-s"].pool == fleet["pools"]["speech"]
    suggested = suggestions["GPU-v"] and suggestions["GPU-v"].pool
    assert suggested != fleet["pools"]["vision"]
    assert "Vision pool" not in page.content.decode()
    assert page.context["rule_count"] == 1
    client.post(
        reverse("telemetry:device_assign"),
        {"action": "suggested", "devices": [vision_host.pk, speech_host.pk]},
    )
    vision_host.refresh_from_db()
    speech_host.refresh_from_db()
    assert speech_host.pool == fleet["pools"]["speech"]
    assert vision_host.pool != fleet["pools"]["vision"]


# --- Imports work on what their starter could see ---------------------------------------


def test_an_import_stores_nothing_of_another_teams_gpus(fleet):
    """GPU-v is in the Vision pool, GPU-s in Speech's; GPU-new is first seen and its
    hostname matches a Vision rule and a Speech one after it: the Speech member's import
    keeps GPU-s, refuses GPU-v line by line and leaves GPU-new to the Speech rule."""
    _device("GPU-v", "vis-1", pool=fleet["pools"]["vision"])
    _device("GPU-s", "sp-1", pool=fleet["pools"]["speech"])
    HostnameRuleFactory(pool=fleet["pools"]["vision"], hostname_pattern="new-*", priority=1)
    HostnameRuleFactory(pool=fleet["pools"]["speech"], hostname_pattern="new-*", priority=2)
    hour = _hour_ago()
    text = _csv(
        [
            (hour, "GPU-v", "vis-1", 90),
            (hour, "GPU-s", "sp-1", 40),
            (hour + timedelta(minutes=1), "GPU-v", "vis-1", 91),
            (hour, "GPU-new", "new-1", 10),
        ]
    )
    run = ImportRun.objects.create(
        kind="gpu", format="csv", source="api", skip_bad_rows=True, status="running"
    )
    run.started_at = run.created_at
    summary = importer.run_import(
        run,
        text,
        columns=COLUMNS,
        tz=UTC,
        scope=Scope(everything=False, team_ids=frozenset({fleet["speech"].pk})),
    )
    assert (summary.accepted, summary.rejected) == (2, 2)
    assert [error.line_number for error in summary.errors] == [2, 4]
    assert str(summary.errors[0].message) == (
        "line 2: GPU GPU-v is in a pool outside your teams: its samples are not stored"
    )
    stored = set(GpuSample.objects.values_list("device__uuid", flat=True))
    assert stored == {"GPU-s", "GPU-new"}
    assert GpuDevice.objects.get(uuid="GPU-new").pool == fleet["pools"]["speech"]
    vision_device = GpuDevice.objects.get(uuid="GPU-v")
    assert vision_device.last_seen_at == datetime(2026, 11, 1, 10, tzinfo=UTC)
    assert {pool_id for pool_id, _hour in summary.touched_pool_hours} == {
        fleet["pools"]["speech"].pk
    }


def test_without_skipping_bad_rows_another_teams_gpu_refuses_the_file(fleet):
    _device("GPU-v", "vis-1", pool=fleet["pools"]["vision"])
    run = ImportRun.objects.create(kind="gpu", format="csv", source="api", status="running")
    summary = importer.run_import(
        run,
        _csv([(_hour_ago(), "GPU-v", "vis-1", 90), (_hour_ago(), "GPU-a", "a", 1)]),
        columns=COLUMNS,
        tz=UTC,
        scope=Scope(everything=False, team_ids=frozenset({fleet["speech"].pk})),
    )
    assert summary.rejected_whole
    assert not GpuSample.objects.exists() and not GpuDevice.objects.filter(uuid="GPU-a").exists()


def test_an_upload_carries_its_uploaders_scope_to_the_worker(
    client, fleet, speech_lead, eager_celery, django_capture_on_commit_callbacks
):
    _device("GPU-v", "vis-1", pool=fleet["pools"]["vision"])
    text = _csv([(_hour_ago(), "GPU-v", "vis-1", 90), (_hour_ago(), "GPU-s", "sp-1", 40)])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("telemetry:import_create"),
            {
                "kind": "gpu",
                "format": "csv",
                "columns": COLUMNS_TEXT,
                "time_zone": "UTC",
                "skip_bad_rows": "on",
                "pool": fleet["pools"]["speech"].pk,
                "file": SimpleUploadedFile("mixed.csv", text.encode()),
            },
        )
    assert response.status_code == 302
    run = ImportRun.objects.get()
    assert run.task_arguments["scope"] == f"t{fleet['speech'].pk}"
    assert (run.status, run.rows_accepted, run.rows_rejected) == ("succeeded", 1, 1)
    assert set(GpuSample.objects.values_list("device__uuid", flat=True)) == {"GPU-s"}


def test_the_api_refuses_another_teams_pool_as_an_unknown_one_and_scopes_the_push(
    client, fleet, speech_lead
):
    ops = UserFactory(role="ops", teams=[fleet["speech"]])
    headers = _headers(ops)
    text = _csv([(_hour_ago(), "GPU-x", "h", 5)])
    payload = {"format": "csv", "columns": COLUMNS, "text": text}
    for slug in (fleet["pools"]["vision"].slug, "no-such-pool"):
        response = client.post(
            "/api/v1/telemetry/gpu/",
            {**payload, "pool": slug},
            content_type="application/json",
            headers=headers,
        )
        assert response.status_code == 400
        assert response.json() == {"pool": [f"Object with slug={slug} does not exist."]}
    assert not ImportRun.objects.exists()
    _device("GPU-v", "vis-1", pool=fleet["pools"]["vision"])
    pushed = client.post(
        "/api/v1/telemetry/gpu/",
        {
            **payload,
            "text": _csv([(_hour_ago(), "GPU-v", "vis-1", 90)]),
            "pool": fleet["pools"]["speech"].slug,
        },
        content_type="application/json",
        headers=headers,
    )
    assert pushed.status_code == 422
    assert pushed.json()["errors"] == [
        {
            "line": 2,
            "message": "line 2: GPU GPU-v is in a pool outside your teams: its samples are "
            "not stored",
        }
    ]


def test_the_same_content_as_another_teams_import_is_not_named(client, fleet, speech_lead):
    text = _csv([(_hour_ago(), "GPU-x", "h", 5)])
    ImportRun.objects.create(
        kind="gpu",
        format="csv",
        source="upload",
        status="succeeded",
        pool=fleet["pools"]["vision"],
        content_sha256=importer.content_sha256(text),
    )
    form = client.post(
        reverse("telemetry:import_create"),
        {
            "kind": "gpu",
            "format": "csv",
            "columns": COLUMNS_TEXT,
            "time_zone": "UTC",
            "pool": fleet["pools"]["speech"].pk,
            "file": SimpleUploadedFile("again.csv", text.encode()),
        },
    )
    assert form.status_code == 302  # accepted: its samples are stored once anyway


# --- Import runs ------------------------------------------------------------------------


def test_who_sees_which_import(client, fleet, speech_lead):
    other_lead = UserFactory(role="lead", teams=[fleet["speech"]])
    runs = {
        "speech pool": ImportRun.objects.create(
            kind="gpu", format="csv", source="upload", pool=fleet["pools"]["speech"]
        ),
        "vision pool": ImportRun.objects.create(
            kind="gpu", format="csv", source="upload", pool=fleet["pools"]["vision"]
        ),
        "vision workload": ImportRun.objects.create(
            kind="requests",
            format="csv",
            source="upload",
            workload=WorkloadFactory(pool=fleet["pools"]["vision"]),
        ),
        "mine, no pool": ImportRun.objects.create(
            kind="gpu", format="csv", source="upload", created_by=speech_lead
        ),
        "a colleague's, no pool": ImportRun.objects.create(
            kind="gpu", format="csv", source="upload", created_by=other_lead
        ),
        "a shared source's pull": ImportRun.objects.create(
            kind="gpu", format="dcgm", source="scrape"
        ),
    }
    seen = {
        name
        for name, run in runs.items()
        if client.get(reverse("telemetry:import_detail", args=[run.pk])).status_code == 200
    }
    assert seen == {"speech pool", "mine, no pool", "a shared source's pull"}
    listed = {run.pk for run in client.get(reverse("telemetry:import_list")).context["page"]}
    assert listed == {runs[name].pk for name in seen}
    client.force_login(UserFactory(role="finance"))
    assert {run.pk for run in client.get(reverse("telemetry:import_list")).context["page"]} == {
        run.pk for run in runs.values()
    }


# --- Reconciliation and usage -----------------------------------------------------------


def test_reconciliation_and_usage_hold_the_pools_in_scope(client, fleet, speech_lead):
    hour = datetime(2026, 11, 2, 10, tzinfo=UTC)
    for key in ("vision", "speech"):
        pool = fleet["pools"][key]
        PoolHourFlag.objects.create(pool=pool, hour=hour, kind="over_reported", gpus=1)
        PoolHourlyUsage.objects.create(
            pool=pool, hour=hour, reporting_gpus=4, capacity_gpu_hours=16, busy_gpu_hours=2
        )
    page = client.get(reverse("telemetry:reconciliation"))
    assert [day.pool.name for day in page.context["pool_days"]] == ["Speech pool"]
    assert [pool.name for pool in page.context["pools"]] == ["Shared pool", "Speech pool"]
    assert "Vision pool" not in page.content.decode()
    headers = _headers(speech_lead)
    api = client.get("/api/v1/reconciliation/", headers=headers).json()
    assert [row["pool"] for row in api["results"]] == [fleet["pools"]["speech"].slug]
    vision = fleet["pools"]["vision"].slug
    for path in (
        f"/api/v1/reconciliation/?pool={vision}",
        f"/api/v1/usage/hourly/?pool={vision}",
        "/api/v1/usage/hourly/?pool=no-such-pool",
    ):
        response = client.get(path, headers=headers)
        assert response.status_code == 404, path
        assert "does not exist" not in response.json()["detail"]
    unknown = client.get("/api/v1/usage/hourly/?pool=no-such-pool", headers=headers).json()
    hidden = client.get(f"/api/v1/usage/hourly/?pool={vision}", headers=headers).json()
    assert hidden["detail"] == unknown["detail"].replace("no-such-pool", vision)
    panel = reverse("telemetry:pool_panel", args=[vision])
    assert client.get(panel, headers={"HX-Request": "true"}).status_code == 404


def test_the_storage_page_is_fleet_wide(client, fleet):
    """Raw-sample partitions and purges are the fleet's, not a team's: Ops of any team
    read the same page."""
    client.force_login(UserFactory(role="ops", teams=[fleet["speech"]]))
    assert client.get(reverse("telemetry:storage")).status_code == 200


def test_the_pull_source_list_filters_by_its_pools_team(client, fleet):
    PullSourceFactory(name="vision-exporter", pool=fleet["pools"]["vision"])
    PullSourceFactory(name="shared-exporter", pool=fleet["pools"]["shared"])
    PullSourceFactory(name="fleet-exporter")
    headers = _headers(UserFactory(role="finance"))

    def names(query):
        response = client.get(f"/api/v1/pull-sources/?{query}", headers=headers)
        assert response.status_code == 200, response.content
        return sorted(row["name"] for row in response.json()["results"])

    assert names("team=vision") == ["vision-exporter"]
    assert names("team=shared") == ["fleet-exporter", "shared-exporter"]
    assert names("team=speech") == []


# --- What a pull source may write --------------------------------------------------------


def _vision_gpus_scraped(scrape_server, fleet) -> tuple[str, set[str]]:
    """The Vision pool holds the GPUs of a recorded scrape, pulled once by a fleet-wide
    source: (the scrape's URL, the GPUs' keys)."""
    from apps.telemetry.pull import sources
    from tests.telemetry.test_pull import SCRAPES, expected_gpus

    url = f"{scrape_server}/metrics/{SCRAPES[0].stem}"
    fleet_source = PullSourceFactory(name="fleet", kind="dcgm_exporter", url=url)
    fleet_source.pool = fleet["pools"]["vision"]
    fleet_source.save()
    assert fleet_source.pull_scope_key == "all"
    sources.pull_source(fleet_source)
    keys = set(
        GpuDevice.objects.filter(pool=fleet["pools"]["vision"]).values_list("key", flat=True)
    )
    assert keys == set(expected_gpus(SCRAPES[0]))  # whole GPUs: the key is the UUID
    return url, keys


def _speech_source_for(client, fleet, url) -> PullSource:
    create = reverse("telemetry:pull_source_create")
    data = {
        **_form_data(client.get(create).context["form"]),
        "name": "Speech exporter",
        "slug": "speech-exporter",
        "kind": "dcgm_exporter",
        "url": url,
        "interval_seconds": "60",
        "pool": str(fleet["pools"]["speech"].pk),
    }
    assert client.post(create, data).status_code == 302
    return PullSource.objects.get(slug="speech-exporter")


def test_a_source_saved_by_a_team_member_stores_no_gpu_of_another_team(
    client, fleet, speech_lead, scrape_server
):
    from apps.telemetry.pull import sources

    url, vision_keys = _vision_gpus_scraped(scrape_server, fleet)
    samples_before = GpuSample.objects.count()
    source = _speech_source_for(client, fleet, url)
    assert source.pull_scope == Scope(everything=False, team_ids=frozenset({fleet["speech"].pk}))

    run = sources.pull_source(source)

    assert GpuSample.objects.count() == samples_before  # nothing of Vision's GPUs
    assert run.rows_accepted == 0 and run.rows_rejected == run.rows_total > 0
    assert "outside your teams" in run.errors[0]["message"]
    assert set(GpuDevice.objects.filter(key__in=vision_keys).values_list("pool", flat=True)) == {
        fleet["pools"]["vision"].pk
    }
    page = client.get(reverse("telemetry:pull_source_list")).content.decode()
    assert "Stores only GPUs of shared pools and of Speech" in page


def test_a_batch_of_scrapes_refuses_another_teams_gpus_and_stores_the_rest(
    client, fleet, speech_lead, scrape_server
):
    from apps.telemetry.pull import scrapes
    from tests.telemetry.test_pull import SCRAPES, expected_gpus

    url, _vision_keys = _vision_gpus_scraped(scrape_server, fleet)
    speech_source = _speech_source_for(client, fleet, url)
    other_url = f"{scrape_server}/metrics/{SCRAPES[1].stem}"
    fresh = PullSourceFactory(name="fresh", kind="dcgm_exporter", url=other_url)
    samples_before = GpuSample.objects.count()

    refused, stored = scrapes.pull_dcgm_exporters([speech_source, fresh])

    assert refused.rows_accepted == 0 and refused.rows_rejected == refused.rows_total > 0
    assert stored.rows_accepted > 0
    assert GpuSample.objects.count() - samples_before == stored.rows_accepted
    fresh_gpus = set(expected_gpus(SCRAPES[1]))
    assert (
        set(
            GpuSample.objects.filter(device__key__in=fresh_gpus)
            .values_list("device__key", flat=True)
            .distinct()
        )
        == fresh_gpus
    )


def test_an_api_edit_by_a_team_member_narrows_the_source_to_their_teams(client, fleet, speech_lead):
    source = PullSourceFactory(name="speech-node", pool=fleet["pools"]["speech"])
    assert source.pull_scope_key == "all"
    response = client.patch(
        f"/api/v1/pull-sources/{source.slug}/",
        {"interval_seconds": 120},
        content_type="application/json",
        headers=_headers(speech_lead),
    )
    assert response.status_code == 200
    source.refresh_from_db()
    assert source.pull_scope_key == f"t{fleet['speech'].pk}"


def test_hourly_aggregates_of_another_teams_gpu_are_not_stored(fleet, speech_lead):
    from apps.telemetry.ingest.parsers.rows import DeviceKey
    from apps.telemetry.models import GpuDeviceHour
    from apps.telemetry.pull.tsdb import DeviceHourRow, store_device_hours

    hour = _hour_ago()
    vision_gpu = GpuDevice.objects.create(
        key="GPU-vision-1",
        uuid="GPU-vision-1",
        first_seen_at=hour,
        last_seen_at=hour,
        pool=fleet["pools"]["vision"],
    )
    shared_gpu = GpuDevice.objects.create(
        key="GPU-shared-1",
        uuid="GPU-shared-1",
        first_seen_at=hour,
        last_seen_at=hour,
        pool=fleet["pools"]["shared"],
    )
    source = PullSourceFactory(name="tsdb", kind="prometheus_hourly")
    source.pull_scope_key = Scope(
        everything=False, team_ids=frozenset({fleet["speech"].pk})
    ).cache_key
    source.save()
    context = {
        "hostname": "h",
        "gpu_index": 0,
        "model_name": "",
        "driver_version": "",
        "mig_profile": "",
    }
    rows = [
        DeviceHourRow(
            DeviceKey(gpu.uuid), hour, "", "", "", context, samples=60, utilization_pct=50.0
        )
        for gpu in (vision_gpu, shared_gpu)
    ]
    problems = []

    written, _replaced, _devices = store_device_hours(
        source, rows, pulled_at=hour, problems=problems
    )

    assert written == 1
    assert list(GpuDeviceHour.objects.values_list("device__key", flat=True)) == ["GPU-shared-1"]
    assert problems == [
        "GPU GPU-vision-1 is in a pool outside the teams of the source's last editor; "
        "its hours are not stored"
    ]
