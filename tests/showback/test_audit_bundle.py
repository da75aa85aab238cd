"""A team's monthly audit bundle: the XLSX, the PDF and the API show the same figures,
and those figures add up on paper.

The fleet, for March 2026 (744 hours, every hour measured):

- team 研究 Research owns one cloud on-demand pool of 4 GPUs at $2 per GPU-hour, so the
  pool costs 4 × 2 × 744 = $5,952, all of it the team's (its workloads have no team
  of their own, so they count for the pool's team);
- on it, the training workload "Pretrain 预训练" is labelled 2 GPU-hours every hour and the
  inference workload ``=HYPERLINK("x")`` 1 GPU-hour every hour: at the pool's measured
  $8 per pool-hour over 4 GPU-hours, Pretrain costs 5,952 × 2 ÷ 4 = $2,976 and the
  inference workload 5,952 × 1 ÷ 4 = $1,488; the rest, $1,488, no workload accounts for;
- the inference workload answers 1,000 requests of 250 tokens every hour: 744,000
  requests and 186,000,000 tokens, so $1,488 ÷ 744 = $2.00 per 1k requests and
  $1,488 ÷ 186 = $8.00 per 1M tokens; Pretrain has no requests (blank, not 0);
- Pretrain's training event log is goodput_measure's primer worked example moved to
  10 March (tests/data/goodput-measure/): steps 25 → 75 at a 2-minute reference step
  = 100 effective minutes of 200 = 50 % goodput; on 2 GPUs, 100 ÷ 60 × 2 = 3.33
  effective GPU-hours, measured over the 4 hours the log covers (00:00–03:20); the
  other 744 − 4 = 740 hours are estimated as busy − lost = 740 × 2 − 0 = 1,480, so
  Pretrain's month has 3.33 + 1,480 = 1,483.33 effective GPU-hours;
- Pretrain's backup policy holds an RTO of 60 minutes and an RPO of 120 minutes; one
  drill takes 35 minutes restoring a version 70 minutes old (passed), one takes
  95 minutes restoring a version 80 minutes old (failed on the RTO); one drill in April
  is not in March's bundle.

Another team, Serving, has its own pool, workload and drill, none of which appears.
"""

import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from openpyxl import load_workbook
from pypdf import PdfReader

from apps.pools.models import WorkloadKind
from apps.showback.months import last_complete_month
from apps.showback.selectors import showback
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests, WorkloadHourlyUsage
from apps.telemetry.rollups.days import rebuild_days
from apps.training import services as training_services
from apps.training.models import TrainingImportRun
from tests.factories import (
    BackupPolicyFactory,
    BackupVersionFactory,
    PoolFactory,
    RestoreDrillFactory,
    TeamFactory,
    UserFactory,
    WorkloadFactory,
)
from tests.money import cents, unit_price

PRIMER = Path(__file__).parents[1] / "data" / "goodput-measure" / "primer_worked_example.jsonl"
MONTH = "2026-03"
MONTH_START = datetime(2026, 3, 1, tzinfo=UTC)
MONTH_END = datetime(2026, 4, 1, tzinfo=UTC)
MONTH_HOURS = 744
POOL_GPUS = 4
PRICE_PER_GPU_HOUR_USD = 2
TRAINING_GPU_HOURS_PER_HOUR = 2
INFERENCE_GPU_HOURS_PER_HOUR = 1
REQUESTS_PER_HOUR = 1000
TOKENS_PER_REQUEST = 250
INFERENCE_NAME = '=HYPERLINK("x")'
TEAM_NAME = "研究 Research"
MARKUP_NOTE = "<b>x</b> restored from hot"


@pytest.fixture
def fleet(gpu_model):
    research = TeamFactory(name=TEAM_NAME, slug="research")
    serving = TeamFactory(name="Serving", slug="serving")
    pool = PoolFactory(
        name="Research A100s",
        slug="research-a100s",
        gpu_model=gpu_model,
        gpu_count=POOL_GPUS,
        gpus_per_node=POOL_GPUS,
        on_demand_price_per_gpu_hour_usd=Decimal(PRICE_PER_GPU_HOUR_USD),
        team=research,
        in_service_from=MONTH_START - timedelta(days=60),
    )
    pretrain = WorkloadFactory(
        name="Pretrain 预训练",
        slug="pretrain",
        pool=pool,
        gpu_count=2,
        data_parallel=2,
        reference_step_seconds=Decimal("120"),
    )
    chat = WorkloadFactory(
        name=INFERENCE_NAME,
        slug="chat",
        kind=WorkloadKind.ONLINE_INFERENCE,
        pool=pool,
        gpu_count=1,
        data_parallel=1,
        zero_stage=0,
    )
    serving_pool = PoolFactory(
        name="Serving pool",
        slug="serving-pool",
        gpu_model=gpu_model,
        gpu_count=2,
        team=serving,
        in_service_from=MONTH_START - timedelta(days=60),
    )
    serving_workload = WorkloadFactory(
        name="Serving run", slug="serving-run", pool=serving_pool, gpu_count=2, data_parallel=2
    )
    hours = [MONTH_START + timedelta(hours=step) for step in range(MONTH_HOURS)]
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=hour,
            reporting_gpus=POOL_GPUS,
            capacity_gpu_hours=POOL_GPUS,
            busy_gpu_hours=3,
            avg_utilization_pct=75,
            max_utilization_pct=75,
        )
        for hour in hours
    )
    WorkloadHourlyUsage.objects.bulk_create(
        WorkloadHourlyUsage(
            workload=workload, hour=hour, allocated_gpu_hours=allocated, busy_gpu_hours=busy
        )
        for workload, allocated, busy in (
            (pretrain, TRAINING_GPU_HOURS_PER_HOUR, TRAINING_GPU_HOURS_PER_HOUR),
            (chat, INFERENCE_GPU_HOURS_PER_HOUR, 0.75),
        )
        for hour in hours
    )
    WorkloadHourlyRequests.objects.bulk_create(
        WorkloadHourlyRequests(
            workload=chat,
            hour=hour,
            requests=REQUESTS_PER_HOUR,
            input_tokens=200 * REQUESTS_PER_HOUR,
            output_tokens=(TOKENS_PER_REQUEST - 200) * REQUESTS_PER_HOUR,
            errors=0,
        )
        for hour in hours
    )
    rebuild_days(MONTH_START - timedelta(days=1), MONTH_END + timedelta(days=1))
    run = training_services.import_events(
        workload=pretrain,
        text=PRIMER.read_text().replace("2025-01-01", "2026-03-10"),
        format="jsonl",
        source="command",
    )
    assert run.status == TrainingImportRun.Status.SUCCEEDED, run.errors
    BackupPolicyFactory(workload=pretrain, rto_minutes=60, rpo_minutes=120)
    drills = {
        "passed": _drill(pretrain, datetime(2026, 3, 12, 10, tzinfo=UTC), 70, 35, 1000),
        "failed": _drill(pretrain, datetime(2026, 3, 20, 10, tzinfo=UTC), 80, 95, 2000),
        "april": _drill(pretrain, datetime(2026, 4, 2, 10, tzinfo=UTC), 10, 20, 3000),
        "serving": _drill(serving_workload, datetime(2026, 3, 15, 10, tzinfo=UTC), 10, 20, 10),
    }
    drills["passed"].notes = MARKUP_NOTE
    drills["passed"].save(update_fields=["notes"])
    return {
        "research": research,
        "serving": serving,
        "pool": pool,
        "pretrain": pretrain,
        "chat": chat,
        "drills": drills,
    }


def _drill(workload, started_at, version_age_minutes, duration_minutes, step):
    version = BackupVersionFactory(
        workload=workload,
        step=step,
        created_at=started_at - timedelta(minutes=version_age_minutes),
    )
    return RestoreDrillFactory(
        version=version,
        started_at=started_at,
        finished_at=started_at + timedelta(minutes=duration_minutes),
    )


def _hand_figures():
    """The bundle's figures from the definitions (module docstring)."""
    pool_usd = POOL_GPUS * PRICE_PER_GPU_HOUR_USD * MONTH_HOURS
    chat_usd = pool_usd * INFERENCE_GPU_HOURS_PER_HOUR / POOL_GPUS
    requests = REQUESTS_PER_HOUR * MONTH_HOURS
    tokens = requests * TOKENS_PER_REQUEST
    return {
        "pool_usd": pool_usd,
        "pretrain_usd": pool_usd * TRAINING_GPU_HOURS_PER_HOUR / POOL_GPUS,
        "chat_usd": chat_usd,
        "chat_per_1k_requests_usd": chat_usd / requests * 1000,
        "chat_per_1m_tokens_usd": chat_usd / tokens * 1_000_000,
        "pretrain_effective_gpu_hours": 100 / 60 * 2
        + (MONTH_HOURS - 4) * TRAINING_GPU_HOURS_PER_HOUR,
        "pretrain_goodput_pct": 100 / 200 * 100,
    }


def _api(client, slug="research", **params):
    return client.get(reverse("team-audit", kwargs={"slug": slug}), {"month": MONTH, **params})


def _download(client, extension, slug="research", month=MONTH, **headers):
    return client.get(
        reverse("showback:team_audit", kwargs={"slug": slug}),
        {"month": month, "format": extension},
        **headers,
    )


def _sheet_rows(workbook, title) -> list[dict]:
    sheet = workbook[title]
    rows = list(sheet.iter_rows(values_only=True))
    return [dict(zip(rows[0], values, strict=True)) for values in rows[1:]]


def _decimal(cell_value) -> Decimal | None:
    """An XLSX number cell as the decimal it was written as (openpyxl reads a float)."""
    return None if cell_value is None else Decimal(str(cell_value))


def _pdf_text(content: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)


@pytest.fixture
def member(fleet):
    return UserFactory(role="lead", teams=[fleet["research"]])


@pytest.mark.django_db
def test_the_api_matches_a_hand_computation_and_the_showback(client, fleet, member):
    client.force_login(member)
    response = _api(client)
    assert response.status_code == 200, response.content
    body = response.json()
    hand = _hand_figures()
    assert body["team"] == "research" and body["name"] == TEAM_NAME and body["month"] == MONTH
    assert [pool["slug"] for pool in body["pools"]] == ["research-a100s"]
    assert body["pools"][0]["cost_usd"] == cents(hand["pool_usd"])
    assert body["totals"]["cost_usd"] == cents(hand["pool_usd"])
    # The showback's team total, read independently of the bundle.
    team_spend = showback(MONTH_START, MONTH_END).teams[fleet["research"].pk]
    assert body["totals"]["cost_usd"] == cents(team_spend.cost_usd)
    workloads = {workload["slug"]: workload for workload in body["workloads"]}
    assert set(workloads) == {"pretrain", "chat"}
    chat, pretrain = workloads["chat"], workloads["pretrain"]
    assert chat["cost_usd"] == cents(hand["chat_usd"])
    assert chat["cost_per_1k_requests_usd"] == unit_price(hand["chat_per_1k_requests_usd"])
    assert chat["cost_per_1m_tokens_usd"] == unit_price(hand["chat_per_1m_tokens_usd"])
    assert chat["goodput_pct"] is None and chat["effective_training_gpu_hours"] is None
    assert pretrain["cost_usd"] == cents(hand["pretrain_usd"])
    assert pretrain["cost_per_1k_requests_usd"] is None
    assert pretrain["cost_per_1m_tokens_usd"] is None
    assert pretrain["effective_training_source"] == "measured"
    assert pretrain["effective_training_gpu_hours"] == pytest.approx(
        hand["pretrain_effective_gpu_hours"]
    )
    assert pretrain["goodput_pct"] == pytest.approx(hand["pretrain_goodput_pct"])
    assert body["totals"]["workloads_usd"] == cents(hand["chat_usd"] + hand["pretrain_usd"])
    assert body["totals"]["not_in_a_workload_usd"] == cents(
        hand["pool_usd"] - hand["chat_usd"] - hand["pretrain_usd"]
    )
    drills = body["drills"]
    assert [drill["id"] for drill in drills] == [
        fleet["drills"]["passed"].pk,
        fleet["drills"]["failed"].pk,
    ]
    assert [(d["actual_rto_minutes"], d["actual_rpo_minutes"]) for d in drills] == [
        (35, 70),
        (95, 80),
    ]
    assert {(d["rto_target_minutes"], d["rpo_target_minutes"]) for d in drills} == {(60, 120)}
    assert [(d["rto_met"], d["rpo_met"], d["passed"]) for d in drills] == [
        (True, True, True),
        (False, True, False),
    ]
    assert body["totals"]["drills"] == 2 and body["totals"]["drills_passed"] == 1


@pytest.mark.django_db
def test_goodput_equals_the_workload_goodput_api_for_the_month(client, fleet, member):
    client.force_login(member)
    bundle = _api(client).json()
    goodput = client.get(
        reverse("workload-goodput", kwargs={"slug": "pretrain"}),
        {"start": MONTH_START.isoformat(), "end": MONTH_END.isoformat()},
    ).json()
    pretrain = next(w for w in bundle["workloads"] if w["slug"] == "pretrain")
    assert pretrain["goodput_pct"] == goodput["goodput_pct"]


@pytest.mark.django_db
def test_the_xlsx_holds_the_apis_figures_and_names_as_text(client, fleet, member):
    client.force_login(member)
    body = _api(client).json()
    response = _download(client, "xlsx")
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith('gpufleet-audit-research-2026-03.xlsx"')
    workbook = load_workbook(io.BytesIO(response.content))
    pools = _sheet_rows(workbook, "Pools")
    # The cells hold the API's amounts to the cent.
    assert [(row["Pool"], _decimal(row["Cost (USD)"])) for row in pools] == [
        (pool["name"], Decimal(pool["cost_usd"])) for pool in body["pools"]
    ]
    assert sum(_decimal(row["Cost (USD)"]) for row in pools) == Decimal(body["totals"]["cost_usd"])
    workloads = {row["Workload"]: row for row in _sheet_rows(workbook, "Workloads")}
    for workload in body["workloads"]:
        row = workloads[workload["name"]]
        assert _decimal(row["Cost (USD)"]) == Decimal(workload["cost_usd"])
        for header, key in (
            ("Cost per 1k requests (USD)", "cost_per_1k_requests_usd"),
            ("Cost per 1M tokens (USD)", "cost_per_1m_tokens_usd"),
        ):
            expected = workload[key]
            assert _decimal(row[header]) == (None if expected is None else Decimal(expected))
        for header, key in (
            ("Effective training (GPU-hours)", "effective_training_gpu_hours"),
            ("Goodput (%)", "goodput_pct"),
        ):
            # A missing figure is a blank cell, never 0.
            expected = workload[key]
            assert row[header] == (None if expected is None else pytest.approx(expected))
    assert workloads["Pretrain 预训练"]["Effective training from"] == "measured"
    drills = _sheet_rows(workbook, "Restore drills")
    assert [
        (
            row["Actual RTO (minutes)"],
            row["RTO target (minutes)"],
            row["Actual RPO (minutes)"],
            row["RPO target (minutes)"],
            row["Result"],
        )
        for row in drills
    ] == [
        (
            d["actual_rto_minutes"],
            d["rto_target_minutes"],
            d["actual_rpo_minutes"],
            d["rpo_target_minutes"],
            "Passed" if d["passed"] else "Failed",
        )
        for d in body["drills"]
    ]
    assert drills[0]["Notes"] == MARKUP_NOTE
    summary = {row[0]: row[1] for row in workbook["Summary"].iter_rows(values_only=True)}
    assert summary["Team"] == TEAM_NAME
    assert _decimal(summary["Team total, as the showback (USD)"]) == Decimal(
        body["totals"]["cost_usd"]
    )
    # The formula-like name is a string cell, not a formula.
    cell = next(
        row[0]
        for row in workbook["Workloads"].iter_rows(min_row=2)
        if row[0].value == INFERENCE_NAME
    )
    assert cell.data_type == "s"


@pytest.mark.django_db
def test_the_pdf_shows_the_apis_figures_and_markup_literally(client, fleet, member):
    client.force_login(member)
    body = _api(client).json()
    response = _download(client, "pdf")
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    text = _pdf_text(response.content)
    assert TEAM_NAME in text
    for pool in body["pools"]:
        assert pool["name"] in text and f"{Decimal(pool['cost_usd']):,.2f}" in text
    for workload in body["workloads"]:
        assert workload["name"] in text
        assert f"{Decimal(workload['cost_usd']):,.2f}" in text
        if workload["cost_per_1m_tokens_usd"] is not None:
            assert f"{Decimal(workload['cost_per_1m_tokens_usd']):,.4f}" in text
        if workload["effective_training_gpu_hours"] is not None:
            assert f"{workload['effective_training_gpu_hours']:,.2f}" in text
        if workload["goodput_pct"] is not None:
            assert f"{workload['goodput_pct']:,.1f}" in text
    # Every RTO and RPO here is below 3 hours, so the PDF writes them in minutes, as the
    # backups pages do.
    words = " ".join(text.split())
    assert "Actual RTO (min)" in words and "Actual RPO (min)" in words
    cells = [line.strip() for line in text.splitlines()]
    for drill in body["drills"]:
        for key in (
            "actual_rto_minutes",
            "rto_target_minutes",
            "actual_rpo_minutes",
            "rpo_target_minutes",
        ):
            assert f"{drill[key]:g}" in cells
    assert MARKUP_NOTE in text
    assert f"{Decimal(body['totals']['cost_usd']):,.2f}" in text


@pytest.mark.django_db
def test_a_chinese_request_gets_chinese_headings(client, fleet, member):
    client.force_login(member)
    response = _download(client, "pdf", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 200
    text = _pdf_text(response.content)
    for heading in ("审计包", "各资源池成本", "工作负载", "恢复演练"):
        assert heading in text
    assert TEAM_NAME in text


@pytest.mark.django_db
def test_an_empty_month_still_opens_and_says_so(client, fleet, member):
    client.force_login(member)
    text = _pdf_text(_download(client, "pdf", month="2025-01").content)
    assert "No cost recorded" in text and "No restore drills in this month." in text
    workbook = load_workbook(io.BytesIO(_download(client, "xlsx", month="2025-01").content))
    assert workbook["Restore drills"]["A2"].value == "No restore drills in this month."
    assert workbook["Pools"]["A2"].value.startswith("No cost recorded")


@pytest.mark.django_db
def test_another_teams_user_gets_404_from_the_download_and_the_api(client, fleet):
    client.force_login(UserFactory(role="lead", teams=[fleet["serving"]]))
    assert _download(client, "xlsx").status_code == 404
    assert _download(client, "pdf").status_code == 404
    assert _api(client).status_code == 404
    assert _api(client, slug="serving").status_code == 200


@pytest.mark.django_db
def test_a_fleet_wide_user_reads_every_team(client, fleet):
    client.force_login(UserFactory(role="finance"))
    assert _api(client).status_code == 200
    assert _api(client, slug="serving").status_code == 200


@pytest.mark.django_db
def test_anonymous_users_are_sent_to_log_in(client, fleet):
    assert _download(client, "pdf").status_code == 302
    assert _api(client).status_code == 401


@pytest.mark.django_db
@pytest.mark.parametrize("month", ["2026-13", "March", "2999-01"])
def test_a_bad_month_is_a_400_and_a_form_error(client, fleet, member, month):
    client.force_login(member)
    api = _api(client, month=month)
    assert api.status_code == 400 and "month" in api.json()
    page = _download(client, "xlsx", month=month)
    assert page.status_code == 400
    assert 'id="audit-month-error"' in page.content.decode()


@pytest.mark.django_db
def test_the_team_page_offers_the_last_complete_month(client, fleet, member):
    client.force_login(member)
    page = client.get(reverse("showback:team_detail", kwargs={"slug": "research"}))
    content = page.content.decode()
    assert 'id="team-audit"' in content
    assert reverse("showback:team_audit", kwargs={"slug": "research"}) in content
    assert 'value="xlsx"' in content and 'value="pdf"' in content
    assert f'value="{last_complete_month(timezone.now()):%Y-%m}"' in content
