"""The technical lead's review in Chromium: the live what-if calculator and the workload
page's memory chart."""

import re

import pytest
from playwright.sync_api import expect

from apps.pools.models import Pool
from tests.factories import TEST_PASSWORD


@pytest.fixture
def signed_in_lead(page, live_server, make_user, transactional_db, demo):
    user = make_user("lead")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()
    return page


@pytest.mark.browser
def test_calculator_recomputes_live_as_fields_change(signed_in_lead, live_server, screenshot_dir):
    page = signed_in_lead
    page.goto(f"{live_server.url}/calculator/")
    page.evaluate("window.__noReload = true")
    expect(page.locator("#estimate-fits")).to_have_text("fits")
    expect(page.locator("#chart-calculator-memory svg.main-svg").first).to_be_attached()
    expect(page.locator("#group-training")).to_be_hidden()

    # A 128k context for 64 sequences of Llama-3-8B cannot fit on one 80 GB GPU.
    page.fill("#id_context_length", "131072")
    page.fill("#id_concurrent_sequences", "64")
    expect(page.locator("#estimate-fits")).to_have_text("does not fit")
    expect(page.locator("#chart-calculator-memory svg.main-svg").first).to_be_attached()

    # Switching to training shows the training settings and recomputes.
    page.select_option("#id_mode", "training")
    expect(page.locator("#group-training")).to_be_visible()
    expect(page.locator("#group-inference")).to_be_hidden()
    page.select_option("#id_zero_stage", "3")
    expect(page.locator("#memory-breakdown")).to_contain_text("Optimizer states")

    # A bad value is named, not swallowed.
    page.fill("#id_tensor_parallel", "3")
    expect(page.locator("#calculator-errors")).to_contain_text("tensor_parallel")
    page.screenshot(path=str(screenshot_dir / "calculator.png"), full_page=True)
    assert page.evaluate("window.__noReload") is True, "the page reloaded"
    assert "tensor_parallel=3" in page.url, "the URL keeps the inputs so they can be shared"


@pytest.mark.browser
def test_workload_page_draws_the_memory_chart_against_the_gpu(
    signed_in_lead, live_server, screenshot_dir
):
    page = signed_in_lead
    page.goto(f"{live_server.url}/workloads/nightly-batch-summaries/")
    expect(page.locator("#chart-memory svg.main-svg").first).to_be_attached()
    expect(page.locator("#chart-memory")).to_contain_text("A100 SXM 80GB: 80 GB")
    expect(page.locator("#recommendations tbody tr").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "workload-does-not-fit.png"), full_page=True)


@pytest.mark.browser
def test_pool_list_sorts_by_a_header_click_and_keeps_it_through_a_filter(
    signed_in_lead, live_server, screenshot_dir
):
    """The price-per-GPU-hour header swaps the table in place (no reload), pushes the
    sorted URL, and a filter change afterwards keeps that order."""
    page = signed_in_lead
    page.goto(f"{live_server.url}/pools/")
    page.evaluate("window.__noReload = true")
    expected = sorted(
        Pool.objects.active().values_list("effective_price_per_gpu_hour_usd", "name"),
    )

    header = page.locator("#pool-table thead a", has_text="Price per GPU-hour")
    header.click()
    expect(page.locator("#pool-table thead a.table-sort.asc")).to_have_text("Price per GPU-hour")
    expect(page).to_have_url(re.compile(r"[?&]sort=price\b"))
    names = page.locator("#pool-table tbody tr td:first-child a").all_inner_texts()
    assert names == [name for _, name in expected]

    page.locator("#pool-table thead a", has_text="Price per GPU-hour").click()
    expect(page.locator("#pool-table thead a.table-sort.desc")).to_have_text("Price per GPU-hour")
    expect(page).to_have_url(re.compile(r"[?&]sort=-price\b"))
    names = page.locator("#pool-table tbody tr td:first-child a").all_inner_texts()
    assert names == [name for _, name in reversed(expected)]

    page.select_option("#id_purpose", "inference")
    expect(page).to_have_url(re.compile(r"purpose=inference"))
    inference = sorted(
        Pool.objects.active()
        .filter(purpose="inference")
        .values_list("effective_price_per_gpu_hour_usd", "name"),
        reverse=True,
    )
    expect(page.locator("#pool-table tbody tr")).to_have_count(len(inference))
    names = page.locator("#pool-table tbody tr td:first-child a").all_inner_texts()
    assert names == [name for _, name in inference]
    assert "sort=-price" in page.url
    page.screenshot(path=str(screenshot_dir / "pool-list-sorted.png"), full_page=True)
    assert page.evaluate("window.__noReload") is True, "the page reloaded"


@pytest.mark.browser
def test_forms_show_only_the_fields_of_the_choice(signed_in_lead, live_server, screenshot_dir):
    page = signed_in_lead
    page.goto(f"{live_server.url}/workloads/new/")
    training = page.locator('fieldset[data-show-when="id_kind"]', has_text="Training")
    inference = page.locator('fieldset[data-show-when="id_kind"]', has_text="Inference")
    page.select_option("#id_kind", "online_inference")
    expect(training).to_be_hidden()
    expect(inference).to_be_visible()
    # A hidden required field no longer blocks the browser's own validation.
    assert page.locator("#id_seq_len").evaluate("input => input.required") is False
    page.select_option("#id_kind", "pre_training")
    expect(training).to_be_visible()
    expect(inference).to_be_hidden()
    assert page.locator("#id_seq_len").evaluate("input => input.required") is True
    page.screenshot(path=str(screenshot_dir / "workload-form-training.png"), full_page=True)

    page.goto(f"{live_server.url}/pools/new/")
    cloud = page.locator("fieldset", has_text="Cloud price")
    owned = page.locator("fieldset", has_text="Owned hardware")
    page.select_option("#id_deployment", "cloud_on_demand")
    expect(cloud).to_be_visible()
    expect(owned).to_be_hidden()
    page.select_option("#id_deployment", "on_premises")
    expect(cloud).to_be_hidden()
    expect(owned).to_be_visible()

    page.goto(f"{live_server.url}/calculator/")
    expect(page.locator("#group-custom-shape")).to_be_hidden()  # Llama-3-8B is chosen
    page.select_option("#id_model", "")
    expect(page.locator("#group-custom-shape")).to_be_visible()
