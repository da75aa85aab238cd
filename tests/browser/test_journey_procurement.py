"""The procurement officer's journey in Chromium, in English and in Chinese: on the demo
fleet, a scenario measured on a pool's busy GPUs, four options (on demand, reserved,
owned, hybrid), the comparison and its recommendation, a what-if horizon that changes the
comparison without saving it, then CSV, XLSX and PDF exports whose totals are the page's.

The expected totals are computed here from the pool's hourly rollups with the formulas of
FORMULAS.md (on demand pays the busy GPU-hours, reserved and owned pay the peak every
hour, a hybrid reserves the baseline that costs least), not by the app's own code."""

import csv
import io
import math
import re
import subprocess
from datetime import timedelta
from decimal import Decimal

import pytest
from openpyxl import load_workbook
from playwright.sync_api import expect
from pypdf import PdfReader

from apps.pools.models import Pool
from apps.procurement.models import Scenario
from apps.telemetry.models import PoolHourlyUsage
from tests.factories import TEST_PASSWORD

HOURS_PER_MONTH = 730
POOL_SLUG = "train-burst-h100-us"  # a demo cloud pool of H100 SXM with 28 days of rollups
WINDOW_DAYS = 7
HORIZON = 12
WHAT_IF_HORIZON = 24
ON_DEMAND, RESERVED = Decimal("2.99"), Decimal("1.90")
PURCHASE, AMORTISATION, KWH, PUE = Decimal("25000"), 12, Decimal("0.10"), Decimal("1.30")

TEXT = {
    "en": {
        "scenario": "Burst training capacity",
        "options": ["On-demand H100", "Reserved H100", "Owned H100", "Hybrid H100"],
        "comparison": f"Comparison over {HORIZON} months",
        "what_if_comparison": f"Comparison over {WHAT_IF_HORIZON} months",
        "what_if_applied": "What-if inputs applied (not saved)",
        "recommendation": "costs",
        "total_header": "Total cost (USD)",
        "option_header": "Option",
        "comparison_sheet": "Comparison",
        "pdf_title": "procurement comparison",
        "pdf_recommendation": "Recommendation",
        "ready": "is ready",
    },
    "zh-hans": {
        "scenario": "突发训练容量",
        "options": ["按需 H100", "预留 H100", "自有 H100", "混合 H100"],
        "comparison": f"{HORIZON} 个月比较",
        "what_if_comparison": f"{WHAT_IF_HORIZON} 个月比较",
        "what_if_applied": "已应用假设输入",
        "recommendation": "个月内的成本为",
        "total_header": "总成本（USD）",
        "option_header": "选项",
        "comparison_sheet": "比较",
        "pdf_title": "采购比较",
        "pdf_recommendation": "建议",
        "ready": "已就绪",
    },
}


def _busy_curve(pool) -> list[float]:
    """The pool's busy GPUs in each hour of the last WINDOW_DAYS days of rollups."""
    hours = PoolHourlyUsage.objects.filter(pool=pool).order_by("hour")
    latest = hours.last().hour
    start = latest - timedelta(days=WINDOW_DAYS) + timedelta(hours=1)
    return [row.busy_gpu_hours for row in hours.filter(hour__gte=start)]


def _expected_totals(curve, months, tdp_watts) -> list[float]:
    """On demand, reserved, owned and hybrid totals over ``months``, each hour of the curve
    standing for an equal share of the horizon; the options run on the pool's own GPU at
    the reference efficiency, so one option GPU does one reference GPU's work."""
    needed = [math.ceil(busy - 1e-9) for busy in curve]
    horizon_hours = months * HOURS_PER_MONTH
    scale = horizon_hours / len(needed)
    peak = max(needed)
    on_demand = float(ON_DEMAND)
    reserved = float(RESERVED)
    owned_per_hour = float(PURCHASE) / (AMORTISATION * HOURS_PER_MONTH) + tdp_watts / 1000 * float(
        PUE
    ) * float(KWH)

    def hybrid(baseline):
        burst = sum(max(0, gpus - baseline) for gpus in needed) * scale
        return baseline * horizon_hours * reserved + burst * on_demand

    return [
        sum(needed) * scale * on_demand,
        peak * horizon_hours * reserved,
        peak * horizon_hours * owned_per_hour,
        min(hybrid(baseline) for baseline in range(peak + 1)),
    ]


def _amount(text: str) -> float:
    """7,300 USD → 7300.0"""
    return float(re.sub(r"[^\d.]", "", text))


def _page_totals(page, names) -> list[str]:
    return [
        page.locator(f'#comparison-table tr[data-option="{name}"] td[data-col="total"]')
        .inner_text()
        .strip()
        for name in names
    ]


def _shot(page, screenshot_dir, lang, step: list, name):
    step[0] += 1
    path = screenshot_dir / f"journey-procurement-{lang}-{step[0]:02d}-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def _add_option(page, live_server, slug, kind, fields, selects=None):
    page.click(f'a[href="/procurement/{slug}/options/new/?kind={kind}"]')
    expect(page).to_have_url(re.compile(rf"/procurement/{slug}/options/new/\?kind={kind}$"))
    expect(page.locator("#id_kind")).to_have_value(kind)
    for name, value in (selects or {}).items():
        page.select_option(f"#id_{name}", value)
    for name, value in fields.items():
        page.fill(f"#id_{name}", str(value))


@pytest.fixture
def demo_fleet(transactional_db, demo):
    """The demo fleet, committed for the live server."""


@pytest.mark.browser
# One language per journey (the lead's in English, ops' and procurement's in Chinese):
# every page in both is rendered by tests/*/test_in_chinese.py and
# tests/browser/test_wide_tables.py.
@pytest.mark.parametrize("lang", ["zh-hans"])
def test_procurement_officer_compares_what_ifs_and_exports(
    page,
    live_server,
    make_user,
    demo_fleet,
    lang,
    screenshot_dir,
    media_root,
    eager_celery,
    tmp_path,
):
    text = TEXT[lang]
    names = text["options"]
    step = [0]
    pool = Pool.objects.select_related("gpu_model").get(slug=POOL_SLUG)
    curve = _busy_curve(pool)
    expected = _expected_totals(curve, HORIZON, pool.gpu_model.tdp_watts)

    page.set_viewport_size({"width": 1440, "height": 900})
    page.context.add_cookies([{"name": "django_language", "value": lang, "url": live_server.url}])
    user = make_user("procurement")
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", TEST_PASSWORD)
    page.click("form button[type=submit]")
    expect(page.locator("#current-user")).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", lang)
    _shot(page, screenshot_dir, lang, step, "signed-in")

    # The scenario: a year of the pool's measured busy GPUs, from its last week.
    page.goto(f"{live_server.url}/procurement/new/")
    page.fill("#id_name", text["scenario"])
    page.fill("#id_horizon_months", str(HORIZON))
    page.select_option("#id_demand_source", "measured_pool")
    page.select_option("#id_demand_pool", str(pool.pk))
    page.fill("#id_window_days", str(WINDOW_DAYS))
    _shot(page, screenshot_dir, lang, step, "scenario-form")
    page.click("form.card button[type=submit]")
    expect(page.locator("#what-if-form")).to_be_visible()
    scenario = Scenario.objects.get(name=text["scenario"])
    assert scenario.demand_source == "measured_pool" and scenario.demand_pool_id == pool.pk
    assert scenario.horizon_months == HORIZON and scenario.window_days == WINDOW_DAYS
    slug = scenario.slug
    expect(page).to_have_url(f"{live_server.url}/procurement/{slug}/")
    expect(page.locator("#comparison-table")).to_have_count(0)  # no options yet
    _shot(page, screenshot_dir, lang, step, "scenario-saved")

    # Four options on the pool's own GPU, each typed in its kind's section.
    gpu = {"gpu_model": str(pool.gpu_model_id)}
    options = [
        ("on_demand", {"on_demand_price_per_gpu_hour": ON_DEMAND}, {}),
        ("reserved", {"reserved_price_per_gpu_hour": RESERVED}, {}),
        (
            "owned",
            {
                "purchase_price_per_gpu": PURCHASE,
                "amortisation_months": AMORTISATION,
                "power_price_per_kwh": KWH,
                "pue": PUE,
            },
            {},
        ),
        (
            "hybrid",
            {
                "on_demand_price_per_gpu_hour": ON_DEMAND,
                "reserved_price_per_gpu_hour": RESERVED,
            },
            {"hybrid_baseline": "reserved"},
        ),
    ]
    for position, (name, (kind, fields, selects)) in enumerate(
        zip(names, options, strict=True), start=1
    ):
        _add_option(
            page,
            live_server,
            slug,
            kind,
            {"name": name, "position": position, **fields},
            {**gpu, **selects},
        )
        _shot(page, screenshot_dir, lang, step, f"option-{kind}")
        page.click("form.card button[type=submit]")
        expect(page).to_have_url(f"{live_server.url}/procurement/{slug}/")
        expect(page.locator("#comparison-table tbody tr[data-option]")).to_have_count(position)
    saved = list(scenario.options.order_by("position").values_list("name", "kind"))
    assert saved == list(zip(names, [kind for kind, _, _ in options], strict=True))

    # The comparison: every total as computed here, the cheapest one recommended.
    expect(page.locator("#comparison .card-title").first).to_have_text(text["comparison"])
    totals = _page_totals(page, names)
    assert [round(_amount(total)) for total in totals] == [round(value) for value in expected]
    cheapest = names[min(range(4), key=expected.__getitem__)]
    recommendation = page.locator("#recommendation .fw-bold")
    expect(recommendation).to_contain_text(cheapest)
    expect(recommendation).to_contain_text(text["recommendation"])
    expect(page.locator(f'#comparison-table tr[data-option="{cheapest}"]')).to_have_class(
        re.compile("table-success")
    )
    expect(page.locator("#chart-cost-by-option svg.main-svg").first).to_be_attached()
    _shot(page, screenshot_dir, lang, step, "comparison")

    # What if the horizon were two years: the comparison recomputes in place, unsaved.
    page.evaluate("window.__noReload = true")
    page.fill("#id_horizon_months", str(WHAT_IF_HORIZON))
    expect(page.locator("#comparison .card-title").first).to_have_text(text["what_if_comparison"])
    expect(page.locator("#what-if-applied")).to_contain_text(text["what_if_applied"])
    what_if_expected = _expected_totals(curve, WHAT_IF_HORIZON, pool.gpu_model.tdp_watts)
    on_demand_total = page.locator(
        f'#comparison-table tr[data-option="{names[0]}"] td[data-col="total"]'
    )
    expect(on_demand_total).not_to_have_text(totals[0])
    what_if_totals = _page_totals(page, names)
    assert [round(_amount(total)) for total in what_if_totals] == [
        round(value) for value in what_if_expected
    ]
    what_if_recommendation = recommendation.inner_text().strip()
    assert page.evaluate("window.__noReload") is True, "the what-if reloaded the page"
    assert f"horizon_months={WHAT_IF_HORIZON}" in page.url
    scenario.refresh_from_db()
    assert scenario.horizon_months == HORIZON, "a what-if is not saved"
    _shot(page, screenshot_dir, lang, step, "what-if")
    what_if_url = page.url

    # Exports of what the page shows, made by the task and downloaded.
    files = {}
    for export_format in ("csv", "xlsx", "pdf"):
        page.goto(what_if_url)
        expect(page.locator("#what-if-applied")).to_be_visible()
        page.click(f'#export-form button[name="format"][value="{export_format}"]')
        expect(page).to_have_url(re.compile(r"/procurement/exports/\d+/$"))
        expect(page.locator("#export-ready")).to_contain_text(text["ready"])
        expect(page.locator("#export-what-if")).to_be_visible()
        _shot(page, screenshot_dir, lang, step, f"export-{export_format}")
        with page.expect_download() as download_info:
            page.click("#export-download")
        download = download_info.value
        assert download.suggested_filename.endswith(f".{export_format}")
        path = tmp_path / download.suggested_filename
        download.save_as(path)
        files[export_format] = path
    page_totals = [round(_amount(total)) for total in what_if_totals]

    rows = list(csv.reader(io.StringIO(files["csv"].read_text(encoding="utf-8-sig"))))
    headers = rows[0]
    assert headers[0] == text["option_header"]
    total_column = headers.index(text["total_header"])
    assert [row[0] for row in rows[1:5]] == names
    assert [round(float(row[total_column])) for row in rows[1:5]] == page_totals
    # The file says what the page said: the same recommendation, in the page's language.
    csv_recommendation = next(row[1] for row in rows if row[:1] == [text["pdf_recommendation"]])
    assert csv_recommendation.startswith(what_if_recommendation)

    workbook = load_workbook(files["xlsx"])
    sheet = workbook[text["comparison_sheet"]]
    xlsx_headers = [cell.value for cell in sheet[1]]
    xlsx_rows = list(sheet.iter_rows(min_row=2, max_row=5, values_only=True))
    total_column = xlsx_headers.index(text["total_header"])
    assert [row[0] for row in xlsx_rows] == names
    assert [round(row[total_column]) for row in xlsx_rows] == page_totals

    pdf_text = "\n".join(p.extract_text() for p in PdfReader(files["pdf"]).pages)
    flat = re.sub(r"\s+", " ", pdf_text)
    assert text["pdf_title"] in flat and text["pdf_recommendation"] in flat
    # Lines wrap anywhere in the PDF: compared without any spacing.
    assert re.sub(r"\s", "", what_if_recommendation) in re.sub(r"\s", "", pdf_text)
    for name, total in zip(names, what_if_totals, strict=True):
        assert name in flat
        assert total.split()[0] in flat, total
    # The first page as an image, to look at: Chinese must be drawn, not boxes.
    prefix = screenshot_dir / f"journey-procurement-{lang}-{step[0] + 1:02d}-pdf"
    subprocess.run(
        ["pdftoppm", "-png", "-r", "80", "-f", "1", "-l", "1", "-singlefile", files["pdf"], prefix],
        check=True,
    )
    assert prefix.with_suffix(".png").stat().st_size > 0
