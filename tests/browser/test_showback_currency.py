"""Showback and budgets in euros, in Chromium, in English and in Chinese: the column
names the currency, every amount carries the euro sign, the dollars of a budget stated
in USD are shown beside their conversion, and a missing rate is named."""

from datetime import date
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.currencies.models import ExchangeRate
from apps.pools.models import Pool
from apps.showback.models import Budget
from tests.browser.test_chart_layout import _sign_in as sign_in
from tests.showback.fleet import hand_split, make_fleet

WORDS = {
    "en": {"cost": "Cost (EUR)", "stated": "stated as $1,000.00 (USD)"},
    "zh-hans": {"cost": "EUR", "stated": "$1,000.00"},
}


@pytest.mark.browser
def test_showback_and_budgets_speak_euros_in_both_languages(
    page, live_server, make_user, transactional_db, screenshot_dir, settings
):
    settings.REPORTING_CURRENCY = "EUR"
    teams, pools, _workloads = make_fleet()
    Pool.objects.filter(pk=pools["pool-c"].pk).update(
        currency="CNY",
        on_demand_price_per_gpu_hour_usd=Decimal("7.20"),
        effective_price_per_gpu_hour_usd=Decimal("7.20"),
        fixed_price_per_gpu_hour_usd=Decimal("7.20"),
    )
    today = timezone.now().date()
    this_month = date(today.year, today.month, 1)
    for month in {date(2026, 3, 1), this_month}:
        ExchangeRate.objects.create(month=month, currency="EUR", units_per_usd=Decimal("0.92"))
    # March's yuan rate only: this month's is missing, and the budgets' spend says so.
    ExchangeRate.objects.create(month=date(2026, 3, 1), currency="CNY", units_per_usd=7.2)
    in_dollars = Budget.objects.create(
        team=teams["serving"], amount_per_month=Decimal("1000"), currency="USD"
    )
    Budget.objects.create(team=teams["research"], amount_per_month=Decimal("50000"))
    serving_eur = Decimal(str(hand_split()["serving"])) * Decimal("0.92")
    admin = make_user("admin")

    for language in ("en", "zh-hans"):
        page.context.clear_cookies()
        sign_in(page, live_server, admin, language)

        page.goto(f"{live_server.url}/showback/?month=2026-03")
        table = page.locator("#showback-table")
        expect(page.locator("#showback-cost-header")).to_contain_text(WORDS[language]["cost"])
        expect(table).to_contain_text(f"€{serving_eur:,.2f}")
        expect(page.locator("#showback-total")).to_contain_text("€")
        expect(page.locator("#showback-total-usd")).to_contain_text("$")
        expect(page.locator("#missing-rates")).to_have_count(0)
        page.screenshot(path=screenshot_dir / f"showback-eur-{language}.png", full_page=True)

        page.goto(f"{live_server.url}/budgets/")
        serving_row = page.locator(f'#burndown-table tr[data-budget="{in_dollars.pk}"]')
        expect(serving_row.locator(".budget-amount")).to_contain_text("€920.00")
        expect(serving_row.locator(".budget-own-currency")).to_contain_text(
            WORDS[language]["stated"]
        )
        expect(serving_row.locator(".budget-missing-rates")).to_contain_text("CNY")
        expect(page.locator("#chart-budgets svg.main-svg").first).to_be_attached()
        page.screenshot(path=screenshot_dir / f"budgets-eur-{language}.png", full_page=True)

        page.goto(f"{live_server.url}/periods/")
        march = page.locator('#period-table tr[data-month="2026-03"] .period-cost')
        expect(march).to_contain_text("€")
        expect(march).to_contain_text("$")  # the dollars beneath
        page.screenshot(path=screenshot_dir / f"periods-eur-{language}.png", full_page=True)
