"""How each figure is computed (apps/reports/cost/explain.py), against hand computations.

The fleet is tests/reports/test_cost_report.py's: a cloud inference pool (8 GPUs at
$2.50, no telemetry in its first 5 of 60 hours) and an owned training pool (16 GPUs,
measured energy on even hours only). Every expected number and expression below is
computed here from those inputs, not read back from the code under test; every figure of
every row, in every grouping, must end on the cell's own number.
"""

from datetime import timedelta

import pytest
from django.urls import reverse

from apps.pools.models import Pool, Workload, WorkloadKind
from apps.pools.services import save_pool
from apps.reports.cost import explain, report
from apps.reports.cost.rows import total_row
from apps.telemetry.models import WorkloadHourlyUsage
from tests.money import cents, unit_price
from tests.reports.test_cost_report import (  # noqa: F401 (fleet is a fixture)
    CLOUD_PRICE,
    END,
    HOURS,
    OWNED,
    START,
    _utilization,
    fleet,
)

# Figures that are sums over the row's parts (the rest are ratios of such sums).
SUMS = {
    "capacity_gpu_hours",
    "measured_capacity_gpu_hours",
    "unmeasured_gpu_hours",
    "busy_gpu_hours",
    "cost_usd",
    "unmeasured_cost_usd",
    "idle_cost_usd",
    "requests",
    "tokens",
    "lost_gpu_hours",
    "interruption_cost_usd",
}
# Chat's labelled samples in the shared cloud pool: 6 of its 8 GPUs, 3 of them busy,
# every measured hour.
CHAT_ALLOCATED_PER_HOUR, CHAT_BUSY_PER_HOUR = 6.0, 3.0


def _one(text: float) -> str:
    """How the explanation writes a GPU-hour or kWh quantity, written out here."""
    if float(text).is_integer():
        return f"{text:,.0f}"
    return f"{text:,.1f}" if abs(text) >= 10 else f"{text:,.2f}"


def _hand():
    """The inputs of each pool's lines, hour by hour."""
    cloud_busy = sum(8 * _utilization(0, step) / 100 for step in range(5, HOURS))
    fixed = OWNED["purchase"] / (OWNED["months"] * 730) + OWNED["operations"] / 730 / 16
    fixed_stored = round(fixed, 6)  # Pool.refresh_effective_price keeps 6 decimals
    per_kwh = OWNED["pue"] * OWNED["kwh"]
    owned_busy = sum(16 * _utilization(1, step) / 100 for step in range(HOURS))
    odd_busy = sum(16 * _utilization(1, step) / 100 for step in range(1, HOURS, 2))
    energy = 16 * 0.5 * len(range(0, HOURS, 2))
    owned_cost = fixed_stored * 16 * HOURS + per_kwh * (energy + OWNED["tdp_kw"] * odd_busy)
    return {
        "cloud_measured_cost": CLOUD_PRICE * 8 * 55,
        "cloud_cost": CLOUD_PRICE * 8 * HOURS,
        "cloud_busy": cloud_busy,
        "fixed_stored": fixed_stored,
        "per_kwh": per_kwh,
        "owned_busy": owned_busy,
        "odd_busy": odd_busy,
        "energy": energy,
        "owned_cost": owned_cost,
    }


def _rows(group_by):
    rows = report.cost_report(START, END, group_by)
    return {row.key: row for row in rows}, total_row(rows)


def _share_the_cloud_pool(fleet):  # noqa: F811
    """A second workload on the cloud pool, and Chat's labelled samples in it."""
    Workload.objects.create(
        name="Rerank", slug="rerank", kind=WorkloadKind.ONLINE_INFERENCE, pool=fleet["cloud"]
    )
    WorkloadHourlyUsage.objects.bulk_create(
        WorkloadHourlyUsage(
            workload=fleet["serving"],
            hour=START + timedelta(hours=step),
            allocated_gpu_hours=CHAT_ALLOCATED_PER_HOUR,
            busy_gpu_hours=CHAT_BUSY_PER_HOUR,
        )
        for step in range(5, HOURS)
    )


def _assert_ends_on_the_cell(row, figure):
    steps = explain.explain_figure(row, figure)
    assert steps, (row.key, figure)
    expected = getattr(row, figure)
    if expected is None:
        assert steps[-1].value is None, (row.key, figure)
    else:
        assert steps[-1].value == expected, (row.key, figure, steps[-1])
    if figure in SUMS and len(steps) > 1:
        # Several lines, then their sum: the lines add up to the figure.
        assert sum(step.value for step in steps[:-1]) == pytest.approx(expected, abs=1e-6), (
            row.key,
            figure,
        )
    for step in steps:
        assert step.label and step.expression and step.unit
    return steps


@pytest.mark.django_db
@pytest.mark.parametrize("group_by", ["pool", "purpose", "workload", "workload-shared"])
def test_every_figure_of_every_row_ends_on_its_cell(fleet, group_by):  # noqa: F811
    if group_by == "workload-shared":
        _share_the_cloud_pool(fleet)
        group_by = "workload"
    rows, total = _rows(group_by)
    assert rows
    for row in [*rows.values(), total]:
        for figure in explain.REPORTED:
            _assert_ends_on_the_cell(row, figure)


@pytest.mark.django_db
def test_a_cloud_pool_reads_gpus_hours_and_price(fleet):  # noqa: F811
    rows, _ = _rows("pool")
    hand = _hand()
    cloud = rows["cloud-inference"]
    [cost] = explain.explain_figure(cloud, "cost_usd")
    assert cost.expression == f"8 GPUs × {HOURS} h × $2.50/GPU-h"
    assert cost.note == "of which unmeasured 5 h"
    assert cost.value == pytest.approx(hand["cloud_cost"])
    assert cost.value_text == f"${hand['cloud_cost']:,.2f}"

    [unmeasured] = explain.explain_figure(cloud, "unmeasured_cost_usd")
    assert unmeasured.expression == "5 unmeasured h × 8 GPUs × $2.50/GPU-h"
    assert unmeasured.value == pytest.approx(5 * 8 * CLOUD_PRICE)

    *_, idle = explain.explain_figure(cloud, "idle_cost_usd")
    assert idle.expression == (
        f"${hand['cloud_measured_cost']:,.2f} measured cost × (1 − "
        f"{_one(hand['cloud_busy'])} busy ÷ 440 measured GPU-h)"
    )
    assert float(idle.value) == pytest.approx(
        hand["cloud_measured_cost"] * (1 - hand["cloud_busy"] / 440)
    )

    busy, capacity, utilization = explain.explain_figure(cloud, "utilization_pct")
    assert busy.value == pytest.approx(hand["cloud_busy"])
    assert capacity.value == 440
    assert utilization.expression == (f"100 × {_one(hand['cloud_busy'])} busy ÷ 440 measured GPU-h")
    assert utilization.value == pytest.approx(100 * hand["cloud_busy"] / 440)

    *_, per_1k = explain.explain_figure(cloud, "cost_per_1k_requests_usd")
    requests = sum(1000 + 10 * step for step in range(HOURS))
    assert per_1k.expression == (
        f"${hand['cloud_cost']:,.2f} inference cost ÷ {requests:,} requests × 1,000"
    )
    assert float(per_1k.value) == pytest.approx(hand["cloud_cost"] / requests * 1000)


@pytest.mark.django_db
def test_an_owned_pool_shows_its_fixed_and_power_terms(fleet):  # noqa: F811
    rows, _ = _rows("pool")
    hand = _hand()
    owned = rows["owned-training"]
    fixed_text = f"${hand['fixed_stored']:.4f}"
    [cost] = explain.explain_figure(owned, "cost_usd")
    assert cost.expression == (
        f"{fixed_text}/GPU-h × {16 * HOURS:,} measured GPU-h + $0.125/kWh × "
        f"({_one(hand['energy'])} kWh measured + 0.7 kW TDP × {_one(hand['odd_busy'])} busy "
        "GPU-h without energy)"
    )
    assert float(cost.value) == pytest.approx(hand["owned_cost"], rel=1e-9)
    assert cost.note == ""  # every hour measured

    *_, per_effective = explain.explain_figure(owned, "cost_per_effective_training_gpu_hour_usd")
    lost = ((30 + 20) + (30 + 10)) / 60 * 16
    effective = hand["owned_busy"] - lost
    assert per_effective.expression == (
        f"${hand['owned_cost']:,.2f} training cost ÷ {_one(effective)} effective training GPU-h"
    )
    assert float(per_effective.value) == pytest.approx(hand["owned_cost"] / effective, rel=1e-9)

    [interruption] = explain.explain_figure(owned, "interruption_cost_usd")
    unmeasured_price = hand["fixed_stored"] + hand["per_kwh"] * OWNED["tdp_kw"]
    assert interruption.expression == (
        f"{lost:,.0f} lost GPU-h × ${unmeasured_price:.4f}/GPU-h (fixed {fixed_text} + "
        "$0.125/kWh × 0.7 kW TDP)"
    )
    assert float(interruption.value) == pytest.approx(lost * unmeasured_price, rel=1e-6)


@pytest.mark.django_db
def test_a_group_of_pools_shows_each_pools_line_then_the_sum(fleet):  # noqa: F811
    _, total = _rows("purpose")
    hand = _hand()
    # Rows in the order of the purposes (training first), each pool's line in its row's.
    owned_line, cloud_line, summed = explain.explain_figure(total, "cost_usd")
    assert (owned_line.label, cloud_line.label) == ("Owned training", "Cloud inference")
    assert cloud_line.value == pytest.approx(hand["cloud_cost"])
    assert float(owned_line.value) == pytest.approx(hand["owned_cost"], rel=1e-9)
    assert summed.expression == (
        f"Σ of the 2 lines above: ${hand['owned_cost']:,.2f} + ${hand['cloud_cost']:,.2f}"
    )
    assert float(summed.value) == pytest.approx(hand["cloud_cost"] + hand["owned_cost"], rel=1e-9)


@pytest.mark.django_db
def test_a_shared_pool_splits_by_labelled_samples(fleet):  # noqa: F811
    _share_the_cloud_pool(fleet)
    rows, _ = _rows("workload")
    hand = _hand()
    allocated = CHAT_ALLOCATED_PER_HOUR * 55
    chat_cost = hand["cloud_measured_cost"] * allocated / 440
    # Chat runs on 8 of the pool's 8 GPUs throughout: after its labelled GPU-hours it
    # holds 8 ÷ 8 of the rest, so the whole pool.
    labelled, declared, summed = explain.explain_figure(rows["chat"], "cost_usd")
    assert labelled.expression == (
        f"measured: pod labels: ${hand['cloud_measured_cost']:,.2f} measured pool cost × "
        f"{allocated:,.0f} ÷ 440 measured GPU-h"
    )
    assert labelled.value == pytest.approx(chat_cost)
    assert declared.expression.startswith("declared: 8 of 8 GPUs while running")
    assert declared.value == pytest.approx(hand["cloud_cost"] - chat_cost)
    assert summed.value == pytest.approx(hand["cloud_cost"])
    assert "unattributed" not in rows and "unallocated" not in rows
    [rerank] = explain.explain_figure(rows["rerank"], "cost_usd")
    assert rerank.value == 0 and "nothing" in rerank.expression


# --- the views and the API ---------------------------------------------------------------

PAGE_FILTERS = {"start": "2026-03-09", "end": "2026-03-12", "group_by": "pool"}


@pytest.mark.django_db
def test_report_cells_open_their_explanation_in_the_drawer(client, make_user, fleet):  # noqa: F811
    client.force_login(make_user("reader"))
    page = client.get(reverse("reports:report"), PAGE_FILTERS).content.decode()
    assert 'id="explain-drawer"' in page
    assert (
        'hx-get="/reports/explain/?start=2026-03-09&amp;end=2026-03-12&amp;group_by=pool'
        '&amp;row=cloud-inference&amp;figure=cost_usd"'
    ) in page
    url = reverse("reports:report_explain")
    params = {**PAGE_FILTERS, "row": "cloud-inference", "figure": "cost_usd"}
    # The page's range: 4 whole UTC days, the cloud pool measured in 55 of the 96 hours.
    fragment = client.get(url, params, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in fragment and 'id="explanation"' in fragment
    assert "8 GPUs × 96 h × $2.50/GPU-h" in fragment
    assert "of which unmeasured 41 h" in fragment
    assert f"${8 * 96 * CLOUD_PRICE:,.2f}" in fragment
    full = client.get(url, params).content.decode()
    assert "<html" in full and "8 GPUs × 96 h × $2.50/GPU-h" in full
    # No row: the total row.
    total = client.get(url, {**PAGE_FILTERS, "figure": "cost_usd"}).content.decode()
    assert "Σ of the 2 lines above" in total

    assert client.get(url, {**params, "row": "nope"}).status_code == 404
    assert client.get(url, {**params, "figure": "label"}).status_code == 400
    assert client.get(url, {**params, "start": "yesterday"}).status_code == 400


@pytest.mark.django_db
def test_the_api_explains_each_figure_on_request(client, make_user, fleet):  # noqa: F811
    client.force_login(make_user("reader"))
    params = {"start": START.isoformat(), "end": END.isoformat(), "group_by": "pool"}
    plain = client.get(reverse("api-report-cost"), params).json()
    assert all("explain" not in row for row in plain)
    explained = client.get(reverse("api-report-cost"), {**params, "explain": "1"}).json()
    for row in explained:
        assert set(row["explain"]) == set(explain.REPORTED)
        for figure, steps in row["explain"].items():
            shown = row[figure]
            if isinstance(shown, str):
                # Money: the step at full precision, the figure rounded as shown.
                rounding = cents if len(shown.split(".")[1]) == 2 else unit_price
                assert rounding(steps[-1]["value"]) == shown, (row["key"], figure)
            else:
                assert steps[-1]["value"] == shown, (row["key"], figure)
            assert set(steps[-1]) == {"label", "expression", "value", "unit", "note", "kind"}
    cloud = next(row for row in explained if row["key"] == "cloud-inference")
    assert cloud["explain"]["cost_usd"][0]["expression"] == f"8 GPUs × {HOURS} h × $2.50/GPU-h"
    schema = client.get(reverse("api-schema"), {"format": "json"}).json()
    parameters = schema["paths"]["/api/v1/reports/cost/"]["get"]["parameters"]
    assert "explain" in {parameter["name"] for parameter in parameters}
    assert "ExplainStep" in schema["components"]["schemas"]


@pytest.mark.django_db
def test_overview_kpis_explain_themselves(client, make_user, gpu_model):
    """A cloud pool in service since the month began, every hour measured, half busy."""
    from decimal import Decimal

    from django.utils import timezone

    from apps.pools.models import Deployment, Purpose
    from apps.telemetry.models import PoolHourlyUsage
    from apps.telemetry.rollups.days import rebuild_days

    now = timezone.now()
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    hours = int((now.replace(minute=0, second=0, microsecond=0) - month_start) / timedelta(hours=1))
    hours += 1  # the current hour counts
    pool = Pool(
        name="Serving",
        slug="serving",
        purpose=Purpose.INFERENCE,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=gpu_model,
        gpu_count=8,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
    )
    save_pool(pool)
    Pool.objects.filter(pk=pool.pk).update(created_at=month_start, in_service_from=month_start)
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=month_start + timedelta(hours=step),
            reporting_gpus=8,
            capacity_gpu_hours=8,
            busy_gpu_hours=4,
            avg_utilization_pct=50,
        )
        for step in range(hours)
    )
    rebuild_days(month_start, now + timedelta(hours=1))
    client.force_login(make_user("reader"))
    overview = client.get(reverse("dashboard:overview")).content.decode()
    assert 'hx-get="/reports/explain/overview/?kpi=cost"' in overview
    url = reverse("dashboard:overview_explain")

    cost = client.get(url, {"kpi": "cost"}, headers={"HX-Request": "true"}).content.decode()
    assert f"8 GPUs × {hours} h × $2.00/GPU-h" in cost
    assert f"${8 * hours * 2.0:,.2f}" in cost

    # "the last 24 h" is 24 hour slots, this one included (selectors: ceil_hour(now) − 24 h).
    in_last_day = min(hours, 24)
    utilization = client.get(url, {"kpi": "utilization"}).content.decode()
    assert f"100 × {4 * in_last_day:,} busy ÷ {8 * in_last_day:,} measured GPU-h" in utilization
    assert "50.00 %" in utilization

    gpus = client.get(url, {"kpi": "gpus"}).content.decode()
    assert "0 + 8 + 0" in gpus or "8 + 0 + 0" in gpus or "0 + 0 + 8" in gpus
    for kpi in ("idle", "per-request", "training", "unmeasured", "drills"):
        response = client.get(url, {"kpi": kpi}, headers={"HX-Request": "true"})
        assert response.status_code == 200 and 'id="explanation"' in response.content.decode()
    assert client.get(url, {"kpi": "nope"}).status_code == 404
