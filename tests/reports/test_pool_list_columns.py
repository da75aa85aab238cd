"""The pool list's usage and cost columns (apps/reports/pool_list.py) against a hand
computation, the report over the same window, and both sort orders.

Five pools over the list's window (the 720 whole UTC hours ending with the current one):
a cloud pool whose first day has no telemetry, an owned pool with measured energy on even
hours only, a cloud pool in service from day 10 with telemetry every third hour, a cloud
pool in service with no telemetry at all, and one retired before the window. The
expected figures are summed hour by hour from the rows the test writes, with the
definitions of docs/user-guide/reports.md and FORMULAS.md "Cost of owned GPUs per hour":

- a paid hour (inside the service period) costs GPUs × price per GPU-hour; an owned
  pool's GPU-hour is amortisation + operations ÷ 730 per GPU + power × PUE × price per
  kWh, power being the measured energy, else TDP × busy GPU-hours, else (no telemetry)
  TDP × GPUs;
- utilisation = 100 × Σ busy ÷ Σ capacity over the hours with telemetry;
- idle cost = measured cost × (1 − Σ busy ÷ Σ capacity) over those hours.
"""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.pools.hours import floor_hour
from apps.pools.models import Deployment, Pool, Purpose
from apps.pools.services import save_pool
from apps.reports.cache import bump_reports_version
from apps.telemetry.models import PoolHourlyUsage
from apps.telemetry.rollups.days import rebuild_days
from tests.money import cents
from tests.reports.test_views import _make_pools
from tests.waiting import wait_until

WINDOW_HOURS = 30 * 24
OWNED = {
    "purchase": 24_000.0,  # USD per GPU
    "months": 48,
    "pue": 1.25,
    "kwh": 0.10,  # USD
    "operations": 7_300.0,  # USD per month, whole pool
    "tdp_kw": 0.7,  # H100 SXM, as the catalog seeds it
}
COLUMNS = {
    "utilization_30d": "utilization_pct",
    "idle_cost_30d": "idle_cost_usd",
    "cost_30d": "cost_usd",
}


def _wait_for_next_hour_if_at_its_end():
    # The window ends with the current hour: a test that spans an hour change would
    # compare two windows.
    now = timezone.now()
    if now.minute == 59 and now.second >= 30:
        wait_until(
            lambda: timezone.now().hour != now.hour,
            timeout_seconds=61,
            what="the next UTC hour",
            interval_seconds=0.5,
        )


def _cloud(name, gpus, price, **fields):
    pool = Pool(
        name=name,
        slug=name.lower(),
        purpose=Purpose.INFERENCE,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpus_per_node=4,
        gpu_count=gpus,
        on_demand_price_per_gpu_hour_usd=Decimal(price),
        **fields,
    )
    return pool


@pytest.fixture
def fleet(gpu_model):
    """The five pools, their hourly rows and the expected figures per slug."""
    _wait_for_next_hour_if_at_its_end()
    window_end = floor_hour(timezone.now()) + timedelta(hours=1)
    window_start = window_end - timedelta(hours=WINDOW_HOURS)
    long_ago = window_start - timedelta(days=30)
    pools = {
        "alpha": _cloud("Alpha", 8, "2.50", in_service_from=long_ago),
        "bravo": Pool(
            name="Bravo",
            slug="bravo",
            purpose=Purpose.TRAINING,
            deployment=Deployment.BARE_METAL,
            gpu_count=16,
            gpus_per_node=8,
            purchase_price_per_gpu_usd=Decimal(str(OWNED["purchase"])),
            amortisation_months=OWNED["months"],
            pue=Decimal(str(OWNED["pue"])),
            power_price_per_kwh_usd=Decimal(str(OWNED["kwh"])),
            operations_per_month_usd=Decimal(str(OWNED["operations"])),
            in_service_from=long_ago,
        ),
        "charlie": _cloud("Charlie", 4, "1.20", in_service_from=window_start + timedelta(days=10)),
        "delta": _cloud("Delta", 8, "3.00", in_service_from=long_ago),
        "echo": _cloud(
            "Echo",
            8,
            "2.00",
            in_service_from=long_ago,
            in_service_until=window_start - timedelta(days=10),
        ),
    }
    for pool in pools.values():
        pool.gpu_model = gpu_model
        save_pool(pool)

    # (slug, step) → (busy GPU-hours, energy kWh or None); absent: no telemetry.
    usage = {}
    for step in range(WINDOW_HOURS):
        if step >= 24:
            usage["alpha", step] = (8 * ((7 * step) % 100) / 100, None)
        usage["bravo", step] = (
            16 * ((11 * step + 40) % 100) / 100,
            16 * 0.45 if step % 2 == 0 else None,
        )
        if step >= 10 * 24 and step % 3 == 0:
            usage["charlie", step] = (4 * ((5 * step + 3) % 100) / 100, None)
    rows = [
        PoolHourlyUsage(
            pool=pools[slug],
            hour=window_start + timedelta(hours=step),
            reporting_gpus=pools[slug].gpu_count,
            capacity_gpu_hours=pools[slug].gpu_count,
            busy_gpu_hours=busy,
            avg_utilization_pct=100 * busy / pools[slug].gpu_count,
            max_utilization_pct=100 * busy / pools[slug].gpu_count,
            energy_kwh=energy,
        )
        for (slug, step), (busy, energy) in usage.items()
    ]
    # An hour before the window, fully busy: it must not count.
    rows.append(
        PoolHourlyUsage(
            pool=pools["alpha"],
            hour=window_start - timedelta(hours=1),
            reporting_gpus=8,
            capacity_gpu_hours=8,
            busy_gpu_hours=8,
            avg_utilization_pct=100,
            max_utilization_pct=100,
        )
    )
    PoolHourlyUsage.objects.bulk_create(rows)
    rebuild_days(window_start - timedelta(days=2), window_end + timedelta(days=1))
    return {
        "pools": pools,
        "start": window_start,
        "end": window_end,
        "expected": {slug: _by_hand(pool, usage, window_start) for slug, pool in pools.items()},
    }


def _by_hand(pool, usage, window_start):
    """The pool's three figures summed hour by hour over the window."""
    owned = pool.deployment == Deployment.BARE_METAL
    fixed = OWNED["purchase"] / (OWNED["months"] * 730) + OWNED["operations"] / 730 / 16
    per_kwh = OWNED["pue"] * OWNED["kwh"]
    price = float(pool.on_demand_price_per_gpu_hour_usd or 0)
    paid_hours = 0
    cost = measured_cost = busy_sum = capacity_sum = 0.0
    for step in range(WINDOW_HOURS):
        hour = window_start + timedelta(hours=step)
        retired = pool.in_service_until is not None and hour >= pool.in_service_until
        if hour < pool.in_service_from or retired:
            continue
        paid_hours += 1
        if (pool.slug, step) not in usage:  # unmeasured: paid, never busy or idle
            per_gpu = fixed + per_kwh * OWNED["tdp_kw"] if owned else price
            cost += pool.gpu_count * per_gpu
            continue
        busy, energy = usage[pool.slug, step]
        if owned:
            power_kwh = energy if energy is not None else OWNED["tdp_kw"] * busy
            hour_cost = pool.gpu_count * fixed + per_kwh * power_kwh
        else:
            hour_cost = pool.gpu_count * price
        cost += hour_cost
        measured_cost += hour_cost
        busy_sum += busy
        capacity_sum += pool.gpu_count
    measured = capacity_sum > 0
    return {
        "utilization_pct": 100 * busy_sum / capacity_sum if measured else None,
        "idle_cost_usd": measured_cost * (1 - busy_sum / capacity_sum) if measured else None,
        "cost_usd": cost if paid_hours else None,
    }


@pytest.fixture
def reader_client(client, make_user):
    client.force_login(make_user("reader"))
    return client


def _listed(response):
    return [pool.slug for pool in response.context["page"]]


def _figures(response):
    return {
        pool.slug: {
            "utilization_pct": pool.utilization_30d_pct,
            "idle_cost_usd": pool.idle_cost_30d_usd,
            "cost_usd": pool.cost_30d_usd,
        }
        for pool in response.context["page"]
    }


@pytest.mark.django_db
def test_figures_match_a_hand_computation_and_the_report_over_the_same_window(reader_client, fleet):
    response = reader_client.get(reverse("pools:pool_list"), {"archived": "all"})
    shown = _figures(response)
    expected = fleet["expected"]
    assert set(shown) == set(expected)
    for slug, figures in expected.items():
        for name, value in figures.items():
            if value is None:
                assert shown[slug][name] is None, (slug, name)
            else:
                # The owned pool's stored price split is rounded to 10⁻⁶ USD.
                rel = 1e-6 if slug == "bravo" else 1e-9
                assert shown[slug][name] == pytest.approx(value, rel=rel), (slug, name)
    # The cases the fixture is built for.
    assert expected["delta"]["utilization_pct"] is None and expected["delta"]["cost_usd"] > 0
    assert all(value is None for value in expected["echo"].values())

    # The report by pool over the same window (the cost API) gives the very same numbers.
    report = reader_client.get(
        reverse("api-report-cost"),
        {"start": fleet["start"].isoformat(), "end": fleet["end"].isoformat()},
    ).json()
    by_pool = {row["key"]: row for row in report}
    for slug, figures in shown.items():
        if figures["utilization_pct"] is not None:
            assert figures["utilization_pct"] == by_pool[slug]["utilization_pct"]
            # The API writes money to the cent.
            assert cents(figures["idle_cost_usd"]) == by_pool[slug]["idle_cost_usd"]
        if figures["cost_usd"] is not None:
            assert cents(figures["cost_usd"]) == by_pool[slug]["cost_usd"]


@pytest.mark.django_db
def test_a_reader_sees_the_columns_with_units_explanations_and_dashes(reader_client, fleet):
    body = reader_client.get(reverse("pools:pool_list")).content.decode()
    for label, unit in (("Utilisation", "%"), ("Idle cost", "USD"), ("Cost", "USD")):
        assert (
            f'>{label}<br><span class="small text-secondary text-nowrap">{unit} · 30 d</span></a>'
            in body
        )
    assert 'title="What the capacity that was not busy cost over the last 30 days' in body
    assert 'id="pool-column-notes"' in body and "last 30 days" in body
    expected = fleet["expected"]
    # As the report rounds them: whole dollars, utilisation to a tenth of a percent.
    assert f"${expected['alpha']['cost_usd']:,.0f}" in body
    assert f"${expected['bravo']['idle_cost_usd']:,.0f}" in body
    assert f"{expected['charlie']['utilization_pct']:,.1f} %" in body
    # Delta is in service without telemetry: no utilisation or idle cost, a cost.
    delta_row = body[: body.index("</tr>", body.index('href="/pools/delta/"'))]
    delta_row = delta_row[delta_row.rindex("<tr") :]
    assert delta_row.endswith(
        '<td class="text-end">—</td><td class="text-end">—</td>'
        f'<td class="text-end">${8 * 3.00 * WINDOW_HOURS:,.0f}</td>'
    )
    # The totals row keeps a cell under each column.
    totals = body[body.index('id="pool-totals"') :]
    assert totals[: totals.index("</tr>")].count("<td") == 5 + 3


def _expected_order(fleet, figure, *, descending):
    """Pools with the figure by it (ties by name), then those without, by name; the
    whole order reversed when descending except that the pools without stay last."""
    expected = fleet["expected"]
    known = sorted(
        (values[figure], slug) for slug, values in expected.items() if values[figure] is not None
    )
    missing = sorted(slug for slug, values in expected.items() if values[figure] is None)
    if descending:
        return [slug for _, slug in reversed(known)] + missing[::-1]
    return [slug for _, slug in known] + missing


@pytest.mark.django_db
@pytest.mark.parametrize("column", sorted(COLUMNS))
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_each_column_sorts_both_ways_with_pools_without_data_last(
    reader_client, fleet, column, descending
):
    figure = COLUMNS[column]
    values = [v[figure] for v in fleet["expected"].values() if v[figure] is not None]
    assert len(set(values)) == len(values) >= 3, "the column must tell the pools apart"
    sort = f"-{column}" if descending else column
    response = reader_client.get(reverse("pools:pool_list"), {"sort": sort, "archived": "all"})
    assert _listed(response) == _expected_order(fleet, figure, descending=descending)


@pytest.mark.django_db
def test_the_sort_fragment_is_the_table_alone(reader_client, fleet):
    response = reader_client.get(
        reverse("pools:pool_list"),
        {"sort": "-idle_cost_30d", "purpose": "inference"},
        headers={"HX-Request": "true", "HX-Target": "pool-table"},
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="pool-table">')
    assert "<html" not in body and "<form" not in body and "pool-column-notes" not in body
    # Only the inference pools (every pool but Bravo), in the column's order.
    inference = [
        slug
        for slug in _expected_order(fleet, "idle_cost_usd", descending=True)
        if fleet["pools"][slug].purpose == Purpose.INFERENCE
    ]
    assert _listed(response) == inference == ["alpha", "charlie", "echo", "delta"]
    # The sort links keep the filter, and the filter form's hidden sort follows.
    assert 'href="?sort=cost_30d&amp;purpose=inference"' in body
    assert 'id="pool-table-sort" value="-idle_cost_30d" hx-swap-oob="true"' in body


@pytest.mark.django_db
def test_the_list_reads_every_pool_figure_in_a_fixed_number_of_queries(
    reader_client, gpu_model, django_assert_max_num_queries
):
    """The figures' sums run in SQL for all pools at once, and the page's rows are one
    query: the count does not grow with the fleet."""

    def get_page(max_queries):
        bump_reports_version()  # compute the figures, not read them from the cache
        with django_assert_max_num_queries(max_queries) as captured:
            response = reader_client.get(reverse("pools:pool_list"), {"sort": "-cost_30d"})
        assert response.status_code == 200
        return len(captured)

    _make_pools(gpu_model, 3, hours=48)
    # The session, the user and their roles; their scope (a fleet-wide role? their
    # teams: apps/accounts/scope.py); the report's figures for every pool (pools,
    # workloads, requests by day and by hour, interruptions, usage by day and by hour,
    # price periods); the page's count, rows and totals; the filter's regions.
    small = get_page(20)
    _make_pools(gpu_model, 12, first=3, hours=48)
    assert get_page(small) == small
