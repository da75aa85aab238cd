"""Reports and the Overview over a team member's scope, against hand computations.

Three on-demand pools, every hour of two UTC days measured: team A's (4 GPUs at
$2.00/GPU-h), team B's (4 GPUs at $3.00/GPU-h) and a shared one (8 GPUs at $2.50/GPU-h)
running a workload of each team, whose labelled samples give team A's 3 GPUs and team
B's 4 GPUs every hour. The single pools' workloads run throughout on all their GPUs; the
shared pool's two are planned, so only their labels give them cost and its last GPU is
unallocated. A member of team A sees team A's pool and the shared one; the shared pool's
cost stays whole, team B's share of it is one unnamed row.
"""

import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from openpyxl import load_workbook

from apps.accounts.scope import EVERYTHING, scope_of
from apps.dashboard import selectors as overview_selectors
from apps.pools.models import Deployment, Pool, Purpose, Workload, WorkloadKind, WorkloadStatus
from apps.pools.services import save_pool
from apps.reports import selectors
from apps.reports.cost.rows import OTHER_TEAMS
from apps.reports.forms import report_filter_form
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyUsage
from apps.telemetry.rollups.days import rebuild_days
from tests.factories import TeamFactory, UserFactory, status_history
from tests.money import cents

START = datetime(2026, 3, 10, tzinfo=UTC)
HOURS = 48
END = START + timedelta(hours=HOURS)
FILTERS = {"start": "2026-03-10", "end": "2026-03-11", "tz": "UTC"}
# (name, slug, team key, GPUs, USD per GPU-hour)
POOLS = (
    ("Vision pool", "vision-pool", "a", 4, 2.00),
    ("Speech pool", "speech-pool", "b", 4, 3.00),
    ("Shared pool", "shared-pool", None, 8, 2.50),
)
# GPUs each workload of the shared pool is labelled with, every hour.
VISION_SHARED_GPUS, SPEECH_SHARED_GPUS = 3, 4
# What team A must never read, on any page or in any file.
TEAM_B_NAMES = ("Speech pool", "speech-pool", "Speech secret", "speech-secret", "Speech serve")


@pytest.fixture
def teams(db):
    return {"a": TeamFactory(name="Vision team"), "b": TeamFactory(name="Speech team")}


@pytest.fixture
def fleet(gpu_model, teams):
    pools = {}
    for name, slug, team_key, gpus, price in POOLS:
        pool = Pool(
            name=name,
            slug=slug,
            purpose=Purpose.INFERENCE,
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=gpu_model,
            gpu_count=gpus,
            gpus_per_node=gpus,
            on_demand_price_per_gpu_hour_usd=Decimal(str(price)),
            team=teams[team_key] if team_key else None,
        )
        save_pool(pool)
        pools[slug] = pool
    Pool.objects.update(in_service_from=START - timedelta(days=30))
    shared = pools["shared-pool"]
    for name, slug, pool in (
        ("Vision serve", "vision-serve", "vision-pool"),
        ("Speech serve", "speech-serve", "speech-pool"),
    ):
        serving = Workload.objects.create(
            name=name, slug=slug, kind=WorkloadKind.ONLINE_INFERENCE, pool=pools[pool], gpu_count=4
        )
        status_history(serving, (START - timedelta(days=30), WorkloadStatus.RUNNING))
    vision_finetune = Workload.objects.create(
        name="Vision finetune",
        slug="vision-finetune",
        kind=WorkloadKind.ONLINE_INFERENCE,
        pool=shared,
        gpu_count=VISION_SHARED_GPUS,
        team=teams["a"],
    )
    speech_secret = Workload.objects.create(
        name="Speech secret",
        slug="speech-secret",
        kind=WorkloadKind.ONLINE_INFERENCE,
        pool=shared,
        gpu_count=SPEECH_SHARED_GPUS,
        team=teams["b"],
    )
    usage, attributed = [], []
    for step in range(HOURS):
        hour = START + timedelta(hours=step)
        for pool in pools.values():
            usage.append(
                PoolHourlyUsage(
                    pool=pool,
                    hour=hour,
                    reporting_gpus=pool.gpu_count,
                    capacity_gpu_hours=pool.gpu_count,
                    busy_gpu_hours=pool.gpu_count / 2,
                    avg_utilization_pct=50,
                    max_utilization_pct=50,
                )
            )
        for workload, gpus in ((vision_finetune, VISION_SHARED_GPUS), (speech_secret, 4)):
            attributed.append(
                WorkloadHourlyUsage(
                    workload=workload, hour=hour, allocated_gpu_hours=gpus, busy_gpu_hours=gpus / 2
                )
            )
    PoolHourlyUsage.objects.bulk_create(usage)
    WorkloadHourlyUsage.objects.bulk_create(attributed)
    rebuild_days(START - timedelta(days=1), END + timedelta(days=1))
    return pools


def _sql_cost_usd(team_ids) -> float:
    """The cost of the pools of ``team_ids`` and the shared ones, summed in raw SQL over
    the hourly rows: GPU-hours × the on-demand price (every hour is measured)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT SUM(u.capacity_gpu_hours * p.on_demand_price_per_gpu_hour_usd) "
            "FROM telemetry_poolhourlyusage u JOIN pools_pool p ON p.id = u.pool_id "
            "WHERE u.hour >= %s AND u.hour < %s "
            "AND (p.team_id IS NULL OR p.team_id = ANY(%s))",
            [START, END, list(team_ids)],
        )
        return float(cursor.fetchone()[0])


def _hand_cost_usd(*slugs) -> float:
    prices = {slug: gpus * price for _name, slug, _team, gpus, price in POOLS}
    return sum(HOURS * prices[slug] for slug in slugs)


def _api_rows(client, group_by):
    response = client.get(
        reverse("api-report-cost"),
        {"start": START.isoformat(), "end": END.isoformat(), "group_by": group_by},
    )
    assert response.status_code == 200, response.content
    return response


@pytest.mark.django_db
@pytest.mark.parametrize("group_by", ["pool", "purpose", "workload"])
def test_a_team_members_total_is_the_cost_of_the_pools_in_scope(client, fleet, teams, group_by):
    member = UserFactory(teams=[teams["a"]])
    client.force_login(member)
    rows = _api_rows(client, group_by).json()
    total_usd = sum(Decimal(row["cost_usd"]) for row in rows)
    expected_usd = _hand_cost_usd("vision-pool", "shared-pool")  # 384 + 960
    assert expected_usd == pytest.approx(1344.0)
    assert total_usd == Decimal(cents(expected_usd))
    assert total_usd == Decimal(cents(_sql_cost_usd([teams["a"].pk])))
    client.force_login(UserFactory(role="finance"))
    fleet_rows = _api_rows(client, group_by).json()
    assert sum(Decimal(row["cost_usd"]) for row in fleet_rows) == Decimal(
        cents(_hand_cost_usd("vision-pool", "speech-pool", "shared-pool"))
    )


@pytest.mark.django_db
def test_other_teams_workloads_on_a_shared_pool_are_one_unnamed_row(client, fleet, teams):
    client.force_login(UserFactory(teams=[teams["a"]]))
    response = _api_rows(client, "workload")
    rows = {row["key"]: row for row in response.json()}
    assert set(rows) == {"vision-serve", "vision-finetune", OTHER_TEAMS, "unallocated"}
    shared_usd_per_gpu_hour = 2.50
    other = rows[OTHER_TEAMS]
    assert other["label"] == "Other teams' workloads"
    assert other["cost_usd"] == cents(SPEECH_SHARED_GPUS * HOURS * shared_usd_per_gpu_hour)
    assert rows["vision-finetune"]["cost_usd"] == cents(
        VISION_SHARED_GPUS * HOURS * shared_usd_per_gpu_hour
    )
    # The shared pool's rest (unallocated: 8 − 3 − 4 = 1 GPU), and its whole:
    # 8 GPUs × 48 h × $2.50.
    assert rows["unallocated"]["cost_usd"] == cents(1 * HOURS * shared_usd_per_gpu_hour)
    shared_rows_usd = sum(
        Decimal(rows[key]["cost_usd"]) for key in ("vision-finetune", OTHER_TEAMS, "unallocated")
    )
    assert shared_rows_usd == Decimal(cents(8 * HOURS * shared_usd_per_gpu_hour))
    for name in TEAM_B_NAMES:
        assert name not in response.content.decode()

    # The explanations of every row name none of team B's workloads either.
    explained = client.get(
        reverse("api-report-cost"),
        {"start": START.isoformat(), "end": END.isoformat(), "group_by": "workload", "explain": 1},
    ).content.decode()
    for name in TEAM_B_NAMES:
        assert name not in explained

    # The fleet-wide reader sees team B's workload by name and no such row.
    client.force_login(UserFactory(role="finance"))
    fleet_rows = {row["key"] for row in _api_rows(client, "workload").json()}
    assert "speech-secret" in fleet_rows
    assert OTHER_TEAMS not in fleet_rows


@pytest.mark.django_db
def test_the_report_page_and_its_explanations_do_not_name_other_teams(client, fleet, teams):
    client.force_login(UserFactory(teams=[teams["a"]]))
    url = reverse("reports:report")
    page = client.get(url, {**FILTERS, "group_by": "workload"})
    assert page.status_code == 200
    content = page.content.decode()
    assert "Other teams&#x27; workloads" in content or "Other teams' workloads" in content
    for name in TEAM_B_NAMES:
        assert name not in content
    explain_url = reverse("reports:report_explain")
    for row in (OTHER_TEAMS, "unallocated", ""):
        explanation = client.get(
            explain_url, {**FILTERS, "group_by": "workload", "row": row, "figure": "cost_usd"}
        )
        assert explanation.status_code == 200
        for name in TEAM_B_NAMES:
            assert name not in explanation.content.decode()
    hidden = client.get(explain_url, {**FILTERS, "group_by": "workload", "row": "speech-secret"})
    assert hidden.status_code == 404


@pytest.mark.django_db
def test_a_pool_out_of_scope_is_not_a_filter_choice_nor_an_api_pool(client, fleet, teams):
    client.force_login(UserFactory(teams=[teams["a"]]))
    page = client.get(reverse("reports:report"), {**FILTERS, "pool": "speech-pool"})
    assert page.status_code == 200
    assert "Speech pool" not in page.content.decode()
    assert "Select a valid choice" in page.content.decode()
    for name in ("api-report-cost", "api-usage-profile"):
        assert client.get(reverse(name), {"pool": "speech-pool"}).status_code == 404
        assert client.get(reverse(name), {"pool": "shared-pool"}).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("group_by", ["pool", "workload"])
def test_a_team_members_exports_name_no_pool_out_of_scope(client, fleet, teams, group_by):
    client.force_login(UserFactory(teams=[teams["a"]]))
    url = reverse("reports:report")
    csv_text = client.get(url, {**FILTERS, "group_by": group_by, "export": "csv"}).content
    csv_text = csv_text.decode("utf-8-sig")
    assert "Shared pool" in csv_text or "Vision" in csv_text
    workbook = load_workbook(
        io.BytesIO(client.get(url, {**FILTERS, "group_by": group_by, "export": "xlsx"}).content)
    )
    cells = " ".join(
        str(value)
        for sheet in workbook.worksheets
        for row in sheet.iter_rows(values_only=True)
        for value in row
        if value is not None
    )
    for name in TEAM_B_NAMES:
        assert name not in csv_text
        assert name not in cells


@pytest.mark.django_db
def test_the_cache_keeps_each_scopes_figures_apart(client, fleet, teams):
    team_a = UserFactory(teams=[teams["a"]])
    team_b = UserFactory(teams=[teams["b"]])
    # Team B's figures are computed (and cached) first, then the whole fleet's.
    for user in (team_b, UserFactory(role="finance")):
        form = report_filter_form({**FILTERS, "group_by": "pool"}, scope_of(user))
        assert form.is_valid()
        selectors.report_figures(form.cleaned_data, scope=form.scope)
    form = report_filter_form({**FILTERS, "group_by": "pool"}, scope_of(team_a))
    assert form.is_valid()
    figures = selectors.report_figures(form.cleaned_data, scope=form.scope)
    assert {row.key for row in figures["rows"]} == {"vision-pool", "shared-pool"}
    assert figures["total"].cost_usd == pytest.approx(_hand_cost_usd("vision-pool", "shared-pool"))

    # The pages, after each other: each reads its own scope's total.
    url = reverse("reports:report")
    for user, slugs in (
        (team_b, ("speech-pool", "shared-pool")),
        (team_a, ("vision-pool", "shared-pool")),
    ):
        client.force_login(user)
        rows = _api_rows(client, "pool").json()
        assert sum(Decimal(row["cost_usd"]) for row in rows) == Decimal(
            cents(_hand_cost_usd(*slugs))
        )
        content = client.get(url, {**FILTERS, "group_by": "pool"}).content.decode()
        assert "Shared pool" in content
        hidden = "Vision pool" if user == team_b else "Speech pool"
        assert hidden not in content


@pytest.mark.django_db
def test_the_overview_counts_the_scopes_gpus_and_cost(client, fleet, teams):
    now = timezone.now()
    team_a = UserFactory(teams=[teams["a"]])
    everything = overview_selectors.overview_figures(now, EVERYTHING)
    scoped = overview_selectors.overview_figures(now, scope_of(team_a))
    assert everything["gpu_total"] == 4 + 4 + 8
    assert scoped["gpu_total"] == 4 + 8
    slugs = {row["slug"] for row in scoped["idle_ranking"]["rows"]}
    assert "speech-pool" not in slugs
    client.force_login(team_a)
    content = client.get(reverse("dashboard:overview")).content.decode()
    assert "Speech pool" not in content
    client.force_login(UserFactory(role="finance"))
    assert client.get(reverse("dashboard:overview")).status_code == 200
