"""Procurement normalises options by measured pilot throughput where the demand's
workload has a pilot on both the option's GPU model and the reference GPU model, and says
so in the page, the API and every export; elsewhere it keeps the catalog estimate and says
which pilot is missing."""

import csv
import io
import math
from decimal import Decimal

import pytest
from django.urls import reverse
from openpyxl import load_workbook
from pypdf import PdfReader

from apps.pilots.models import PilotResult
from apps.procurement.comparison.demand import build_demand
from apps.procurement.comparison.services import build_comparison
from apps.procurement.exports.pdf import build_pdf
from apps.procurement.exports.spreadsheets import build_csv, build_xlsx
from apps.procurement.models import Scenario, ScenarioOption
from apps.telemetry.models import WorkloadHourlyRequests
from tests.factories import (
    PilotResultFactory,
    WorkloadFactory,
    seeded_architecture,
    seeded_gpu_model,
)
from tests.procurement.conftest import BUSY, START, add_measurements

# Pilots of the serving workload: output tokens/s over the GPUs that served them.
H100_TOKENS_PER_SECOND, H100_GPUS = 6000.0, 2  # 3,000 tokens/s per GPU
L40S_PILOTS = ((4000.0, 4), (2400.0, 2))  # 1,000 and 1,200 tokens/s per GPU
L40S_PRICE_USD = Decimal("1")


def _pilot(workload, gpu_slug, tokens_per_second, gpus, name):
    return PilotResultFactory(
        workload=workload,
        gpu_model=seeded_gpu_model(gpu_slug),
        name=name,
        gpu_count=gpus,
        output_tokens_per_second=tokens_per_second,
    )


@pytest.fixture
def serving(pool):
    """An inference workload on 8 of the test pool's 16 × H100 SXM."""
    return WorkloadFactory(
        name="Chat serving",
        slug="chat-serving",
        pool=pool,
        kind="online_inference",
        model_architecture=seeded_architecture(),
        gpu_count=8,
        data_parallel=1,
    )


@pytest.fixture
def piloted_scenario(pool, serving):
    add_measurements(pool, serving)
    _pilot(serving, "h100-sxm", H100_TOKENS_PER_SECOND, H100_GPUS, "h100 tp2")
    for index, (tokens, gpus) in enumerate(L40S_PILOTS):
        _pilot(serving, "l40s", tokens, gpus, f"l40s run {index}")
    scenario = Scenario.objects.create(
        name="Serving scenario",
        slug="serving-scenario",
        horizon_months=1,
        demand_source="measured_workload",
        demand_workload=serving,
        window_days=7,
    )
    for position, (name, gpu) in enumerate(
        (("Rent L40S", "l40s"), ("Rent A100", "a100-sxm-80gb")), start=1
    ):
        ScenarioOption.objects.create(
            scenario=scenario,
            position=position,
            name=name,
            kind="on_demand",
            gpu_model=seeded_gpu_model(gpu),
            on_demand_price_per_gpu_hour=L40S_PRICE_USD,
            throughput_basis="dense_peak",
        )
    return scenario


def _row(comparison, name):
    return next(row for row in comparison.rows if row.option.name == name)


@pytest.mark.django_db
def test_the_ratio_is_the_best_pilots_measured_tokens_per_gpu(piloted_scenario):
    comparison = build_comparison(piloted_scenario)
    l40s = _row(comparison, "Rent L40S")
    assert l40s.throughput.measured
    # The better L40S run: 2,400 tokens/s ÷ 2 GPUs = 1,200; the H100's 6,000 ÷ 2 = 3,000.
    assert l40s.throughput.option_pilot.name == "l40s run 1"
    assert l40s.result.spec.throughput_ratio == pytest.approx(1200 / 3000)
    # Demand: the pool's busy GPUs × 8 of 16 GPUs = (1, 1, 3, 5) H100s; in L40S at 0.4 H100
    # each, ⌈1 ÷ 0.4⌉ = 3, 3, ⌈7.5⌉ = 8, ⌈12.5⌉ = 13 GPUs.
    shares = [busy * 8 / 16 for busy in BUSY]
    assert l40s.result.gpus_needed_by_hour == tuple(math.ceil(share / 0.4) for share in shares)
    assert l40s.result.gpus_needed_by_hour == (3, 3, 8, 13)
    # 27 GPU-hours in 4 measured hours, scaled to 730 h: 27 × 182.5 × $1 = $4,927.50.
    assert l40s.result.total_cost == pytest.approx(27 * 730 / 4 * 1)
    assert "1,200" in l40s.throughput.explanation and "3,000" in l40s.throughput.explanation


@pytest.mark.django_db
def test_without_a_pilot_on_the_option_gpu_the_estimate_stays_and_says_why(piloted_scenario):
    a100 = _row(build_comparison(piloted_scenario), "Rent A100")
    assert not a100.throughput.measured
    assert a100.throughput.option_pilot is None
    gpu = seeded_gpu_model("a100-sxm-80gb")
    reference = seeded_gpu_model("h100-sxm")
    # The dense-peak estimate at equal efficiency: A100 BF16 peak ÷ H100 BF16 peak.
    assert a100.result.spec.throughput_ratio == pytest.approx(
        gpu.dense_peak_flops("bf16") / reference.dense_peak_flops("bf16")
    )
    assert "no pilot of Chat serving on A100" in a100.throughput.explanation


@pytest.mark.django_db
def test_a_pilot_on_only_one_side_is_not_mixed_with_a_catalog_bound(piloted_scenario):
    PilotResult.objects.filter(gpu_model__slug="h100-sxm").delete()
    l40s = _row(build_comparison(piloted_scenario), "Rent L40S")
    assert not l40s.throughput.measured
    assert "H100" in l40s.throughput.explanation


@pytest.mark.django_db
def test_token_demand_without_pool_rollups_is_divided_by_the_measured_throughput(pool, serving):
    for index in range(3):
        WorkloadHourlyRequests.objects.create(
            workload=serving,
            hour=START.replace(hour=index),
            requests=100,
            input_tokens=1,
            output_tokens=2_160_000 * (index + 1),
            errors=0,
        )
    _pilot(serving, "h100-sxm", H100_TOKENS_PER_SECOND, H100_GPUS, "h100 tp2")
    scenario = Scenario.objects.create(
        name="Tokens",
        slug="tokens",
        horizon_months=1,
        demand_source="measured_workload",
        demand_workload=serving,
        window_days=7,
    )
    demand, info = build_demand(scenario)
    # 3,000 tokens/s × 3,600 s = 10.8M tokens per H100-hour: 2.16M, 4.32M, 6.48M → 0.2, 0.4, 0.6.
    assert demand.hourly_reference_gpus == pytest.approx((0.2, 0.4, 0.6))
    assert any("measured by pilot" in note for note in info.notes)


@pytest.mark.django_db
def test_the_page_and_the_api_say_measured_or_estimate(client, make_user, piloted_scenario):
    client.force_login(make_user("procurement"))
    page = client.get(
        reverse("procurement:scenario_detail", args=[piloted_scenario.slug])
    ).content.decode()
    assert page.count('data-throughput-source="pilot"') == 1
    assert page.count('data-throughput-source="estimate"') == 1
    assert "Measured: pilot “l40s run 1” on L40S" in page
    api = client.get(f"/api/v1/scenarios/{piloted_scenario.slug}/").json()
    lines = {line["option"]["name"]: line for line in api["comparison"]["options"]}
    measured = lines["Rent L40S"]["throughput"]
    assert measured["source"] == "pilot"
    assert measured["option_output_tokens_per_second_per_gpu"] == pytest.approx(1200)
    assert measured["reference_output_tokens_per_second_per_gpu"] == pytest.approx(3000)
    assert lines["Rent L40S"]["result"]["throughput_ratio"] == pytest.approx(0.4)
    estimated = lines["Rent A100"]["throughput"]
    assert estimated["source"] == "estimate"
    assert estimated["option_pilot"] is None


@pytest.mark.django_db
def test_every_export_states_how_each_ratio_was_found(piloted_scenario):
    comparison = build_comparison(piloted_scenario)
    explanations = {row.option.name: row.throughput.explanation for row in comparison.rows}
    table = list(csv.reader(io.StringIO(build_csv(comparison).decode("utf-8-sig"))))
    header = next(row for row in table if "Throughput measured or estimated" in row)
    column = header.index("Throughput measured or estimated")
    start = table.index(header) + 1
    by_option = {row[0]: row[column] for row in table[start : start + len(explanations)]}
    assert by_option["Rent L40S"] == explanations["Rent L40S"]
    assert by_option["Rent A100"] == explanations["Rent A100"]

    sheet = load_workbook(io.BytesIO(build_xlsx(comparison)))["Comparison"]
    headers = [cell.value for cell in sheet[1]]
    column = headers.index("Throughput measured or estimated") + 1
    cells = {sheet.cell(row, 1).value: sheet.cell(row, column).value for row in (2, 3)}
    assert cells == explanations

    text = " ".join(
        page.extract_text() for page in PdfReader(io.BytesIO(build_pdf(comparison))).pages
    )
    flat = " ".join(text.split())
    assert "Throughput measured or estimated" in flat
    assert "Measured: pilot" in flat and "Estimated:" in flat


@pytest.mark.django_db
def test_the_demo_scenario_is_normalised_by_its_pilots(demo):
    from apps.pilots.demo import DEMO_H100_RESULT, DEMO_RESULT
    from apps.procurement.demo import SCENARIO_SLUG

    comparison = build_comparison(Scenario.objects.get(slug=SCENARIO_SLUG))
    rows = [row for row in comparison.rows if row.result is not None]
    assert rows and all(row.throughput.measured for row in rows)
    l40s = [row for row in rows if row.option.gpu_model.slug == "l40s"]
    assert l40s and all(row.result.spec.throughput_ratio == 1 for row in l40s)
    assert all("the reference GPU model itself" in row.throughput.explanation for row in l40s)
    h100 = next(row for row in rows if row.option.gpu_model.slug == "h100-pcie")
    # Both demo pilots ran on 4 GPUs: 3,620.4 ÷ 1,946.47 tokens/s.
    assert h100.result.spec.throughput_ratio == pytest.approx(
        DEMO_H100_RESULT["output_throughput"] / DEMO_RESULT["output_throughput"]
    )
