"""Per workload, what the cost report divides its cost by or adds to it: the requests
and tokens logged, the GPU-hours lost to interruptions, and the effective training
GPU-hours the event logs measure."""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Sum

from apps.pools.hours import ceil_hour, floor_hour
from apps.pools.models import TRAINING_KINDS, Interruption
from apps.reports.cost import costmodel
from apps.reports.cost.service import paid_range, service_edge_hours
from apps.reports.span import ONE_HOUR, Span
from apps.telemetry.models import (
    PoolHourlyUsage,
    WorkloadDailyRequests,
    WorkloadHourlyRequests,
    WorkloadHourlyUsage,
)
from apps.telemetry.rollups.days import in_service_q
from apps.training import goodput
from apps.training import services as training_services


def _days_and_edges(span: Span, daily_model, hourly_model, key: str, ids=None):
    """The daily rows of the span's whole UTC days and the hourly rows of its partial days
    at the edges, of ``ids`` only (None: all): summed together, they cover the span."""
    first, last = span.whole_days()
    daily = daily_model.objects.filter(day__gte=first, day__lt=last)
    hourly = hourly_model.objects.filter(span.edge_filter())
    if ids is not None:
        daily = daily.filter(**{f"{key}__in": ids})
        hourly = hourly.filter(**{f"{key}__in": ids})
    return daily, hourly


@dataclass
class RequestTotals:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    errors: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def merge(self, other: "RequestTotals"):
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.errors += other.errors

    def add(self, row: dict):
        self.requests += row["total_requests"] or 0
        self.input_tokens += row["total_input"] or 0
        self.output_tokens += row["total_output"] or 0
        self.errors += row["total_errors"] or 0


def workload_request_totals(span: Span, workload_ids=None) -> dict[int, RequestTotals]:
    totals: dict[int, RequestTotals] = defaultdict(RequestTotals)
    daily, hourly = _days_and_edges(
        span, WorkloadDailyRequests, WorkloadHourlyRequests, "workload_id", workload_ids
    )
    sums = {
        "total_requests": Sum("requests"),
        "total_input": Sum("input_tokens"),
        "total_output": Sum("output_tokens"),
        "total_errors": Sum("errors"),
    }
    for queryset in (daily, hourly):
        for row in queryset.values("workload_id").annotate(**sums):
            totals[row["workload_id"]].add(row)
    return totals


def lost_gpu_hours_by_workload(span: Span, workload_ids=None) -> dict[int, float]:
    """GPU-hours lost to the interruptions recorded in the span (one query; interruptions
    are a handful a week, not telemetry rows)."""
    interruptions = Interruption.objects.filter(
        occurred_at__gte=span.start, occurred_at__lt=span.end
    ).select_related("workload")
    if workload_ids is not None:
        interruptions = interruptions.filter(workload_id__in=workload_ids)
    lost: dict[int, float] = defaultdict(float)
    for interruption in interruptions:
        lost[interruption.workload_id] += interruption.lost_gpu_hours or 0.0
    return lost


@dataclass(frozen=True)
class EffectiveHours:
    """A training workload's effective GPU-hours over a span whose event log covers
    ``covered_hours`` of its hours: measured there, estimated (busy − lost GPU-hours,
    at least 0) over the other ``estimated_hours``, so the span's cost is divided by
    effective hours of the same hours."""

    measured_gpu_hours: float
    covered_hours: float
    estimated_gpu_hours: float = 0.0
    estimated_hours: float = 0.0

    @property
    def gpu_hours(self) -> float:
        return self.measured_gpu_hours + self.estimated_gpu_hours


def measured_effective_gpu_hours_by_workload(span: Span, workloads) -> dict[int, EffectiveHours]:
    """Effective training GPU-hours measured from the event logs of the span: Σ over
    each job of its effective seconds (apps/training/goodput.py, after goodput_measure)
    × the workload's GPUs ÷ 3600, over the hours the log covers (each job's, from the
    hour of its first event in the span to the end of the hour of its last). The rest of
    the workload's hours in the span are estimated: its busy GPU-hours there (its pool's
    when it runs alone on it, else its labelled samples') − the GPU-hours its
    interruptions there lost. Only the training workloads with a reference step time
    and events stamped in the span are measured; the others keep the estimate. Four
    queries at most (events; the busy hours; the attributed ones; interruptions)."""
    all_workloads = list(workloads)
    measurable = {
        workload.pk: workload
        for workload in all_workloads
        if workload.kind in TRAINING_KINDS and workload.reference_step_seconds is not None
    }
    measured: dict[int, float] = defaultdict(float)
    covered: dict[int, set] = defaultdict(set)
    events = training_services.events_by_job(measurable, start=span.start, end=span.end)
    for workload_id, by_job in events.items():
        workload = measurable[workload_id]
        for job_events in by_job.values():
            seconds = goodput.job_goodput(
                job_events, reference_step_seconds=float(workload.reference_step_seconds)
            ).effective_seconds
            measured[workload_id] += seconds * workload.gpu_count / 3600
            first = floor_hour(min(event.timestamp for event in job_events))
            last = ceil_hour(max(event.timestamp for event in job_events))
            hour = max(first, span.start)
            while hour < min(max(last, first + ONE_HOUR), span.end):
                covered[workload_id].add(hour)
                hour += ONE_HOUR
    if not measured:
        return {}
    busy = _busy_by_hour(span, [measurable[pk] for pk in measured], all_workloads)
    lost: dict[int, float] = defaultdict(float)
    for interruption in Interruption.objects.filter(
        workload_id__in=list(measured), occurred_at__gte=span.start, occurred_at__lt=span.end
    ).select_related("workload"):
        if floor_hour(interruption.occurred_at) not in covered[interruption.workload_id]:
            lost[interruption.workload_id] += interruption.lost_gpu_hours or 0.0
    found = {}
    for workload_id, gpu_hours in measured.items():
        pool = measurable[workload_id].pool
        edges = service_edge_hours(span, {pool.id: (pool.in_service_from, pool.in_service_until)})
        hours = busy[workload_id]
        uncovered = [hour for hour in hours if hour not in covered[workload_id]]
        uncovered_busy = sum(hours[hour] * edges.get((pool.id, hour), 1.0) for hour in uncovered)
        begin, finish = paid_range(pool, span)
        # The covered hours the pool paid for (an hour at its service's edge in part).
        covered_paid = sum(
            max(0.0, (min(hour + ONE_HOUR, finish) - max(hour, begin)) / ONE_HOUR)
            for hour in covered[workload_id]
        )
        found[workload_id] = EffectiveHours(
            measured_gpu_hours=gpu_hours,
            covered_hours=covered_paid,
            estimated_gpu_hours=costmodel.effective_training_gpu_hours(
                uncovered_busy, lost[workload_id]
            )
            if uncovered_busy
            else 0.0,
            estimated_hours=max(0.0, round((finish - begin) / ONE_HOUR - covered_paid, 9)),
        )
    return found


def _busy_by_hour(span: Span, measured_workloads, all_workloads) -> dict[int, dict]:
    """Per workload: hour → its busy GPU-hours in the span, its pool's when it runs alone
    on it, else its labelled samples'. Two queries."""
    on_pool = defaultdict(int)
    for workload in all_workloads:
        on_pool[workload.pool_id] += 1
    alone = {w.pool_id: w.pk for w in measured_workloads if on_pool[w.pool_id] == 1}
    shared = [w.pk for w in measured_workloads if on_pool[w.pool_id] != 1]
    busy: dict[int, dict] = defaultdict(dict)
    if alone:
        for pool_id, hour, busy_gpu_hours in PoolHourlyUsage.objects.filter(
            in_service_q(), pool_id__in=list(alone), hour__gte=span.start, hour__lt=span.end
        ).values_list("pool_id", "hour", "busy_gpu_hours"):
            busy[alone[pool_id]][hour] = busy_gpu_hours
    if shared:
        for workload_id, hour, busy_gpu_hours in WorkloadHourlyUsage.objects.filter(
            workload_id__in=shared, hour__gte=span.start, hour__lt=span.end
        ).values_list("workload_id", "hour", "busy_gpu_hours"):
            busy[workload_id][hour] = busy_gpu_hours
    return busy
