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

GROUP_BY_CHOICES = ("pool", "purpose", "workload")


def cost_report(
    start: datetime,
    end: datetime,
    group_by: str = "pool",
    *,
    purpose: str | None = None,
    pool_slug: str | None = None,
    scope: Scope = EVERYTHING,
) -> list[CostRow]:
    """Rows of the cost report, one per pool, purpose or workload.

    Grouped by workload, each pool's hours are split by the rule of apps/reports/split.py:
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
    pools = Pool.objects.select_related("gpu_model").filter(scope.team_filter()).order_by("name")
    if purpose:
        pools = pools.filter(purpose=purpose)
    if pool_slug:
        pools = pools.filter(slug=pool_slug)
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
    training_by_pool = defaultdict(list)
    for workload in workloads:
        if workload.kind in TRAINING_KINDS:
            training_by_pool[workload.pool_id].append(workload)

    def count_pool_training(row: CostRow, pool: Pool) -> None:
        if pool.purpose == Purpose.TRAINING:
            for workload in training_by_pool[pool.id]:
                visible = scope.covers_team(workload.effective_team_id)
                label = workload.name if visible else gettext("Other teams' workloads")
                row.count_effective_training(workload.id, measured, label)

    if group_by == "pool":
        rows = []
        for pool_figures_ in figures:
            row = CostRow(
                key=pool_figures_.pool.slug,
                label=pool_figures_.pool.name,
                purpose=pool_figures_.pool.purpose,
            )
            add_pool(row, pool_figures_)
            count_pool_training(row, pool_figures_.pool)
            add_requests(row, pool_figures_.requests, pool_figures_.pool.name)
            rows.append(row)
        return rows

    if group_by == "purpose":
        rows = {
            value: CostRow(key=value, label=str(label), purpose=value)
            for value, label in Purpose.choices
            if not purpose or value == purpose
        }
        for pool_figures_ in figures:
            row = rows[pool_figures_.pool.purpose]
            add_pool(row, pool_figures_)
            count_pool_training(row, pool_figures_.pool)
            add_requests(row, pool_figures_.requests, pool_figures_.pool.name)
        return list(rows.values())

    # group_by == "workload": the split by rule (apps/reports/cost/split.py).
    return split.workload_rows(span, figures, workloads, requests, lost, measured, scope)
