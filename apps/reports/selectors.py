"""What the report pages show, as data: the Overview's, a pool's and a filtered report's
figures and charts. Plain parameters in, dicts out, cached (apps/reports/cache.py) until
the data changes; views render them, the warm-ups (apps/reports/warming.py) compute them
ahead of a visit. Nothing here reads a request.

Every figure is of the pools and workloads in a ``scope`` (apps/accounts/scope.py), the
viewer's, and is cached under its ``cache_key``: equal scopes share entries, and no
scope reads another's."""

import dataclasses
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils.translation import gettext_noop

from apps.accounts.scope import EVERYTHING, Scope
from apps.core.charts import freeze_figure
from apps.pools.charts import build_gpus_by_purpose_figure
from apps.pools.hours import floor_hour
from apps.pools.models import Pool, Purpose
from apps.reports import charts, costmodel, lending, periods, queries
from apps.reports.cache import cached
from apps.reports.forms import report_span

OVERVIEW_CURVE_DAYS = 28


OVERVIEW_RANKED_POOLS = 10


def overview_month_start(now) -> datetime:
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def overview_month(now, scope: Scope = EVERYTHING) -> dict:
    """The month to date by purpose (``rows``) and their ``total`` row, with what each
    adds up (``CostRow.parts``, one per pool: what the Overview's explanations show);
    cached until the data changes."""
    return cached("overview-month", {"scope": scope.cache_key}, lambda: _overview_month(now, scope))


def _overview_month(now, scope: Scope) -> dict:
    rows = periods.cost_report(overview_month_start(now), now, "purpose", scope=scope)
    return {"rows": rows, "total": queries.total_row(rows)}


def _without_parts(row: queries.CostRow) -> queries.CostRow:
    return dataclasses.replace(row, members=[], parts=[])


def _overview_context(now, scope: Scope):
    # What a visit reads back from the cache holds what the page shows, nothing per pool:
    # the ten most idle pools, and the month's rows without their per-pool parts (a
    # thousand-pool fleet's whole figures are ~2 MB to unpickle, bench/README.md).
    ranking = idle_ranking(now, scope)
    idle = {**ranking, "rows": ranking["rows"][:OVERVIEW_RANKED_POOLS]}
    month_start = overview_month_start(now)
    month_figures = overview_month(now, scope)
    month_rows = month_figures["rows"]
    month = _without_parts(month_figures["total"])
    curve = queries.Span.last_hours(now, OVERVIEW_CURVE_DAYS * 24)
    zone_name = "UTC"
    zone = ZoneInfo(zone_name)
    split = queries.daily_split(curve.start, curve.end, scope=scope)
    profile = queries.usage_profile(curve.start, curve.end, zone, scope=scope)
    heatmap = queries.weekday_hour_heatmap(curve.start, curve.end, zone, scope=scope)
    gpus_by_purpose = {purpose.value: 0 for purpose in Purpose} | (
        Pool.objects.in_scope(scope).in_service(now).gpus_by_purpose()
    )
    # The sums under the utilisation KPIs, kept for their explanation: the last 24 (and
    # 7 × 24) hour-slots, the current one included (queries.Span.last_hours).
    day, week = queries.Span.last_hours(now, 24), queries.Span.last_hours(now, 7 * 24)
    usage_24h = queries.fleet_usage_sums(day.start, day.end, scope)
    usage_7d = queries.fleet_usage_sums(week.start, week.end, scope)
    context = {
        "now": now,
        "idle_ranking": idle,
        "month_start": month_start,
        "month": month,
        "gpus_by_purpose": [
            (str(purpose.label), purpose.value, gpus_by_purpose[purpose.value])
            for purpose in Purpose
        ],
        "gpu_total": sum(gpus_by_purpose.values()),
        "utilization_24h_pct": costmodel.ratio_or_none(*usage_24h, 100),
        "utilization_7d_pct": costmodel.ratio_or_none(*usage_7d, 100),
        "usage_24h": usage_24h,
        "usage_7d": usage_7d,
        "curve_days": OVERVIEW_CURVE_DAYS,
        "zone_name": zone_name,
        "gpus_by_purpose_figure": freeze_figure(
            build_gpus_by_purpose_figure(gpus_by_purpose, dict(Purpose.choices))
        ),
        "busy_split_figure": freeze_figure(charts.build_daily_split_figure(split, metric="busy")),
        "cost_split_figure": freeze_figure(charts.build_daily_split_figure(split, metric="cost")),
        "cost_share_figure": freeze_figure(charts.build_share_donut(month_rows)),
        "hour_of_day_figure": freeze_figure(
            charts.build_hour_of_day_figure(profile, zone_name=zone_name)
        ),
        "heatmap_figure": freeze_figure(charts.build_heatmap_figure(heatmap, zone_name=zone_name)),
    }
    return context


POOL_CURVE_DAYS = 28


def pool_figures(pool, now, scope: Scope = EVERYTHING) -> dict:
    """The pool page's cost figures and curves over the last 28 days, in its time zone,
    for a viewer whose ``scope`` holds the pool; cached until the data changes."""
    return cached(
        "pool",
        {"pool": pool.pk, "scope": scope.cache_key},
        lambda: _pool_report_context(pool, now, scope),
    )


def _pool_report_context(pool, now, scope: Scope):
    curve = queries.Span.last_hours(now, POOL_CURVE_DAYS * 24)
    start, end = curve.start, curve.end
    zone_name = pool.timezone or "UTC"
    rows = queries.cost_report(start, end, "pool", pool_slug=pool.slug, scope=scope)
    profile = queries.usage_profile(start, end, ZoneInfo(zone_name), pool=pool, scope=scope)
    return {
        "pool_report": rows[0] if rows else None,
        "pool_curve_days": POOL_CURVE_DAYS,
        "pool_zone_name": zone_name,
        "pool_hour_of_day_figure": freeze_figure(
            charts.build_hour_of_day_figure(profile, zone_name=zone_name)
        ),
        "pool_split_figure": freeze_figure(
            charts.build_daily_split_figure(
                queries.daily_split(start, end, pool=pool, scope=scope), metric="cost"
            )
        ),
    }


POOL_LIST_DAYS = 30


def pool_list_window(now) -> tuple[datetime, datetime]:
    """[start, end) of the pool list's figures: the last 30 × 24 whole UTC hours, the
    current one included (the report clamps a range to the current hour's end too)."""
    end = floor_hour(now) + timedelta(hours=1)
    return end - timedelta(days=POOL_LIST_DAYS), end


def pool_list_figures(now, scope: Scope = EVERYTHING) -> dict[str, dict]:
    """Per pool slug, its last 30 days (``pool_list_window``) as the report by pool over
    that window shows them: ``utilization_pct``, ``idle_cost_usd`` and ``cost_usd``. A
    figure the window has no data for is None: utilisation and idle cost without an hour
    of telemetry (idle would be a $0 that says nothing), cost without an hour in service.
    Every pool in ``scope``, archived ones too; cached until the data changes."""
    return cached(
        "pool-list",
        {"days": POOL_LIST_DAYS, "scope": scope.cache_key},
        lambda: _pool_list_figures(now, scope),
    )


def _pool_list_figures(now, scope: Scope) -> dict[str, dict]:
    start, end = pool_list_window(now)
    return {
        row.key: {
            "utilization_pct": row.utilization_pct,
            "idle_cost_usd": row.idle_cost_usd if row.measured_capacity_gpu_hours else None,
            "cost_usd": row.cost_usd if row.capacity_gpu_hours else None,
        }
        for row in queries.cost_report(start, end, "pool", scope=scope)
    }


def overview_figures(now, scope: Scope = EVERYTHING) -> dict:
    """The Overview's figures and charts at ``now`` over ``scope``; cached until the data
    changes."""
    return cached("overview", {"scope": scope.cache_key}, lambda: _overview_context(now, scope))


# The steps a worker reports, kept in English in the cache and translated when shown.
REPORT_STEPS = (
    gettext_noop("cost rows"),
    gettext_noop("hour-of-day curve"),
    gettext_noop("peak split"),
    gettext_noop("daily split"),
    gettext_noop("charts"),
)


def report_cache_filters(data: dict, scope: Scope = EVERYTHING) -> dict:
    """The report's filters (a ReportFilterForm's cleaned data) and the scope they are
    computed over, as cache parameters."""
    return {
        **{name: getattr(value, "slug", value) for name, value in data.items()},
        "scope": scope.cache_key,
    }


def report_figures(data: dict, progress=None, scope: Scope = EVERYTHING) -> dict:
    """The report's figures for ``data``, a valid ReportFilterForm's cleaned data, over
    the pools and workloads in ``scope``; cached until the data changes.
    ``progress(steps_done, next_step)`` is told after each step when a worker computes a
    long range (apps/reports/warming.py)."""
    return cached(
        "report",
        report_cache_filters(data, scope),
        lambda: _report_figures(data, progress, scope),
    )


def _report_figures(data: dict, progress, scope: Scope) -> dict:
    progress = progress or (lambda done, step: None)
    start, end = report_span(data)
    pool = data.get("pool")
    zone_name = data["tz"]
    zone = ZoneInfo(zone_name)
    # Closed months as they were frozen, with the adjustments booked in the range.
    rows = periods.cost_report(
        start,
        end,
        data["group_by"],
        purpose=data.get("purpose") or None,
        pool_slug=pool.slug if pool else None,
        scope=scope,
    )
    progress(1, REPORT_STEPS[1])
    profile = queries.usage_profile(
        start,
        end,
        zone,
        pool=pool,
        purpose=None if pool else (data.get("purpose") or None),
        scope=scope,
    )
    progress(2, REPORT_STEPS[2])
    peak_rows = queries.peak_split(
        start, end, purpose=data.get("purpose") or None, pool=pool, scope=scope
    )
    progress(3, REPORT_STEPS[3])
    split = queries.daily_split(start, end, pool=pool, scope=scope)
    progress(4, REPORT_STEPS[4])
    return {
        "rows": rows,
        "total": queries.total_row(rows),
        "period_notes": periods.range_notes(start, end),
        "group_by": data["group_by"],
        "start_day": data["start"],
        "end_day": data["end"],
        "zone_name": zone_name,
        "peak_rows": peak_rows,
        "cost_figure": freeze_figure(charts.build_cost_breakdown_figure(rows)),
        "hour_of_day_figure": freeze_figure(
            charts.build_hour_of_day_figure(profile, zone_name=zone_name)
        ),
        "split_figure": freeze_figure(charts.build_daily_split_figure(split, metric="cost")),
    }


IDLE_RANKING_WINDOWS_DAYS = (7, 30)


def idle_ranking(now, scope: Scope = EVERYTHING) -> dict:
    """The Overview's "where do the GPU dollars go" table: per pool, idle cost over the
    last 7 and 30 days (the pool list's rolling window, ``pool_list_window``, of 7 or 30
    days), with its 30-day utilisation and cost, most idle dollars first; and the fleet's
    30-day totals beside the month-to-date cards. Same figures as the report by pool over
    each window (``queries.cost_report``). Part of ``overview_figures``, so it is cached
    and warmed with the rest of the Overview."""
    end = floor_hour(now) + timedelta(hours=1)
    by_window = {
        days: {
            row.key: row
            for row in queries.cost_report(end - timedelta(days=days), end, scope=scope)
        }
        for days in IDLE_RANKING_WINDOWS_DAYS
    }
    month, week = by_window[30], by_window[7]
    rows = []
    for slug, row in month.items():
        if not row.capacity_gpu_hours:
            continue  # not in service in those 30 days
        measured = bool(row.measured_capacity_gpu_hours)
        week_row = week.get(slug)
        rows.append(
            {
                "slug": slug,
                "name": row.label,
                "idle_7d_usd": (
                    week_row.idle_cost_usd
                    if week_row is not None and week_row.measured_capacity_gpu_hours
                    else None
                ),
                "idle_30d_usd": row.idle_cost_usd if measured else None,
                "utilization_30d_pct": row.utilization_pct if measured else None,
                "cost_30d_usd": row.cost_usd,
            }
        )
    rows.sort(key=lambda row: (row["idle_30d_usd"] is None, -(row["idle_30d_usd"] or 0)))
    busy = sum(row.busy_gpu_hours for row in month.values())
    measured = sum(row.measured_capacity_gpu_hours for row in month.values())
    return {
        "rows": rows,
        "start_30d": end - timedelta(days=30),
        "end": end,
        "fleet_30d": {
            "cost_usd": sum((row.cost_usd for row in month.values()), Decimal(0)),
            "idle_cost_usd": sum((row.idle_cost_usd for row in month.values()), Decimal(0)),
            "utilization_pct": 100 * busy / measured if measured else None,
        },
    }


def lendable_figures(now, scope: Scope = EVERYTHING) -> "lending.FleetLendable":
    """Every inference pool in ``scope`` with its lendable off-peak capacity
    (apps/reports/lending.py); cached until the data changes."""
    return cached(
        "lendable",
        {"scope": scope.cache_key, "margin_pct": settings.LENDING_SAFETY_MARGIN_PCT},
        lambda: lending.fleet_lendable(now, scope),
    )


def pool_lendable_figures(pool, now, scope: Scope = EVERYTHING) -> "lending.Lendable":
    """One inference pool's lendable off-peak capacity, for a viewer whose ``scope``
    holds it; cached until the data changes."""
    return cached(
        "lendable-pool",
        {
            "pool": pool.pk,
            "scope": scope.cache_key,
            "margin_pct": settings.LENDING_SAFETY_MARGIN_PCT,
        },
        lambda: lending.pool_lendable(pool, now),
    )
