"""An export made from the scenario page uses the what-if inputs on screen, says so, and
prints every price it used, pool prices included; its figures match the page and the API
for the same inputs. Option prices follow the same bounds as the pools, in the scenario's
currency."""

import csv
import io
import re
from decimal import Decimal

import pytest
from django.urls import reverse
from openpyxl import load_workbook
from pypdf import PdfReader

from apps.procurement.models import ComparisonExport, ScenarioOption

# The test scenario (conftest): four measured hours 2, 2, 6, 10 busy GPUs. With the
# what-if horizon of 2 months (1,460 h), each curve hour stands for 1460 ÷ 4 = 365 h.
#   Rent H100 at $2:          20 GPU-h × 365 × 2    = 14,600
#   Hybrid H100 (r 1, o 2):   Cost(R=2) = 32 a curve → 32 × 365 = 11,680
#   Pool H100 at the pool's $2.99 on demand: 20 × 365 × 2.99 = 21,827
WHAT_IF = {
    "horizon_months": "2",
    "window_days": "7",
    "reference_efficiency": "0.4",
    "entered_gpu_hours_per_month": "",
}
EXPECTED_TOTALS = {"Rent H100": 14_600, "Hybrid H100": 11_680, "Pool H100": 21_827}


@pytest.fixture
def priced_from_pool(scenario, measured_pool):
    return ScenarioOption.objects.create(
        scenario=scenario,
        position=3,
        name="Pool H100",
        kind="on_demand",
        gpu_model=measured_pool.gpu_model,
        source_pool=measured_pool,
    )


def _page(client, scenario, params):
    return client.get(
        reverse("procurement:scenario_detail", args=[scenario.slug]), params
    ).content.decode()


def _page_totals(page) -> dict[str, int]:
    rows = re.findall(r'data-option="([^"]+)".*?data-col="total">([\d,]+) USD<', page, re.DOTALL)
    return {name: int(total.replace(",", "")) for name, total in rows}


def _hidden_export_inputs(page) -> dict[str, str]:
    """What the page's export buttons send besides the format."""
    return dict(
        re.findall(r'<input type="hidden" form="export-form" name="(\w+)" value="([^"]*)">', page)
    )


def _export(client, scenario, export_format, sent, capture):
    with capture(execute=True):
        response = client.post(
            reverse("procurement:export_create", args=[scenario.slug]),
            {"format": export_format, **sent},
        )
    assert response.status_code == 302
    export = ComparisonExport.objects.filter(format=export_format).latest("pk")
    export.refresh_from_db()
    assert export.status == "succeeded", export.message
    download = client.get(reverse("procurement:export_download", args=[export.pk]))
    return export, b"".join(download.streaming_content)


@pytest.mark.django_db
def test_an_export_carries_the_what_if_inputs_on_screen_and_every_price_it_used(
    procurement_client,
    scenario,
    priced_from_pool,
    media_root,
    eager_celery,
    django_capture_on_commit_callbacks,
):
    page = _page(procurement_client, scenario, WHAT_IF)
    assert _page_totals(page) == EXPECTED_TOTALS
    assert 'id="what-if-applied"' in page and "(saved: 1)" in page
    sent = _hidden_export_inputs(page)
    assert sent["horizon_months"] == "2"

    # CSV: plain numbers, the what-if said, the pool's price and where it came from.
    export, content = _export(
        procurement_client, scenario, "csv", sent, django_capture_on_commit_callbacks
    )
    assert export.what_if == {"horizon_months": 2}
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"))))
    total = rows[0].index("Total cost (USD)")
    assert {row[0]: round(float(row[total])) for row in rows[1:4]} == EXPECTED_TOTALS
    assert "Paid utilization (ratio)" in rows[0]  # a CSV has no % format
    by_label = {row[0]: row[1:] for row in rows if row}
    assert "Horizon (months) 2 (saved: 1)" in by_label["What-if"][0]
    assert by_label["Horizon (months) (what-if)"] == ["2"]
    assert by_label["Horizon (months), saved on the scenario"] == ["1"]
    pool_price = next(
        row for row in rows if row[:2] == ["Pool H100", "On-demand price per GPU-hour"]
    )
    assert float(pool_price[2]) == 2.99
    assert pool_price[3] == "USD per GPU-hour"
    assert pool_price[4] == "from pool Test H100 training: 2.99 USD"
    assert any(
        row[:2] == ["Rent H100", "On-demand price per GPU-hour"] and row[4] == "typed on the option"
        for row in rows
    )

    # XLSX: numbers stored as numbers on every sheet.
    _, content = _export(
        procurement_client, scenario, "xlsx", sent, django_capture_on_commit_callbacks
    )
    workbook = load_workbook(io.BytesIO(content))
    sheet = workbook["Comparison"]
    headers = [cell.value for cell in sheet[1]]
    column = headers.index("Total cost (USD)")
    totals = {row[0].value: row[column].value for row in sheet.iter_rows(min_row=2, max_row=4)}
    assert {name: round(value) for name, value in totals.items()} == EXPECTED_TOTALS
    paid = headers.index("Paid utilization (%)")
    assert sheet.cell(row=2, column=paid + 1).number_format == "0%"
    inputs = {
        row[0]: row[1] for row in workbook["Inputs & assumptions"].iter_rows(values_only=True)
    }
    assert inputs["Horizon (months) (what-if)"] == 2
    assert inputs["Horizon (months), saved on the scenario"] == 1
    assert inputs["Reference efficiency (ratio, 0–1)"] == 0.4
    assert inputs["Exchange rate (currency per USD)"] == 1
    prices = workbook["Prices used"]
    pool_row = next(
        row
        for row in prices.iter_rows(min_row=2)
        if row[0].value == "Pool H100" and row[1].value == "On-demand price per GPU-hour"
    )
    assert pool_row[2].data_type == "n" and pool_row[2].value == pytest.approx(2.99)
    assert pool_row[4].value.startswith("from pool Test H100 training")

    # PDF: the page's totals, the what-if sentence and the pool's price.
    _, content = _export(
        procurement_client, scenario, "pdf", sent, django_capture_on_commit_callbacks
    )
    text = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages).replace(
        "\n", " "
    )
    for name, value in EXPECTED_TOTALS.items():
        assert f"{value:,}" in text, name
    assert "What-if inputs applied, not saved on the scenario: Horizon (months) 2" in text
    assert "from pool Test H100 training: 2.99 USD" in text

    # The API, asked with the same inputs, returns the same figures and prices.
    detail = procurement_client.get(
        reverse("scenario-detail", args=[scenario.slug]), {"horizon_months": "2"}
    ).json()
    assert detail["what_if_applied"] == [{"name": "horizon_months", "value": 2, "saved": 1}]
    lines = {line["option"]["name"]: line for line in detail["comparison"]["options"]}
    assert {
        name: round(Decimal(line["result"]["cost"]["total"])) for name, line in lines.items()
    } == EXPECTED_TOTALS
    (pool_line,) = [
        price
        for price in lines["Pool H100"]["prices_used"]
        if price["label"] == "On-demand price per GPU-hour"
    ]
    assert pool_line["value"] == pytest.approx(2.99)
    assert pool_line["source"] == "from pool Test H100 training: 2.99 USD"
    scenario.refresh_from_db()
    assert scenario.horizon_months == 1  # nothing was saved


@pytest.mark.django_db
def test_an_export_without_what_if_says_it_is_the_saved_scenario(
    procurement_client, scenario, media_root, eager_celery, django_capture_on_commit_callbacks
):
    page = _page(procurement_client, scenario, {})
    assert _hidden_export_inputs(page) == {}
    export, content = _export(
        procurement_client, scenario, "csv", {}, django_capture_on_commit_callbacks
    )
    assert export.what_if == {}
    assert b"What-if inputs: none; the scenario as saved." in content


@pytest.mark.django_db
def test_export_with_tampered_what_if_inputs_exports_nothing(procurement_client, scenario):
    response = procurement_client.post(
        reverse("procurement:export_create", args=[scenario.slug]),
        {"format": "csv", **WHAT_IF, "horizon_months": "1,5"},
        follow=True,
    )
    assert not ComparisonExport.objects.exists()
    assert "&quot;1,5&quot;: enter a whole number" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"reference_efficiency": "1,4"}, "reference_efficiency", '"1,4": use a decimal point'),
        ({"reference_efficiency": "1.4"}, "reference_efficiency", "between 0.01 and 1"),
        ({"horizon_months": "121"}, "horizon_months", "between 1 and 120 months; got 121"),
        ({"horizon_months": "1,000"}, "horizon_months", "without thousands separators"),
    ],
)
def test_the_api_what_if_refuses_what_the_page_refuses(
    client, make_user, scenario, params, field, message
):
    client.force_login(make_user("reader"))
    response = client.get(reverse("scenario-detail", args=[scenario.slug]), params)
    assert response.status_code == 400
    assert message in response.json()[field][0]


@pytest.mark.django_db
def test_option_prices_are_bounded_in_the_scenarios_currency(procurement_client, scenario):
    """At 150 JPY per USD, the $50 confirmation threshold is 7,500 JPY per GPU-hour and
    the 2 USD per kWh ceiling is 300 JPY."""
    scenario.currency, scenario.usd_exchange_rate = "JPY", Decimal("150")
    scenario.save()
    url = reverse("procurement:option_create", args=[scenario.slug])
    data = {
        "name": "Tokyo rent",
        "kind": "on_demand",
        "position": 3,
        "compliance_zone": "other",
        "gpu_model": scenario.options.first().gpu_model_id,
        "on_demand_price_per_gpu_hour": "450",  # 3 USD: no question asked
        "throughput_basis": "dense_peak",
        "efficiency": "0.4",
        "hybrid_baseline": "reserved",
        "power_price_per_kwh": "301",
    }
    refused = procurement_client.post(url, data)
    errors = refused.context["form"].errors
    assert set(errors) == {"power_price_per_kwh"}
    assert "between 0 and 300 JPY per kWh; got 301" in errors["power_price_per_kwh"][0]

    high = {**data, "power_price_per_kwh": "30", "on_demand_price_per_gpu_hour": "9000"}
    asked = procurement_client.post(url, high)
    assert asked.status_code == 200
    body = asked.content.decode()
    assert "Yes, 9000.00 JPY per GPU-hour is right" in body
    assert "is above 7500.00 JPY per GPU-hour" in body
    assert not ScenarioOption.objects.filter(name="Tokyo rent").exists()
    saved = procurement_client.post(url, {**high, "confirm_on_demand_price_per_gpu_hour": "9000"})
    assert saved.status_code == 302
    option = ScenarioOption.objects.get(name="Tokyo rent")
    assert option.on_demand_price_per_gpu_hour == Decimal("9000")
