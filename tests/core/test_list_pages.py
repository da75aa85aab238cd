"""The import, backup-policy and scenario lists sort by each sortable column both ways
(orders computed here from the objects), serve their table alone to htmx, and every page
shares one header while plotly and the import form's script load only where used."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.backups.models import BackupPolicy
from apps.pools.models import Workload, WorkloadKind
from apps.procurement.models import ComparisonExport, Scenario, ScenarioOption
from apps.telemetry.models import ImportRun
from tests.backups.factories import make_drill, make_policy, make_version

pytestmark = pytest.mark.django_db


def _listed(response):
    return [record.pk for record in response.context["page"]]


def _assert_sorts(client, url, records, key, sort, *, listed=_listed):
    assert len({key(record) for record in records}) == len(records), "ties prove nothing"
    ascending = [record.pk for record in sorted(records, key=key)]
    assert listed(client.get(url, {"sort": sort})) == ascending, sort
    assert listed(client.get(url, {"sort": f"-{sort}"})) == ascending[::-1], f"-{sort}"


# --- imports ---------------------------------------------------------------------------

IMPORT_KEYS = {
    "run": lambda run: run.pk,
    "when": lambda run: run.created_at,
    "file": lambda run: run.filename,
    "data": lambda run: (run.kind, run.format),
    "status": lambda run: run.status,
    "accepted": lambda run: run.rows_accepted,
    "duplicates": lambda run: run.rows_duplicate,
    "rejected": lambda run: run.rows_rejected,
}


@pytest.fixture
def runs(make_user):
    user = make_user("lead")
    now = timezone.now()
    specs = [
        # filename, kind, format, status, accepted, duplicate, rejected, hours ago
        ("c.prom", "gpu", "dcgm", "succeeded", 30, 1, 0, 5),
        ("a.csv", "requests", "azure-llm", "rejected", 10, 3, 7, 1),
        ("b.csv", "gpu", "nvidia-smi", "failed", 20, 2, 4, 9),
    ]
    made = []
    for filename, kind, format_, status, accepted, duplicate, rejected, hours in specs:
        run = ImportRun.objects.create(
            kind=kind,
            format=format_,
            source="upload",
            filename=filename,
            created_by=user,
            status=status,
            rows_accepted=accepted,
            rows_duplicate=duplicate,
            rows_rejected=rejected,
        )
        # auto_now_add: the creation time is set afterwards, out of order with the ids.
        ImportRun.objects.filter(pk=run.pk).update(created_at=now - timedelta(hours=hours))
        run.refresh_from_db()
        made.append(run)
    return made


@pytest.mark.parametrize("sort", sorted(IMPORT_KEYS))
def test_import_list_sorts_by_each_column_both_ways(client, runs, sort):
    # The runs name no pool: they are their uploader's (apps/telemetry/scoped.py).
    client.force_login(runs[0].created_by)
    _assert_sorts(client, reverse("telemetry:import_list"), runs, IMPORT_KEYS[sort], sort)


def test_import_list_is_newest_first_and_its_fragment_is_the_table(client, runs):
    client.force_login(runs[0].created_by)
    url = reverse("telemetry:import_list")
    newest_first = [run.pk for run in sorted(runs, key=lambda run: run.created_at)][::-1]
    assert _listed(client.get(url)) == newest_first
    fragment = client.get(
        url, {"sort": "rejected"}, headers={"HX-Request": "true", "HX-Target": "imports"}
    )
    body = fragment.content.decode()
    assert body.lstrip().startswith('<div id="imports">') and "page-header" not in body
    assert 'id="import-table"' in body and "When<div" in body
    rejected_cell = re.search(r'<td class="([^"]*)">7</td>', body)
    assert set(rejected_cell.group(1).split()) == {"text-end", "text-danger"}


# --- backup policies -------------------------------------------------------------------

POLICY_KEYS = {
    "workload": lambda policy: policy.workload.name,
    "coverage": lambda policy: policy.coverage_percent,
    "last_drill": lambda policy: policy.last_drill_at,
    "next_drill": lambda policy: policy.drill_due_at,
    "targets": lambda policy: policy.rpo_minutes,
    "risk": lambda policy: 100 - policy.coverage_percent,
}


@pytest.fixture
def policies(pool):
    items = [
        ["checkpoint_weights"],
        ["checkpoint_weights", "optimizer_state", "lr_scheduler_state"],
        ["checkpoint_weights", "optimizer_state"],
    ]
    made = []
    for index, (name, days_ago, rpo) in enumerate(
        [("Gamma", 3, 90), ("Alpha", 1, 240), ("Beta", 7, 30)]
    ):
        workload = Workload.objects.create(
            name=name,
            slug=name.lower(),
            kind=WorkloadKind.FULL_FINE_TUNE,
            pool=pool,
            gpu_count=8,
        )
        policy = make_policy(workload, covered_items=items[index], rpo_minutes=rpo)
        started = timezone.now() - timedelta(days=days_ago)
        make_drill(
            policy,
            make_version(workload),
            started_at=started,
            finished_at=started + timedelta(minutes=30),
        )
        policy.refresh_from_db()
        made.append(policy)
    # Recent drills that passed: nothing overdue or failing, so risk = missing coverage.
    assert not any(policy.is_overdue_at() or policy.last_drill_passed is False for policy in made)
    return made


@pytest.mark.parametrize("sort", sorted(POLICY_KEYS))
def test_policy_list_sorts_by_each_column_both_ways(client, make_user, policies, sort):
    client.force_login(make_user("reader"))
    _assert_sorts(client, reverse("backups:policy_list"), policies, POLICY_KEYS[sort], sort)


def test_policy_list_is_riskiest_first_until_a_header_is_chosen(client, make_user, policies):
    client.force_login(make_user("reader"))
    response = client.get(reverse("backups:policy_list"))
    by_risk = sorted(policies, key=lambda policy: policy.coverage_percent)
    assert _listed(response) == [policy.pk for policy in by_risk]
    fragment = client.get(
        reverse("backups:policy_list"),
        {"sort": "workload"},
        headers={"HX-Request": "true", "HX-Target": "policies"},
    ).content.decode()
    assert fragment.lstrip().startswith('<div id="policies">')
    assert "backup-summary" not in fragment and 'data-workload="alpha"' in fragment
    # Each target in the unit that suits it: 240 min ≥ 3 h is 4 h; 90 min stays minutes.
    assert "4 h / 60 min" in fragment and "90 min / 60 min" in fragment
    assert "overdue)" not in fragment and "on schedule" in fragment
    # The overdue note counts from the page's clock.
    BackupPolicy.objects.filter(pk=policies[0].pk).update(
        drill_due_at=timezone.now() - timedelta(days=2, hours=1)
    )
    body = client.get(reverse("backups:policy_list")).content.decode()
    assert re.search(r"\(2\sdays, 1\shour overdue\)", body)


# --- procurement scenarios -------------------------------------------------------------

SCENARIO_KEYS = {
    "name": lambda scenario: scenario.name,
    "horizon": lambda scenario: scenario.horizon_months,
    "currency": lambda scenario: scenario.currency,
    "options": lambda scenario: scenario.options.count(),
    "last_export": lambda scenario: scenario.exports.order_by("-created_at")[0].created_at,
}


@pytest.fixture
def scenarios(pool, gpu_model):
    now = timezone.now()
    made = []
    for name, horizon, currency, options, export_hours_ago in [
        ("Second", 24, "USD", 1, 2),
        ("First", 36, "EUR", 3, 9),
        ("Third", 12, "GBP", 2, 5),
    ]:
        scenario = Scenario.objects.create(
            name=name,
            slug=name.lower(),
            demand_pool=pool,
            demand_source="measured_pool",
            horizon_months=horizon,
            currency=currency,
        )
        for number in range(options):
            ScenarioOption.objects.create(
                scenario=scenario,
                name=f"Option {number}",
                kind="cloud_on_demand",
                gpu_model=gpu_model,
            )
        export = ComparisonExport.objects.create(scenario=scenario, format="csv")
        ComparisonExport.objects.filter(pk=export.pk).update(
            created_at=now - timedelta(hours=export_hours_ago)
        )
        made.append(scenario)
    return made


def _listed_scenarios(response):
    return [row.record.pk for row in response.context["table"].rows]


@pytest.mark.parametrize("sort", sorted(SCENARIO_KEYS))
def test_scenario_list_sorts_by_each_column_both_ways(client, make_user, scenarios, sort):
    client.force_login(make_user("procurement"))
    _assert_sorts(
        client,
        reverse("procurement:scenario_list"),
        scenarios,
        SCENARIO_KEYS[sort],
        sort,
        listed=_listed_scenarios,
    )


def test_scenario_fragment_is_the_table(client, make_user, scenarios):
    client.force_login(make_user("procurement"))
    body = client.get(
        reverse("procurement:scenario_list"),
        {"sort": "-horizon"},
        headers={"HX-Request": "true", "HX-Target": "scenarios"},
    ).content.decode()
    assert body.lstrip().startswith('<div id="scenarios">') and "<html" not in body
    assert body.index(">First</a>") < body.index(">Second</a>") < body.index(">Third</a>")
    assert "36 months" in body


# --- the page layout, the htmx helper and page-specific scripts ------------------------


def test_every_page_header_comes_from_the_layout(client, make_user, pool):
    client.force_login(make_user("lead"))
    for url in (reverse("pools:pool_list"), pool.get_absolute_url(), reverse("pools:pool_create")):
        body = client.get(url).content.decode()
        assert body.count('class="page-header d-print-none"') == 1, url
        assert '<div class="page-pretitle">' in body and '<h2 class="page-title' in body


def test_an_htmx_request_naming_no_fragment_gets_the_content_with_its_header(
    client, make_user, pool
):
    client.force_login(make_user("lead"))
    body = client.get(reverse("pools:pool_list"), headers={"HX-Request": "true"}).content
    body = body.decode()
    assert "<html" not in body and "<head" not in body and 'id="main-nav"' not in body
    assert "GPU pools</h2>" in body and 'id="pool-table"' in body


def test_plotly_loads_on_chart_pages_only(client, make_user, pool, workload):
    client.force_login(make_user("lead"))
    plotly = "vendor/plotly/plotly.min.js"
    for url in (
        reverse("dashboard:overview"),
        pool.get_absolute_url(),
        workload.get_absolute_url(),
        reverse("pools:calculator"),
        reverse("reports:report"),
    ):
        body = client.get(url).content.decode()
        assert plotly in body and body.index(plotly) < body.index("js/charts.js"), url
    for url in (reverse("pools:pool_list"), reverse("telemetry:import_list")):
        body = client.get(url).content.decode()
        assert plotly not in body and "js/charts.js" not in body, url


def test_the_import_form_script_loads_on_the_import_form_only(client, make_user):
    client.force_login(make_user("lead"))
    assert "js/import_form.js" in client.get(reverse("telemetry:import_create")).content.decode()
    assert "js/import_form.js" not in client.get(reverse("pools:pool_list")).content.decode()
