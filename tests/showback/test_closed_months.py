"""Closed months (apps/showback/periods.py, apps/reports/cost/periods.py): a closed month's
cost report, showback and budgets do not move when a price is back-dated into it, and
the difference shows as an adjustment in the first open month.

One 4-GPU cloud on-demand pool of team "Search" at $2.00/GPU-h from 1 September 2026;
cloud cost is GPUs × hours × price (FORMULAS.md), so every figure is a product done by
hand in the tests. October 2026 has 31 × 24 = 744 hours, November 30 × 24 = 720.
"""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from apps.accounts.models import AuditEvent
from apps.accounts.scope import EVERYTHING
from apps.pools.models import Deployment, Pool, Purpose
from apps.pools.prices import record_prices
from apps.reports.cost import periods as report_periods
from apps.reports.cost.report import cost_report as live_cost_report
from apps.reports.models import ClosedMonth, MonthReopening
from apps.showback import periods
from apps.showback.audit import audit_bundle
from apps.showback.models import Budget
from apps.showback.selectors import _spent, showback
from tests.factories import TeamFactory, UserFactory, status_history

GPUS = 4
OCTOBER = datetime(2026, 10, 1, tzinfo=UTC)
NOVEMBER = datetime(2026, 11, 1, tzinfo=UTC)
DECEMBER = datetime(2026, 12, 1, tzinfo=UTC)
BACKDATED_FROM = datetime(2026, 10, 15, tzinfo=UTC)
# 4 GPUs × 744 h × $2.00
OCTOBER_AS_CLOSED_USD = 5952.00
# The price halves from 15 October 00:00: 17 days × 24 h = 408 h of October at $1.00
# instead of $2.00, 4 × 408 × (1.00 − 2.00) = −$1,632.00.
OCTOBER_ADJUSTMENT_USD = -1632.00
# November, all at the new price: 4 × 720 × $1.00.
NOVEMBER_LIVE_USD = 2880.00


@pytest.fixture
def team(db):
    return TeamFactory(name="Search", slug="search")


@pytest.fixture
def pool(gpu_model, team):
    return record_prices(
        Pool(
            name="Priced",
            slug="priced",
            purpose=Purpose.INFERENCE,
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=gpu_model,
            gpu_count=GPUS,
            gpus_per_node=4,
            on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
            in_service_from=datetime(2026, 9, 1, tzinfo=UTC),
            team=team,
        )
    )


def _api(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _backdate_half_price(pool):
    response = _api(UserFactory(role="lead", teams=[pool.team])).patch(
        f"/api/v1/pools/{pool.slug}/",
        {
            "on_demand_price_per_gpu_hour_usd": "1.00",
            "price_effective_from": BACKDATED_FROM.isoformat(),
        },
        format="json",
    )
    assert response.status_code == 200, response.content


def _cost(rows) -> float:
    return sum(row.cost_usd for row in rows)


@pytest.mark.django_db
def test_a_closed_month_does_not_move_and_the_next_month_carries_the_adjustment(pool, team):
    Budget.objects.create(team=team, amount_per_month=Decimal("10000"))
    finance = UserFactory(role="finance")
    closed = periods.close_month(OCTOBER.date(), finance)
    assert float(closed.cost_usd) == pytest.approx(OCTOBER_AS_CLOSED_USD)

    _backdate_half_price(pool)

    # Live, October now costs 4 × (336 h × 2.00 + 408 h × 1.00) = $4,320.00 …
    assert _cost(live_cost_report(OCTOBER, NOVEMBER)) == pytest.approx(4320.00)
    # … but the closed month is served as it was: report by pool, purpose and workload,
    for group_by in ("pool", "purpose", "workload"):
        rows = report_periods.cost_report(OCTOBER, NOVEMBER, group_by)
        assert _cost(rows) == pytest.approx(OCTOBER_AS_CLOSED_USD), group_by
    # its showback, and the budget's spend.
    october = showback(OCTOBER, NOVEMBER)
    assert october.teams[team.pk].cost_usd == pytest.approx(OCTOBER_AS_CLOSED_USD)
    assert october.total_usd == pytest.approx(OCTOBER_AS_CLOSED_USD)
    budget = Budget.objects.get()
    assert _spent(october, budget) == pytest.approx(OCTOBER_AS_CLOSED_USD)
    # and the team's audit bundle of the month.
    bundle = audit_bundle(team, OCTOBER, NOVEMBER, scope=EVERYTHING)
    assert bundle.total_usd == pytest.approx(OCTOBER_AS_CLOSED_USD)
    assert [pool_cost.cost_usd for pool_cost in bundle.pools] == [
        pytest.approx(OCTOBER_AS_CLOSED_USD)
    ]
    (frozen_budget,) = ClosedMonth.objects.get().showback["budgets"]
    assert Decimal(frozen_budget["spent_usd"]) == pytest.approx(Decimal("5952"))

    # November: its own cost, and one adjustment line naming October.
    rows = report_periods.cost_report(NOVEMBER, DECEMBER, "pool")
    (own,) = [row for row in rows if not report_periods.is_adjustment(row)]
    (adjustment,) = [row for row in rows if report_periods.is_adjustment(row)]
    assert own.cost_usd == pytest.approx(NOVEMBER_LIVE_USD)
    assert adjustment.cost_usd == pytest.approx(OCTOBER_ADJUSTMENT_USD)
    assert "Adjustment to 2026-10" in adjustment.label
    assert _cost(rows) == pytest.approx(NOVEMBER_LIVE_USD + OCTOBER_ADJUSTMENT_USD)
    november = showback(NOVEMBER, DECEMBER)
    assert november.teams[team.pk].cost_usd == pytest.approx(NOVEMBER_LIVE_USD)
    assert november.teams[team.pk].adjustments_usd == {
        "2026-10": pytest.approx(OCTOBER_ADJUSTMENT_USD)
    }
    assert november.total_usd == pytest.approx(NOVEMBER_LIVE_USD + OCTOBER_ADJUSTMENT_USD)

    # October and November together: October as closed + November + the adjustment,
    # which is October as it is now plus November: 4,320 + 2,880 = $7,200.00.
    both = report_periods.cost_report(OCTOBER, DECEMBER, "pool")
    assert _cost(both) == pytest.approx(7200.00)


@pytest.mark.django_db
def test_the_frozen_row_says_when_and_by_whom(pool):
    from apps.reports.cost.explain import explain_figure

    finance = UserFactory(role="finance", username="fiona")
    periods.close_month(OCTOBER.date(), finance, now=datetime(2026, 11, 2, 9, tzinfo=UTC))
    (row,) = report_periods.cost_report(OCTOBER, NOVEMBER, "pool")
    steps = explain_figure(row, "cost_usd")
    assert "closed on 2026-11-02 09:00 UTC by fiona" in steps[-1].expression
    assert steps[-1].value == pytest.approx(OCTOBER_AS_CLOSED_USD)


@pytest.mark.django_db
def test_reopening_needs_a_superuser_and_a_reason_and_is_audited(pool):
    finance = UserFactory(role="finance")
    periods.close_month(OCTOBER.date(), finance)
    with pytest.raises(PermissionError):
        periods.reopen_month(OCTOBER.date(), finance, "late telemetry")
    admin = UserFactory(role="admin")
    with pytest.raises(periods.PeriodError):
        periods.reopen_month(OCTOBER.date(), admin, "  ")
    periods.reopen_month(OCTOBER.date(), admin, "late telemetry")
    assert not ClosedMonth.objects.get().is_closed
    assert MonthReopening.objects.get().reason == "late telemetry"
    kinds = list(AuditEvent.objects.order_by("pk").values_list("kind", flat=True))
    assert AuditEvent.Kind.MONTH_CLOSED in kinds and AuditEvent.Kind.MONTH_REOPENED in kinds
    # Reopened, October is live again: a back-dated price moves it, no adjustment.
    _backdate_half_price(pool)
    assert _cost(report_periods.cost_report(OCTOBER, NOVEMBER)) == pytest.approx(4320.00)
    assert not any(
        report_periods.is_adjustment(row) for row in report_periods.cost_report(NOVEMBER, DECEMBER)
    )


@pytest.mark.django_db
def test_api_periods(pool):
    finance, lead = UserFactory(role="finance"), UserFactory(role="lead")
    admin = UserFactory(role="admin")

    assert _api(lead).post("/api/v1/periods/2026-10/close/").status_code == 403
    assert _api(lead).get("/api/v1/periods/").status_code == 403
    response = _api(finance).post("/api/v1/periods/2026-10/close/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["month"] == "2026-10"
    assert body["state"] == "closed"
    assert body["cost_usd"] == "5952.00"  # 4 GPUs × 744 h × $2.00
    assert body["closed_by"] == finance.username

    again = _api(finance).post("/api/v1/periods/2026-10/close/")
    assert again.status_code == 409
    assert "closed already" in again.json()["detail"]
    future = _api(finance).post("/api/v1/periods/2099-01/close/")
    assert future.status_code == 400
    assert "has not ended" in future.json()["detail"]
    assert _api(finance).post("/api/v1/periods/2026-13/close/").status_code == 404

    listing = _api(finance).get("/api/v1/periods/").json()
    october = next(period for period in listing if period["month"] == "2026-10")
    assert october["state"] == "closed"
    assert october["cost_usd"] == "5952.00"
    november = next(period for period in listing if period["month"] == "2026-11")
    assert november["state"] == "open"
    assert november["closed_at"] is None and november["closed_by"] is None

    reopen = "/api/v1/periods/2026-10/reopen/"
    assert _api(finance).post(reopen, {"reason": "x"}, format="json").status_code == 403
    assert _api(admin).post(reopen, {}, format="json").status_code == 400
    done = _api(admin).post(reopen, {"reason": "late telemetry"}, format="json")
    assert done.status_code == 200, done.content
    assert done.json()["state"] == "open"
    assert _api(admin).post(reopen, {"reason": "again"}, format="json").status_code == 409
    # Reopened, it closes again, frozen anew.
    assert _api(finance).post("/api/v1/periods/2026-10/close/").status_code == 200
    assert ClosedMonth.objects.get().is_closed


@pytest.mark.django_db
def test_showback_and_cost_report_apis_show_the_adjustment(pool, team):
    periods.close_month(OCTOBER.date(), UserFactory(role="finance"))
    _backdate_half_price(pool)
    finance = _api(UserFactory(role="finance"))
    rows = finance.get("/api/v1/showback/", {"month": "2026-11"}).json()["rows"]
    (adjustment,) = [row for row in rows if row["adjusts_month"]]
    assert adjustment["adjusts_month"] == "2026-10"
    assert adjustment["team"] == "search"
    # The API's money is a decimal string to the cent: 4 GPUs × 408 h × ($1.00 − $2.00).
    assert adjustment["cost_usd"] == "-1632.00"
    report = finance.get(
        "/api/v1/reports/cost/",
        {"start": NOVEMBER.isoformat(), "end": DECEMBER.isoformat(), "group_by": "pool"},
    ).json()
    assert sum(Decimal(row["cost_usd"]) for row in report) == Decimal(
        str(NOVEMBER_LIVE_USD + OCTOBER_ADJUSTMENT_USD)
    ).quantize(Decimal("0.01"))


@pytest.mark.django_db
def test_the_demo_closes_its_previous_full_month_once(client, role_groups):
    from django.core.management import call_command

    now = datetime(2026, 12, 6, 15, tzinfo=UTC)
    call_command("seed_demo", verbosity=0, now=now)
    call_command("seed_demo", verbosity=0, now=now)
    (closed,) = ClosedMonth.objects.all()
    assert closed.is_closed
    assert f"{closed.month:%Y-%m}" == "2026-11"
    assert closed.closed_by.username == "finance"
    # The frozen month equals the month as computed live (nothing changed since).
    live = sum(row.cost_usd for row in live_cost_report(NOVEMBER, DECEMBER, "pool"))
    assert float(closed.cost_usd) == pytest.approx(float(live))

    client.force_login(closed.closed_by)
    page = client.get("/periods/")
    assert page.status_code == 200
    assert 'data-month="2026-11"' in page.content.decode()
    overview = client.get("/").content.decode()
    assert 'id="closed-months"' in overview and "2026-11" in overview


@pytest.mark.django_db
def test_the_page_closes_with_confirmation_and_reopens_with_a_reason(client, pool):
    finance = UserFactory(role="finance")
    client.force_login(finance)
    confirm = client.get("/periods/2026-10/close/")
    assert confirm.status_code == 200
    assert 'id="confirm-close"' in confirm.content.decode()
    assert client.post("/periods/2026-10/close/").status_code == 302
    assert ClosedMonth.objects.get().is_closed
    again = client.post("/periods/2026-10/close/")
    assert again.status_code == 400
    assert "closed already" in again.content.decode()
    assert client.get("/periods/2026-10/reopen/").status_code == 403

    client.force_login(UserFactory(role="admin"))
    refused = client.post("/periods/2026-10/reopen/", {"reason": ""})
    assert refused.status_code == 400
    assert client.post("/periods/2026-10/reopen/", {"reason": "late telemetry"}).status_code == 302
    assert not ClosedMonth.objects.get().is_closed
    client.force_login(UserFactory(role="lead"))
    assert client.get("/periods/").status_code == 403


@pytest.mark.django_db
def test_exports_carry_the_adjustment_line(client, pool):
    import csv
    import io

    from openpyxl import load_workbook

    periods.close_month(OCTOBER.date(), UserFactory(role="finance"))
    _backdate_half_price(pool)
    client.force_login(UserFactory(role="finance"))
    # The report page's range is whole UTC days, its end day included.
    filters = {"start": "2026-11-01", "end": "2026-11-30", "group_by": "pool"}
    lines = list(
        csv.reader(
            io.StringIO(client.get("/reports/", {**filters, "export": "csv"}).content.decode())
        )
    )
    by_label = {line[1]: line for line in lines[1:]}
    adjustment = by_label["Adjustment to 2026-10 · Priced"]
    cost_column = lines[0].index("Cost (USD)")
    assert float(adjustment[cost_column]) == pytest.approx(OCTOBER_ADJUSTMENT_USD)
    assert float(by_label["Total"][cost_column]) == pytest.approx(
        NOVEMBER_LIVE_USD + OCTOBER_ADJUSTMENT_USD
    )
    workbook = load_workbook(
        io.BytesIO(client.get("/reports/", {**filters, "export": "xlsx"}).content)
    )
    labels = [row[1] for row in workbook.worksheets[0].iter_rows(values_only=True)]
    assert "Adjustment to 2026-10 · Priced" in labels

    showback_csv = client.get("/showback/export/", {"month": "2026-11", "format": "csv"})
    rows = list(csv.reader(io.StringIO(showback_csv.content.decode())))
    (line,) = [row for row in rows if row[0].startswith("Adjustment to 2026-10")]
    assert line[1] == "search"
    assert float(line[2]) == pytest.approx(OCTOBER_ADJUSTMENT_USD)


@pytest.mark.django_db
def test_the_report_page_shows_and_explains_frozen_and_adjustment_rows(client, pool):
    periods.close_month(
        OCTOBER.date(),
        UserFactory(role="finance", username="fiona"),
        now=datetime(2026, 11, 2, 9, tzinfo=UTC),
    )
    _backdate_half_price(pool)
    client.force_login(UserFactory(role="finance"))
    november = {"start": "2026-11-01", "end": "2026-11-30", "group_by": "pool"}
    page = client.get("/reports/", november)
    assert page.status_code == 200
    notes = " ".join(report_periods.range_notes(NOVEMBER, DECEMBER))
    assert "Includes the adjustments to 2026-10" in notes
    partial = " ".join(report_periods.range_notes(datetime(2026, 10, 20, tzinfo=UTC), DECEMBER))
    assert "covers part of 2026-10" in partial
    # The table may load as a background fragment; the explanation reads the same rows.
    explained = client.get(
        "/reports/explain/",
        {**november, "row": "adjustment-2026-10-priced", "figure": "cost_usd"},
    )
    assert explained.status_code == 200, explained.content[:300]
    text = explained.content.decode()
    # 4 GPUs × 408 h × (1.00 − 2.00)
    assert "computed today" in text and "−$1,632.00" in text

    october = {"start": "2026-10-01", "end": "2026-10-31", "group_by": "pool"}
    frozen = client.get("/reports/explain/", {**october, "row": "priced", "figure": "cost_usd"})
    assert frozen.status_code == 200
    assert "closed on 2026-11-02 09:00 UTC by fiona" in frozen.content.decode()


@pytest.mark.django_db
def test_a_team_reads_its_share_of_a_closed_month_as_frozen(pool, team, gpu_model):
    """Team Search's pool (4 GPUs at $2.00) and team Other's pool (2 GPUs at $3.00), each
    with one workload. October for Search: 4 × 744 × 2.00 = $5,952.00; for Other:
    2 × 744 × 3.00 = $4,464.00."""
    from apps.accounts.scope import Scope
    from apps.pools.models import Workload, WorkloadKind, WorkloadStatus

    other_team = TeamFactory(name="Other", slug="other")
    other_pool = record_prices(
        Pool(
            name="Theirs",
            slug="theirs",
            purpose=Purpose.INFERENCE,
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=gpu_model,
            gpu_count=2,
            gpus_per_node=2,
            on_demand_price_per_gpu_hour_usd=Decimal("3.00"),
            in_service_from=datetime(2026, 9, 1, tzinfo=UTC),
            team=other_team,
        )
    )
    for name, on in (("Ours", pool), ("Their chat", other_pool)):
        workload = Workload.objects.create(
            name=name,
            slug=name.lower().replace(" ", "-"),
            kind=WorkloadKind.ONLINE_INFERENCE,
            pool=on,
            gpu_count=on.gpu_count,
        )
        # Running on all its pool's GPUs since the pools' service start: the whole cost.
        status_history(workload, (datetime(2026, 9, 1, tzinfo=UTC), WorkloadStatus.RUNNING))
    periods.close_month(OCTOBER.date(), UserFactory(role="finance"))
    _backdate_half_price(pool)

    search_only = Scope(everything=False, team_ids=frozenset({team.pk}))
    by_pool = report_periods.cost_report(OCTOBER, NOVEMBER, "pool", scope=search_only)
    assert [(row.key, row.cost_usd) for row in by_pool] == [("priced", pytest.approx(5952.00))]
    by_workload = report_periods.cost_report(OCTOBER, NOVEMBER, "workload", scope=search_only)
    assert [(row.key, row.cost_usd) for row in by_workload] == [("ours", pytest.approx(5952.00))]
    everything = report_periods.cost_report(OCTOBER, NOVEMBER, "workload")
    assert {row.key: row.cost_usd for row in everything} == {
        "ours": pytest.approx(5952.00),
        "their-chat": pytest.approx(4464.00),
    }
    # Only Search's pool moved: its adjustment, and no line for Other's.
    adjustments = [
        row
        for row in report_periods.cost_report(NOVEMBER, DECEMBER, "workload")
        if report_periods.is_adjustment(row)
    ]
    assert [(row.key, row.cost_usd) for row in adjustments] == [
        ("adjustment-2026-10-ours", pytest.approx(OCTOBER_ADJUSTMENT_USD))
    ]


@pytest.mark.django_db(transaction=True)
def test_two_first_closes_at_once_close_the_month_once(pool):
    """Two people close October at the same moment: one closes it, the other is told it
    was closed a moment ago (a conflict, never a server error)."""
    import threading

    from django.db import connection

    users = [UserFactory(role="finance"), UserFactory(role="finance")]
    outcomes = []
    start = threading.Barrier(2)

    def close(user):
        start.wait()
        try:
            periods.close_month(OCTOBER.date(), user)
            outcomes.append("closed")
        except periods.PeriodError as error:
            outcomes.append("conflict" if error.conflict else str(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=close, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["closed", "conflict"]
    assert ClosedMonth.objects.get().cost_usd == Decimal("5952.00")


@pytest.mark.django_db
def test_frozen_rows_by_workload_are_each_pools_own_report(pool, gpu_model):
    """Closing reads two reports for the whole fleet; each pool's frozen rows by workload
    equal that pool's own report by workload (a second computation, one report per
    pool): its running workloads' shares and the unallocated rest, or the whole pool as
    unattributed when it runs none."""
    from apps.pools.models import Workload, WorkloadKind, WorkloadStatus

    bare = record_prices(
        Pool(
            name="Bare",
            slug="bare",
            purpose=Purpose.INFERENCE,
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=gpu_model,
            gpu_count=2,
            gpus_per_node=2,
            on_demand_price_per_gpu_hour_usd=Decimal("3.00"),
            in_service_from=datetime(2026, 9, 1, tzinfo=UTC),
        )
    )
    chat = Workload.objects.create(
        name="Chat", slug="chat", kind=WorkloadKind.ONLINE_INFERENCE, pool=pool, gpu_count=1
    )
    # Running from 11 October: 1 of the pool's 4 GPUs for 21 days of October.
    status_history(
        chat,
        (datetime(2026, 9, 1, tzinfo=UTC), WorkloadStatus.PLANNED),
        (datetime(2026, 10, 11, tzinfo=UTC), WorkloadStatus.RUNNING),
    )
    closed = periods.close_month(OCTOBER.date(), UserFactory(role="finance"))

    frozen = {
        (row.pool_slug, row.key): Decimal(row.figures["cost_usd"])
        for row in closed.frozen_rows.filter(group_by="workload")
    }
    expected = {
        (slug, row.key): Decimal(str(row.cost_usd))
        for slug in ("priced", "bare")
        for row in live_cost_report(OCTOBER, NOVEMBER, "workload", pool_slug=slug)
    }
    assert frozen.keys() == expected.keys()
    for key, usd in expected.items():
        assert abs(frozen[key] - usd) < Decimal("0.000001"), key
    # By hand: Chat holds 1 GPU × 21 days × 24 h × $2.00 = $1,008.00; the priced pool's
    # rest, 4 × 744 × $2.00 − $1,008.00 = $4,944.00, is unallocated; the bare pool,
    # 2 × 744 × $3.00 = $4,464.00, unattributed.
    assert round(frozen[("priced", "chat")], 2) == Decimal("1008.00")
    assert round(frozen[("priced", "unallocated")], 2) == Decimal("4944.00")
    assert round(frozen[("bare", "unattributed")], 2) == Decimal("4464.00")
    assert bare.pk


@pytest.mark.django_db
def test_the_periods_list_starts_at_the_fleets_first_month_of_service(pool):
    """The pool is in service from 1 September 2026: on 6 December the list holds the
    four months from then, not twelve, of which eight would have nothing to close."""
    listed = periods.period_list(datetime(2026, 12, 6, 12, tzinfo=UTC))
    assert [f"{period.month:%Y-%m}" for period in listed] == [
        "2026-12",
        "2026-11",
        "2026-10",
        "2026-09",
    ]
