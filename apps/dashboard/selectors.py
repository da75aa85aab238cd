"""What only the Overview shows, as data: the month to date by purpose, the fleet's
curves and KPIs, and the idle ranking. Plain parameters in, dicts out, cached
(apps/reports/cache.py) until the data changes and warmed with the Overview's rendered
figures (apps/dashboard/apps.py registers them with apps/reports/warming.py). Nothing
here reads a request.

Every figure is of the pools and workloads in a ``scope`` (apps/accounts/scope.py), the
viewer's, and is cached under its ``cache_key``: equal scopes share entries, and no
scope reads another's."""

import dataclasses
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.db.models import Sum

from apps.accounts.scope import EVERYTHING, Scope
from apps.clusters.models import Cluster
from apps.core.charts import freeze_figure
from apps.dashboard import charts as overview_charts
from apps.pools.charts import build_gpus_by_purpose_figure
from apps.pools.hours import floor_hour
from apps.pools.models import Pool, Purpose
from apps.reports import charts
from apps.reports.cache import cached
from apps.reports.cost import costmodel, periods, report
from apps.reports.cost.daily import daily_split
from apps.reports.cost.rows import CostRow, total_row
from apps.reports.span import Span
from apps.reports.usage.curves import usage_profile, weekday_hour_heatmap
from apps.reports.usage.fleet import fleet_usage_sums, usage_sums_by_cluster

OVERVIEW_CURVE_DAYS = 28


OVERVIEW_RANKED_POOLS = 10


def cache_parameters(scope: Scope, cluster: str | None) -> dict:
    """The cache parameters of the Overview's figures: the whole fleet's have no cluster
    part, a cluster's add its slug."""
    return {"scope": scope.cache_key, **({"cluster": cluster} if cluster else {})}


def overview_month_start(now) -> datetime:
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def overview_month(now, scope: Scope = EVERYTHING, *, cluster: str | None = None) -> dict:
    """The month to date by purpose (``rows``) and their ``total`` row, with what each
    adds up (``CostRow.parts``, one per pool: what the Overview's explanations show), of
    the pools of the cluster of slug ``cluster`` (None: every cluster's); cached until
    the data changes."""
    return cached(
        "overview-month",
        cache_parameters(scope, cluster),
        lambda: _overview_month(now, scope, cluster),
    )


def _overview_month(now, scope: Scope, cluster: str | None) -> dict:
    rows = periods.cost_report(
        overview_month_start(now), now, "purpose", cluster_slug=cluster, scope=scope
    )
    return {"rows": rows, "total": total_row(rows)}


def cluster_rows(now, scope: Scope, month_start: datetime) -> list[dict]:
    """Per cluster with pools in ``scope``: its GPUs in service now, its utilisation over
    the last 24 hours and its cost and idle cost of the month to date, each the sum over
    its pools (the cost report grouped by cluster); the rows add up to the fleet's KPIs.
    Empty with a single cluster: the KPIs are its figures already."""
    clusters = list(
        Cluster.objects.filter(pk__in=Pool.objects.in_scope(scope).values("cluster")).order_by(
            "name"
        )
    )
    if len(clusters) < 2:
        return []
    month = {row.key: row for row in periods.cost_report(month_start, now, "cluster", scope=scope)}
    gpus = dict(
        Pool.objects.in_scope(scope)
        .in_service(now)
        .order_by()
        .values("cluster__slug")
        .annotate(gpus=Sum("gpu_count"))
        .values_list("cluster__slug", "gpus")
    )
    day = Span.last_hours(now, 24)
    usage = usage_sums_by_cluster(day.start, day.end, scope)
    return [
        {
            "slug": cluster.slug,
            "name": cluster.name,
            "kind": cluster.get_kind_display(),
            "region": cluster.region,
            "gpus": gpus.get(cluster.slug, 0),
            "usage_24h": usage.get(cluster.slug, (0.0, 0.0)),
            "utilization_24h_pct": costmodel.ratio_or_none(
                *usage.get(cluster.slug, (0.0, 0.0)), 100
            ),
            "cost_usd": month[cluster.slug].cost_usd if cluster.slug in month else Decimal(0),
            "idle_cost_usd": (
                month[cluster.slug].idle_cost_usd if cluster.slug in month else Decimal(0)
            ),
        }
        for cluster in clusters
    ]


def _without_parts(row: CostRow) -> CostRow:
    return dataclasses.replace(row, members=[], parts=[])


def _overview_context(now, scope: Scope, cluster: str | None = None):
    # What a visit reads back from the cache holds what the page shows, nothing per pool:
    # the ten most idle pools, and the month's rows without their per-pool parts, whose
    # unpickling would grow with the fleet at every visit.
    ranking = idle_ranking(now, scope, cluster=cluster)
    idle = {**ranking, "rows": ranking["rows"][:OVERVIEW_RANKED_POOLS]}
    month_start = overview_month_start(now)
    month_figures = overview_month(now, scope, cluster=cluster)
    month_rows = month_figures["rows"]
    month = _without_parts(month_figures["total"])
    curve = Span.last_hours(now, OVERVIEW_CURVE_DAYS * 24)
    zone_name = "UTC"
    zone = ZoneInfo(zone_name)
    split = daily_split(curve.start, curve.end, cluster=cluster, scope=scope)
    profile = usage_profile(curve.start, curve.end, zone, cluster=cluster, scope=scope)
    heatmap = weekday_hour_heatmap(curve.start, curve.end, zone, cluster=cluster, scope=scope)
    pools = Pool.objects.in_scope(scope).in_service(now)
    if cluster:
        pools = pools.filter(cluster__slug=cluster)
    gpus_by_purpose = {purpose.value: 0 for purpose in Purpose} | pools.gpus_by_purpose()
    # The sums under the utilisation KPIs, kept for their explanation: the last 24 (and
    # 7 × 24) hour-slots, the current one included (Span.last_hours).
    day, week = Span.last_hours(now, 24), Span.last_hours(now, 7 * 24)
    usage_24h = fleet_usage_sums(day.start, day.end, scope, cluster=cluster)
    usage_7d = fleet_usage_sums(week.start, week.end, scope, cluster=cluster)
    context = {
        "now": now,
        "cluster_slug": cluster or "",
        # The clusters side by side, on the whole fleet's Overview only.
        "cluster_rows": [] if cluster else cluster_rows(now, scope, month_start),
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
        "cost_share_figure": freeze_figure(overview_charts.build_share_donut(month_rows)),
        "hour_of_day_figure": freeze_figure(
            charts.build_hour_of_day_figure(profile, zone_name=zone_name)
        ),
        "heatmap_figure": freeze_figure(
            overview_charts.build_heatmap_figure(heatmap, zone_name=zone_name)
        ),
    }
    return context


def overview_figures(now, scope: Scope = EVERYTHING, *, cluster: str | None = None) -> dict:
    """The Overview's figures and charts at ``now`` over ``scope``, of the pools of the
    cluster of slug ``cluster`` (None: the whole fleet); cached until the data changes."""
    return cached(
        "overview",
        cache_parameters(scope, cluster),
        lambda: _overview_context(now, scope, cluster),
    )


IDLE_RANKING_WINDOWS_DAYS = (7, 30)


def idle_ranking(now, scope: Scope = EVERYTHING, *, cluster: str | None = None) -> dict:
    """The Overview's "where do the GPU dollars go" table: per pool, idle cost over the
    last 7 and 30 days (the pool list's rolling window,
    ``apps.reports.selectors.pool_list_window``, of 7 or 30 days), with its 30-day
    utilisation and cost, most idle dollars first; and the fleet's 30-day totals beside
    the month-to-date cards. Same figures as the report by pool over each window
    (``report.cost_report``). Part of ``overview_figures``, so it is cached and warmed
    with the rest of the Overview."""
    end = floor_hour(now) + timedelta(hours=1)
    by_window = {
        days: {
            row.key: row
            for row in report.cost_report(
                end - timedelta(days=days), end, cluster_slug=cluster, scope=scope
            )
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
