"""The cost report grouped by workload: each pool's cost split among its workloads by a
stated rule, hour by hour.

For each pool-hour:

1. **measured: pod labels.** The GPU-hours a workload's labelled samples hold
   (``WorkloadHourlyUsage``) go to it at the pool's measured cost per GPU-hour.
1b. **measured: Slurm jobs.** Of the rest, the GPU-hours the pool's Slurm jobs held
   (apps/reports/cost/slurm_jobs.py) go to each job's mapped workload, as that fraction
   of the rest's GPU-hours; the hours of jobs no rule maps to one of the pool's
   workloads go to **unattributed**. Jobs never take more than the rest: claims beyond
   it are scaled down, and the rows say so.
2. **declared.** Of the rest, each workload *running* in the hour (the fraction of the
   hour it ran, ``apps.pools.running``) gets its declared ``gpu_count`` ÷ the pool's GPUs.
   When the running workloads declare more GPUs than the pool has, every share is scaled
   down by pool GPUs ÷ declared GPUs, and the rows say so (**scaled down**).
3. **unallocated.** What no running workload holds is the pool's unallocated capacity:
   one row of its own (``UNALLOCATED``), per pool in its explanation.
4. **unattributed.** The hours of a pool that has no workload at all: no rule can give
   them to anyone (``rows.UNATTRIBUTED``).

Planned, paused, finished and archived hours cost a workload nothing. Capacity, busy and
idle figures and the training/inference parts follow the same shares, so workloads +
unallocated + unattributed = the pool's figures, hour by hour and over any span. A
workload's lost GPU-hours are its own interruptions' (as a pool's are its workloads').

The rule is linear in the hour's cost, so it is applied per *segment*: the pool's hours
between two whole hours at which some workload's running state changes (an hour in which
one changes is a segment of its own, shared by the fraction of it each workload ran).
The pools' sums per segment come from one query set (``pool_usage_totals`` with cuts),
the labelled GPU-hours per segment from one query: the number of queries does not grow
with the number of pools or workloads.
"""

from collections import defaultdict
from dataclasses import dataclass, field, fields
from decimal import Decimal

from django.db.models import Case, DateTimeField, Q, Sum, Value, When
from django.utils.translation import gettext

from apps.core.money import as_decimal, times
from apps.pools.hours import ceil_hour, floor_hour
from apps.pools.models import TRAINING_KINDS, Purpose
from apps.pools.running import running_intervals, running_seconds
from apps.reports.cost import costmodel, explain
from apps.reports.cost.formatting import quantity
from apps.reports.cost.pool_usage import UsageTotals, pool_usage_totals
from apps.reports.cost.prices import paid_hours_full_price_usd, price_periods_of
from apps.reports.cost.rates import conversion_for, currencies_of
from apps.reports.cost.rows import (
    OTHER_TEAMS,
    UNATTRIBUTED,
    CostRow,
    PoolFigures,
    add_pool,
    add_requests,
    cluster_slug_of,
    total_row,
)
from apps.reports.cost.service import pool_paid_hours
from apps.reports.cost.slurm_jobs import job_hours_by_segment
from apps.reports.cost.workloads import RequestTotals
from apps.reports.span import Span

UNALLOCATED = "unallocated"

# The rule that produced a row's figures (CostRow.split_rule).
MEASURED = "measured"
DECLARED = "declared"
SCALED_DOWN = "scaled_down"
NOT_RUNNING = "not_running"

# The figures a share of a pool carries; the training and inference parts follow
# ``cost_usd`` and ``busy_gpu_hours`` by what the row counts as.
SHARED_FIGURES = (
    "capacity_gpu_hours",
    "measured_capacity_gpu_hours",
    "unmeasured_gpu_hours",
    "busy_gpu_hours",
    "cost_usd",
    "measured_cost_usd",
    "unmeasured_cost_usd",
    "idle_cost_usd",
    "cost",
)
# The money of SHARED_FIGURES (in USD, and ``cost`` in the reporting currency): Decimal,
# scaled by Decimal shares, so the shares of a pool that are ratios of whole GPUs (2 of
# 8) add up to its cost exactly.
MONEY_FIGURES = frozenset(
    name for name in SHARED_FIGURES if name.endswith("_usd") or name == "cost"
)


def _zero(name: str):
    return Decimal(0) if name in MONEY_FIGURES else 0.0


def _pool_vector(figures: PoolFigures) -> dict:
    gpus = figures.pool.gpu_count
    return {
        "capacity_gpu_hours": gpus * figures.paid_hours,
        "measured_capacity_gpu_hours": figures.usage.measured_capacity_gpu_hours,
        "unmeasured_gpu_hours": figures.unmeasured_hours * gpus,
        "busy_gpu_hours": figures.usage.busy_gpu_hours,
        "cost_usd": figures.cost_usd,
        "measured_cost_usd": figures.usage.measured_cost_usd,
        "unmeasured_cost_usd": figures.unmeasured_cost_usd,
        "idle_cost_usd": figures.idle_cost_usd,
        "cost": figures.cost,
    }


def _add_vector(target: dict, vector: dict, scale: float | Decimal = 1):
    """target += scale × vector: the hours in floats, the money in Decimal (``scale``
    given as a Decimal keeps an exact ratio exact)."""
    money_scale = as_decimal(scale)
    hours_scale = float(scale)
    for name in SHARED_FIGURES:
        if name in MONEY_FIGURES:
            target[name] = target.get(name, Decimal(0)) + money_scale * vector.get(name, Decimal(0))
        else:
            target[name] = target.get(name, 0.0) + hours_scale * vector.get(name, 0.0)


def _merge_usage(target: UsageTotals, other: UsageTotals):
    merged = target + other
    for item in fields(UsageTotals):
        setattr(target, item.name, getattr(merged, item.name))


def _add_to_row(row: CostRow, vector: dict, counts_as: str):
    """Add a share's figures to ``row``, its training or inference part by ``counts_as``."""
    for name in SHARED_FIGURES:
        setattr(row, name, getattr(row, name) + vector.get(name, _zero(name)))
    if counts_as == Purpose.TRAINING:
        row.training_busy_gpu_hours += vector.get("busy_gpu_hours", 0.0)
        row.training_cost_usd += vector.get("cost_usd", Decimal(0))
    elif counts_as == Purpose.INFERENCE:
        row.inference_cost_usd += vector.get("cost_usd", Decimal(0))


@dataclass
class _WorkloadShare:
    """What one workload collects from its pool over the span."""

    labelled_allocated_gpu_hours: float = 0.0
    labelled_busy_gpu_hours: float = 0.0
    labelled_cost_usd: Decimal = Decimal(0)
    labelled_idle_cost_usd: Decimal = Decimal(0)
    labelled_cost: Decimal = Decimal(0)
    # Σ over the segments of fraction of the segment running × scale × the segment's
    # figures less the labelled ones: the declared share is GPUs ÷ pool GPUs of it.
    weighted_rest: dict = field(default_factory=dict)
    running_hours: float = 0.0
    scaled_down: bool = False
    declared_gpus_at_most: float = 0.0  # the most GPUs the running workloads declared
    # Rule 1b: the GPU-hours its Slurm jobs held and the pool's figures they carry.
    slurm_gpu_hours: Decimal = Decimal(0)
    slurm_values: dict = field(default_factory=dict)
    slurm_scaled_down: bool = False


def _segments(span: Span, intervals_of_pool) -> list:
    """[start, end) pieces of the span cut at the whole hours around every change of a
    workload's running state."""
    cuts = set()
    for intervals in intervals_of_pool:
        for begin, finish in intervals:
            for moment in (begin, finish):
                if span.start < moment < span.end:
                    cuts.add(floor_hour(moment))
                    cuts.add(ceil_hour(moment))
    edges = sorted({span.start, span.end, *(cut for cut in cuts if span.start < cut < span.end)})
    return list(zip(edges, edges[1:], strict=False))


def _labelled_by_segment(span: Span, workloads_by_pool, segments_of_pool) -> dict:
    """(workload id, segment start) → (allocated, busy) GPU-hours of its labelled samples.
    One query."""
    from apps.telemetry.models import WorkloadHourlyUsage

    ids = [
        workload.id for pool_workloads in workloads_by_pool.values() for workload in pool_workloads
    ]
    whens = []
    for pool_id, segments in segments_of_pool.items():
        pool_ids = [workload.id for workload in workloads_by_pool[pool_id]]
        for begin, _finish in reversed(segments[1:]):
            whens.append(When(Q(workload_id__in=pool_ids, hour__gte=begin), then=Value(begin)))
    rows = (
        WorkloadHourlyUsage.objects.filter(
            workload_id__in=ids, hour__gte=span.start, hour__lt=span.end
        )
        .annotate(
            segment=Case(*whens, default=Value(None), output_field=DateTimeField())
            if whens
            else Value(None, output_field=DateTimeField())
        )
        .values("workload_id", "segment")
        .annotate(allocated=Sum("allocated_gpu_hours"), busy=Sum("busy_gpu_hours"))
    )
    return {
        (row["workload_id"], row["segment"] or span.start): (
            row["allocated"] or 0.0,
            row["busy"] or 0.0,
        )
        for row in rows
    }


def _segment_figures(span: Span, figures_of_pool: dict, segments_of_pool: dict) -> dict:
    """(pool id, segment start) → the pool's figures over the segment. Pools of a single
    segment keep their span's figures; the others' sums come from one query set."""
    result = {}
    cut_pools = {pool_id: segs for pool_id, segs in segments_of_pool.items() if len(segs) > 1}
    for pool_id in segments_of_pool:
        if pool_id not in cut_pools:
            result[(pool_id, span.start)] = figures_of_pool[pool_id]
    if not cut_pools:
        return result
    periods = price_periods_of(list(cut_pools))
    cuts = {pool_id: [begin for begin, _ in segs[1:]] for pool_id, segs in cut_pools.items()}
    pools = [figures_of_pool[pool_id].pool for pool_id in cut_pools]
    conversion = conversion_for(span, currencies_of(periods) | {pool.currency for pool in pools})
    usage = pool_usage_totals(
        span, list(cut_pools), periods, cuts=cuts, by_segment=True, conversion=conversion
    )
    usage_of_pool = defaultdict(list)
    for (usage_pool, start), totals in usage.items():
        usage_of_pool[usage_pool].append((start, totals))
    for pool_id, segments in cut_pools.items():
        pool = figures_of_pool[pool_id].pool
        for begin, finish in segments:
            segment_usage = UsageTotals()
            for start, totals in usage_of_pool[pool_id]:
                if begin <= start < finish:
                    _merge_usage(segment_usage, totals)
            segment_span = Span(begin, finish)
            result[(pool_id, begin)] = PoolFigures(
                pool=pool,
                paid_hours=pool_paid_hours(pool, segment_span),
                usage=segment_usage,
                requests=RequestTotals(),
                lost_gpu_hours=0.0,
                paid_prices=paid_hours_full_price_usd(segment_span, [pool], periods, conversion)[
                    pool_id
                ],
            )
    return result


def _counts_as(workload) -> str:
    return Purpose.TRAINING if workload.kind in TRAINING_KINDS else Purpose.INFERENCE


def workload_rows(span, figures, workloads, requests, lost, measured, scope) -> list:
    """The rows of the cost report grouped by workload (``report.cost_report``)."""
    figures_of_pool = {pool_figures.pool.id: pool_figures for pool_figures in figures}
    workloads_by_pool = defaultdict(list)
    for workload in workloads:
        workloads_by_pool[workload.pool_id].append(workload)
    shares, unallocated_of_pool, unmapped_of_pool = _share_pools(
        span, figures_of_pool, workloads_by_pool, workloads
    )
    rows, others = [], []
    other_label = gettext("Other teams' workloads")
    unattributed, unallocated_row = _unattributed_row(), _unallocated_row()
    for pool_figures in figures:
        pool = pool_figures.pool
        pool_workloads = workloads_by_pool[pool.id]
        if not pool_workloads:
            add_pool(unattributed, pool_figures)
            continue
        _add_unallocated(unallocated_row, pool, unallocated_of_pool[pool.id])
        unallocated_row.missing_rates |= pool_figures.missing_rates
        _add_unmapped_jobs(unattributed, pool, unmapped_of_pool.get(pool.id))
        for workload in pool_workloads:
            visible = scope.covers_team(workload.effective_team_id)
            name = workload.name if visible else other_label
            row = CostRow(
                key=workload.slug if visible else OTHER_TEAMS, label=name, purpose=pool.purpose
            )
            _fill_workload_row(row, workload, pool_figures, shares[workload.id], name)
            row.clusters.add(cluster_slug_of(pool))
            row.missing_rates |= pool_figures.missing_rates
            _add_own_figures(row, workload, pool_figures, name, lost, measured, requests)
            (rows if visible else others).append(row)
    if others:
        rows.append(total_row(others, key=OTHER_TEAMS, label=other_label))
    for rest_row in (unallocated_row, unattributed):
        if rest_row.training_busy_gpu_hours > 1e-9:
            # Busy training hours that no workload's events account for.
            rest_row.estimated_parts += 1
        if rest_row.pool_count:
            rows.append(rest_row)
    return rows


def _share_pools(span, figures_of_pool, workloads_by_pool, workloads) -> tuple[dict, dict, dict]:
    """(workload id → its ``_WorkloadShare``, pool id → its unallocated figures, pool id
    → the figures of its Slurm jobs no rule maps): each pool with workloads shared
    segment by segment, by labels first, then by Slurm jobs, then by the declared GPUs
    of the workloads running."""
    intervals = running_intervals(workloads, span.start, span.end)
    segments_of_pool = {
        pool_id: _segments(
            span, [intervals[workload.id] for workload in workloads_by_pool[pool_id]]
        )
        for pool_id in figures_of_pool
    }
    segment_figures = _segment_figures(span, figures_of_pool, segments_of_pool)
    labelled = _labelled_by_segment(span, workloads_by_pool, segments_of_pool)
    shared_pools = [
        figures_of_pool[pool_id].pool for pool_id in figures_of_pool if workloads_by_pool[pool_id]
    ]
    job_hours = job_hours_by_segment(span, shared_pools, segments_of_pool)
    shares = {workload.id: _WorkloadShare() for workload in workloads}
    unallocated_of_pool, unmapped_of_pool = {}, {}
    for pool_id, segments in segments_of_pool.items():
        pool_workloads = workloads_by_pool[pool_id]
        if not pool_workloads:
            continue
        unallocated, unmapped = {}, {}
        for begin, finish in segments:
            seg = segment_figures[(pool_id, begin)]
            rest = _share_labelled(seg, pool_workloads, labelled, begin, shares)
            _share_slurm(job_hours.get((pool_id, begin)), rest, shares, unmapped)
            held = _share_declared(seg, pool_workloads, intervals, (begin, finish), rest, shares)
            _add_vector(unallocated, rest, max(Decimal(0), 1 - held))
        unallocated_of_pool[pool_id] = unallocated
        if unmapped:
            unmapped_of_pool[pool_id] = unmapped
    return shares, unallocated_of_pool, unmapped_of_pool


def _share_slurm(job_hours, rest, shares, unmapped) -> None:
    """Rule 1b: each workload's Slurm GPU-hours in the segment as that fraction of the
    ``rest``'s GPU-hours, into its share, and the unmapped jobs' into ``unmapped``;
    ``rest`` loses both. Jobs claiming more than the rest are scaled down to it."""
    if job_hours is None or not job_hours.total:
        return
    capacity = as_decimal(rest.get("capacity_gpu_hours", 0.0))
    if capacity <= 0:
        return
    total = job_hours.total
    scale = capacity / total if total > capacity else Decimal(1)
    base = dict(rest)
    unmapped_hours = job_hours.unattributed
    for workload_id, gpu_hours in job_hours.by_workload.items():
        share = shares.get(workload_id)
        if share is None:  # a workload the report leaves out: its jobs are nobody's here
            unmapped_hours += gpu_hours
            continue
        fraction = gpu_hours * scale / capacity
        _add_vector(share.slurm_values, base, fraction)
        share.slurm_gpu_hours += gpu_hours * scale
        share.slurm_scaled_down |= scale < 1 or job_hours.scaled_down_hours > 0
        _add_vector(rest, base, -fraction)
    if unmapped_hours:
        fraction = unmapped_hours * scale / capacity
        _add_vector(unmapped, base, fraction)
        unmapped["slurm_gpu_hours"] = unmapped.get("slurm_gpu_hours", Decimal(0)) + (
            unmapped_hours * scale
        )
        _add_vector(rest, base, -fraction)


def _add_unmapped_jobs(row: CostRow, pool, vector: dict | None) -> None:
    """Add the figures of a shared pool's Slurm jobs that no rule maps to one of its
    workloads to the unattributed row."""
    if not vector:
        return
    _add_to_row(row, vector, pool.purpose)
    row.pool_count += 1
    row.members.append(pool.slug)
    row.label = gettext("Unattributed (pools without workloads, unmapped Slurm jobs)")
    row.parts.append(
        explain.SlurmPart(
            pool.name,
            gettext("Slurm jobs no rule maps"),
            float(vector["slurm_gpu_hours"]),
            vector,
            pool.purpose,
        )
    )


def unmapped_jobs_rows(unattributed: CostRow) -> dict[str, CostRow]:
    """Pool name → the figures of its Slurm jobs no rule maps, each as a row of its own,
    from the unattributed row of a report by workload, which holds them summed
    (``_add_unmapped_jobs``)."""
    rows = {}
    for part in unattributed.parts:
        if isinstance(part, explain.SlurmPart):
            row = CostRow(key=unattributed.key, label=unattributed.label, purpose=part.counts_as)
            _add_to_row(row, part.values, part.counts_as)
            row.pool_count = 1
            rows[part.pool_name] = row
    return rows


def _share_labelled(seg, pool_workloads, labelled, begin, shares) -> dict:
    """Rule 1: each workload's labelled GPU-hours in the segment, at the pool's measured
    cost per GPU-hour, into its share. Returns the segment's figures less theirs."""
    rest = _pool_vector(seg)
    capacity = seg.usage.measured_capacity_gpu_hours
    for workload in pool_workloads:
        allocated, busy = labelled.get((workload.id, begin), (0.0, 0.0))
        if not allocated and not busy:
            continue
        cost = (
            times(allocated, seg.usage.measured_cost_usd) / as_decimal(capacity)
            if capacity
            else Decimal(0)
        )
        idle = costmodel.idle_cost_usd(cost, busy, allocated)
        reporting_cost = (
            times(allocated, seg.usage.measured_cost) / as_decimal(capacity)
            if capacity
            else Decimal(0)
        )
        share = shares[workload.id]
        share.labelled_cost += reporting_cost
        share.labelled_allocated_gpu_hours += allocated
        share.labelled_busy_gpu_hours += busy
        share.labelled_cost_usd += cost
        share.labelled_idle_cost_usd += idle
        labelled_vector = {
            "capacity_gpu_hours": allocated,
            "measured_capacity_gpu_hours": allocated,
            "busy_gpu_hours": busy,
            "cost_usd": cost,
            "measured_cost_usd": cost,
            "idle_cost_usd": idle,
            "cost": reporting_cost,
        }
        _add_vector(rest, labelled_vector, -1)
    return rest


def _share_declared(seg, pool_workloads, intervals, bounds, rest, shares) -> Decimal:
    """Rule 2: the segment's ``rest`` to each running workload by its declared GPUs ×
    the fraction of the segment it ran, scaled down when they declare more GPUs than
    the pool has. Returns the fraction of the pool's GPUs they hold."""
    begin, finish = bounds
    # Decimal ratios: a workload running the whole segment has the fraction 1 and
    # shares of whole GPUs stay exact (2 of 8 = 0.25).
    length = as_decimal((finish - begin).total_seconds())
    fractions = {
        workload.id: as_decimal(running_seconds(intervals[workload.id], begin, finish)) / length
        for workload in pool_workloads
    }
    declared = sum((w.gpu_count * fractions[w.id] for w in pool_workloads), Decimal(0))
    gpus = seg.pool.gpu_count
    scale = gpus / declared if declared > gpus else Decimal(1)
    held = Decimal(0)
    for workload in pool_workloads:
        fraction = fractions[workload.id]
        if not fraction:
            continue
        share = shares[workload.id]
        _add_vector(share.weighted_rest, rest, fraction * scale)
        share.running_hours += float(fraction * length / 3600)
        if scale < 1:
            share.scaled_down = True
            share.declared_gpus_at_most = max(share.declared_gpus_at_most, float(declared))
        held += workload.gpu_count * fraction * scale / gpus if gpus else Decimal(0)
    return held


def _unattributed_row() -> CostRow:
    """Rule 4's row: the pools without any workload."""
    row = CostRow(key=UNATTRIBUTED, label=gettext("Unattributed (pools without workloads)"))
    row.split_rule = UNATTRIBUTED
    row.split_rule_text = gettext(
        "unattributed: hours of pools with no workload, which no rule gives to anyone"
    )
    return row


def _unallocated_row() -> CostRow:
    """Rule 3's row: what no running workload holds, every pool's."""
    row = CostRow(key=UNALLOCATED, label=gettext("Unallocated capacity"))
    row.split_rule = UNALLOCATED
    row.split_rule_text = gettext(
        "unallocated: the pools' GPUs no running workload declares or labels hold"
    )
    return row


def _add_unallocated(row: CostRow, pool, vector: dict) -> None:
    """Add a pool's unallocated figures to the unallocated row, unless they are nothing
    but the sums' noise."""
    if any(abs(vector.get(name, 0)) > 1e-12 for name in SHARED_FIGURES):
        _add_to_row(row, vector, pool.purpose)
        row.pool_count += 1
        row.members.append(pool.slug)
        row.clusters.add(cluster_slug_of(pool))
        row.parts.append(explain.UnallocatedPart(pool.name, vector, pool.purpose))


def _add_own_figures(row, workload, pool_figures, name, lost, measured, requests) -> None:
    """What is a workload's own whatever its share: its interruptions, its effective
    training GPU-hours and its requests."""
    # Every workload's interruptions are its own, whatever it runs: the rows add up to the
    # pool's lost GPU-hours in every grouping. Only a training workload's count against
    # its effective training GPU-hours.
    lost_gpu_hours = lost.get(workload.id, 0.0)
    price = pool_figures.unmeasured_usd_per_gpu_hour
    row.lost_gpu_hours += lost_gpu_hours
    row.interruption_cost_usd += times(lost_gpu_hours, price)
    row.parts.append(explain.LostPart(name, lost_gpu_hours, price))
    if workload.kind in TRAINING_KINDS:
        row.training_lost_gpu_hours += lost_gpu_hours
        row.count_effective_training(workload.id, measured, name)
    add_requests(row, requests.get(workload.id, RequestTotals()), name)


def _fill_workload_row(row, workload, pool_figures, share: _WorkloadShare, name: str):
    pool = pool_figures.pool
    counts_as = _counts_as(workload)
    row.pool_count = 1
    row.gpus = workload.gpu_count
    rules = []
    if share.labelled_allocated_gpu_hours or share.labelled_busy_gpu_hours:
        labelled = {
            "capacity_gpu_hours": share.labelled_allocated_gpu_hours,
            "measured_capacity_gpu_hours": share.labelled_allocated_gpu_hours,
            "busy_gpu_hours": share.labelled_busy_gpu_hours,
            "cost_usd": share.labelled_cost_usd,
            "measured_cost_usd": share.labelled_cost_usd,
            "idle_cost_usd": share.labelled_idle_cost_usd,
            "cost": share.labelled_cost,
        }
        _add_to_row(row, labelled, counts_as)
        row.parts.append(
            explain.AttributedPart(
                pool_figures,
                name,
                share.labelled_allocated_gpu_hours,
                share.labelled_busy_gpu_hours,
                share.labelled_cost_usd,
                share.labelled_idle_cost_usd,
                counts_as,
            )
        )
        rules.append((MEASURED, gettext("measured: pod labels")))
    if share.slurm_gpu_hours:
        _add_to_row(row, share.slurm_values, counts_as)
        words = {"hours": quantity(float(share.slurm_gpu_hours))}
        text = gettext("measured: Slurm jobs, %(hours)s GPU-h") % words
        if share.slurm_scaled_down:
            text = (
                gettext(
                    "measured: Slurm jobs, %(hours)s GPU-h, scaled down where the jobs claimed "
                    "more GPU-hours than the pool had"
                )
                % words
            )
        rules.append((MEASURED, text))
        row.split_scaled_down = row.split_scaled_down or share.slurm_scaled_down
        row.parts.append(
            explain.SlurmPart(
                pool.name, name, float(share.slurm_gpu_hours), share.slurm_values, counts_as
            )
        )
    values = {}
    if share.running_hours:
        ratio = Decimal(workload.gpu_count) / pool.gpu_count if pool.gpu_count else Decimal(0)
        values = {
            name_: ratio * value if name_ in MONEY_FIGURES else float(ratio) * value
            for name_, value in share.weighted_rest.items()
        }
        _add_to_row(row, values, counts_as)
        words = {
            "gpus": workload.gpu_count,
            "pool_gpus": pool.gpu_count,
            "hours": quantity(share.running_hours),
        }
        if share.scaled_down:
            text = gettext(
                "scaled down: running workloads declared %(declared)s GPUs on a pool of "
                "%(pool_gpus)s, %(gpus)s of them this one, while running %(hours)s h"
            ) % {**words, "declared": quantity(share.declared_gpus_at_most)}
            rules.append((SCALED_DOWN, text))
        else:
            text = gettext("declared: %(gpus)s of %(pool_gpus)s GPUs while running (%(hours)s h)")
            rules.append((DECLARED, text % words))
        row.split_scaled_down = row.split_scaled_down or share.scaled_down
        row.parts.append(
            explain.DeclaredPart(
                pool.name,
                name,
                rules[-1][1],
                workload.gpu_count,
                pool.gpu_count,
                share.weighted_rest,
                values,
                counts_as,
            )
        )
    if not rules:
        rules.append(
            (
                NOT_RUNNING,
                gettext("not running in the range (%(status)s): no cost")
                % {"status": workload.get_status_display()},
            )
        )
    row.split_rule = rules[-1][0]
    row.split_rule_text = "; ".join(text for _rule, text in rules)
