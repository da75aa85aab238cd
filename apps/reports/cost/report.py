"""The cost report, computed live: one row per pool, purpose or workload over a span,
aggregated in SQL, a handful of queries whatever the number of pools, workloads or
hours. Closed months are served as they were frozen by ``apps.reports.cost.periods``,
which calls this for the open rest."""

from collections import defaultdict
from datetime import datetime

from django.utils.translation import gettext

from apps.accounts.scope import EVERYTHING, Scope
from apps.pools.models import TRAINING_KINDS, Pool, Purpose, Workload
from apps.reports.cost import split
from apps.reports.cost.rows import CostRow, add_pool, add_requests, pool_figures
from apps.reports.cost.workloads import (
    lost_gpu_hours_by_workload,
    measured_effective_gpu_hours_by_workload,
    workload_request_totals,
)
from apps.reports.span import Span

GROUP_BY_CHOICES = ("pool", "purpose", "workload", "cluster")


def cost_report(
    start: datetime,
    end: datetime,
    group_by: str = "pool",
    *,
    purpose: str | None = None,
    pool_slug: str | None = None,
    cluster_slug: str | None = None,
    scope: Scope = EVERYTHING,
) -> list[CostRow]:
    """Rows of the cost report, one per pool, purpose, workload or cluster.

    ``cluster_slug`` keeps the pools of that cluster only: every figure is then the sum
    over its pools, and the clusters' reports add up to the unfiltered one.

    Grouped by workload, each pool's hours are split by the rule of apps/reports/cost/split.py:
    pod labels first, then each running workload's declared GPUs ÷ the pool's GPUs; what
    no workload holds is one "unallocated" row, pools without any workload one
    "unattributed" row (requests are always the workload's own).

    Only the pools in ``scope`` count, every workload on them included, so a pool's
    figures are whole. Grouped by workload, the workloads outside ``scope`` (other teams'
    on a shared pool) are summed into one "other teams" row that names none of them, not
    even in its explanations.
    """
    if group_by not in GROUP_BY_CHOICES:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY_CHOICES)}")
    span = Span.of(start, end)
    pools = (
        Pool.objects.select_related("gpu_model", "cluster")
        .filter(scope.team_filter())
        .order_by("name")
    )
    if purpose:
        pools = pools.filter(purpose=purpose)
    if pool_slug:
        pools = pools.filter(slug=pool_slug)
    if cluster_slug:
        pools = pools.filter(cluster__slug=cluster_slug)
    pools = list(pools)
    # The workloads, their requests and their lost GPU-hours, read once for every grouping.
    workloads = list(
        Workload.objects.filter(pool__in=pools).select_related("pool").order_by("name")
    )
    workload_ids = [workload.id for workload in workloads]
    requests = workload_request_totals(span, workload_ids)
    lost = lost_gpu_hours_by_workload(span, workload_ids)
    measured = measured_effective_gpu_hours_by_workload(span, workloads)
    figures = pool_figures(span, pools, workloads, requests, lost)
    if group_by == "workload":
        # The split by rule (apps/reports/cost/split.py).
        return split.workload_rows(span, figures, workloads, requests, lost, measured, scope)
    training = _PoolTraining(workloads, measured, scope)
    if group_by == "pool":
        rows = []
        for found in figures:
            row = CostRow(key=found.pool.slug, label=found.pool.name, purpose=found.pool.purpose)
            _add_pool_figures(row, found, training)
            rows.append(row)
        return rows
    if group_by == "cluster":
        by_cluster = {}
        for found in figures:
            cluster = found.pool.cluster
            if cluster.slug not in by_cluster:
                by_cluster[cluster.slug] = CostRow(key=cluster.slug, label=cluster.name)
            _add_pool_figures(by_cluster[cluster.slug], found, training)
        return sorted(by_cluster.values(), key=lambda row: row.label)
    by_purpose = {
        value: CostRow(key=value, label=str(label), purpose=value)
        for value, label in Purpose.choices
        if not purpose or value == purpose
    }
    for found in figures:
        _add_pool_figures(by_purpose[found.pool.purpose], found, training)
    return list(by_purpose.values())


def _add_pool_figures(row: CostRow, figures, training: "_PoolTraining") -> None:
    """Add one pool's figures, its training workloads and its requests to ``row``."""
    add_pool(row, figures)
    training.count(row, figures.pool)
    add_requests(row, figures.requests, figures.pool.name)


class _PoolTraining:
    """Counts a training pool's training workloads in a row, each measured by its event
    log or estimated; the workloads outside ``scope`` are named as other teams'."""

    def __init__(self, workloads: list[Workload], measured: dict, scope: Scope):
        self.measured, self.scope = measured, scope
        self.by_pool = defaultdict(list)
        for workload in workloads:
            if workload.kind in TRAINING_KINDS:
                self.by_pool[workload.pool_id].append(workload)

    def count(self, row: CostRow, pool: Pool) -> None:
        if pool.purpose == Purpose.TRAINING:
            for workload in self.by_pool[pool.id]:
                visible = self.scope.covers_team(workload.effective_team_id)
                label = workload.name if visible else gettext("Other teams' workloads")
                row.count_effective_training(workload.id, self.measured, label)
