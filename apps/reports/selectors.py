"""What the report pages show, as data: a pool's, the pool list's and a filtered
report's figures and charts (the Overview's are apps/dashboard/selectors.py, the lending
pages' apps/reports/lending/selectors.py). Plain parameters in, dicts out, cached
(apps/reports/cache.py) until the data changes; views render them, the warm-ups
(apps/reports/warming.py) compute them ahead of a visit. Nothing here reads a request.

Every figure is of the pools and workloads in a ``scope`` (apps/accounts/scope.py), the
viewer's, and is cached under its ``cache_key``: equal scopes share entries, and no
scope reads another's."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.utils.translation import gettext_noop

from apps.accounts.scope import EVERYTHING, Scope
from apps.core.charts import freeze_figure
from apps.pools.hours import floor_hour
from apps.reports import charts
from apps.reports.cache import cached
from apps.reports.cost import periods, report
from apps.reports.cost.daily import daily_split
from apps.reports.cost.rows import total_row
from apps.reports.forms import report_span
from apps.reports.span import Span
from apps.reports.usage.curves import usage_profile
from apps.reports.usage.peaks import peak_split

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
    curve = Span.last_hours(now, POOL_CURVE_DAYS * 24)
    start, end = curve.start, curve.end
    zone_name = pool.timezone or "UTC"
    rows = report.cost_report(start, end, "pool", pool_slug=pool.slug, scope=scope)
    profile = usage_profile(start, end, ZoneInfo(zone_name), pool=pool, scope=scope)
    return {
        "pool_report": rows[0] if rows else None,
        "pool_curve_days": POOL_CURVE_DAYS,
        "pool_zone_name": zone_name,
        "pool_hour_of_day_figure": freeze_figure(
            charts.build_hour_of_day_figure(profile, zone_name=zone_name)
        ),
        "pool_split_figure": freeze_figure(
            charts.build_daily_split_figure(
                daily_split(start, end, pool=pool, scope=scope), metric="cost"
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
        for row in report.cost_report(start, end, "pool", scope=scope)
    }


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
    cluster = data["cluster"].slug if data.get("cluster") else None
    zone_name = data["tz"]
    zone = ZoneInfo(zone_name)
    # Closed months as they were frozen, with the adjustments booked in the range.
    rows = periods.cost_report(
        start,
        end,
        data["group_by"],
        purpose=data.get("purpose") or None,
        pool_slug=pool.slug if pool else None,
        cluster_slug=cluster,
        scope=scope,
    )
    progress(1, REPORT_STEPS[1])
    profile = usage_profile(
        start,
        end,
        zone,
        pool=pool,
        purpose=None if pool else (data.get("purpose") or None),
        cluster=cluster,
        scope=scope,
    )
    progress(2, REPORT_STEPS[2])
    peak_rows = peak_split(
        start,
        end,
        purpose=data.get("purpose") or None,
        pool=pool,
        cluster=cluster,
        scope=scope,
    )
    progress(3, REPORT_STEPS[3])
    split = daily_split(start, end, pool=pool, cluster=cluster, scope=scope)
    progress(4, REPORT_STEPS[4])
    return {
        "rows": rows,
        "total": total_row(rows),
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
