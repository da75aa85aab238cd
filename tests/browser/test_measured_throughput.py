"""A lead opens an inference workload in Chromium: the measured-beside-the-ceiling panel
loads by itself under the Fit card, and the scenario built on the workload says which
option ratios its pilots measured."""

import pytest
from playwright.sync_api import expect

from apps.procurement.models import Scenario, ScenarioOption
from tests.factories import (
    TEST_PASSWORD,
    PilotResultFactory,
    UserFactory,
    WorkloadFactory,
    seeded_architecture,
    seeded_gpu_model,
)


@pytest.mark.browser
def test_the_workload_and_its_scenario_show_what_pilots_measured(
    page, live_server, transactional_db, pool, screenshot_dir
):
    serving = WorkloadFactory(
        name="Chat 8B",
        slug="chat-8b",
        pool=pool,
        kind="online_inference",
        model_architecture=seeded_architecture("llama-3-8b"),
        gpu_count=1,
        data_parallel=1,
    )
    own = PilotResultFactory(workload=serving, name="h100 run", output_tokens_per_second=658.3)
    PilotResultFactory(
        workload=serving,
        gpu_model=seeded_gpu_model("l40s"),
        name="l40s run",
        output_tokens_per_second=300.0,
    )
    scenario = Scenario.objects.create(
        name="Where to serve",
        slug="where-to-serve",
        demand_source="entered",
        demand_workload=serving,
        entered_gpu_hours_per_month=730,
        reference_gpu_model=pool.gpu_model,
    )
    ScenarioOption.objects.create(
        scenario=scenario,
        name="Rent L40S",
        kind="on_demand",
        gpu_model=seeded_gpu_model("l40s"),
        on_demand_price_per_gpu_hour=1,
    )
    lead = UserFactory(role="lead")
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", lead.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()

    page.goto(f"{live_server.url}/workloads/chat-8b/")
    panel = page.locator("#workload-fit")
    expect(panel).to_contain_text("Measured beside the ceiling")
    # 658.3 ÷ the 1,316.6 tokens/s ceiling of tests/pilots/test_fit.py.
    expect(panel.locator(f'[data-fit-pilot="{own.pk}"] [data-col="share"]')).to_contain_text(
        "50.0 %"
    )
    page.screenshot(path=screenshot_dir / "workload-fit-measured.png", full_page=True)

    page.goto(f"{live_server.url}/procurement/where-to-serve/")
    badge = page.locator('[data-col="throughput"] [data-throughput-source]')
    expect(badge).to_have_text("measured")
    # 300 ÷ 658.3 output tokens/s per GPU.
    expect(page.locator('[data-col="throughput"]')).to_contain_text(f"{300 / 658.3:.2f}×")
