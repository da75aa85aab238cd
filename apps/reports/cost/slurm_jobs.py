"""The GPU-hours Slurm jobs held in each pool-hour: measured attribution for the split of
a shared pool's cost (apps/reports/cost/split.py).

A job holds, in each hour, its GPUs × the seconds of the hour it ran ÷ 3600. Its GPUs
are in the pools its nodes join through the hostname rules (``apps.slurm.nodes``), spread
evenly over its nodes. A job counts for its mapped workload when that workload runs on
the pool; otherwise (no rule maps it, or its workload is another pool's) its hours are
the pool's **unattributed** jobs' hours.

A pool-hour never gives away more than the pool's GPU-hours: when the jobs claim more
(overlapping records, a pool smaller than its nodes), every job's hours in that hour are
scaled down by pool GPUs ÷ claimed GPU-hours, and the pool-hour is flagged."""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.db.models import Q

from apps.pools.hours import floor_hour
from apps.slurm.models import SlurmJob
from apps.slurm.nodes import hostname_rules_by_cluster, job_pool_gpus

ONE_HOUR = timedelta(hours=1)
SECONDS_PER_HOUR = Decimal(3600)


@dataclass
class JobHours:
    """The jobs' GPU-hours in one pool over one segment of the report's span."""

    by_workload: dict = field(default_factory=lambda: defaultdict(Decimal))
    unattributed: Decimal = Decimal(0)
    scaled_down_hours: int = 0  # pool-hours whose jobs claimed more than the pool has

    @property
    def total(self) -> Decimal:
        return sum(self.by_workload.values(), Decimal(0)) + self.unattributed


def job_stop(job):
    """When the job stopped holding its GPUs: its end, or for a running one its start +
    the seconds counted to its last import."""
    if job.end is not None:
        return job.end
    return job.start + timedelta(seconds=float(job.elapsed_seconds))


def hourly_job_gpu_hours(span, pools) -> dict:
    """(pool id, hour) → {workload id or None: GPU-hours}, before any scale-down."""
    pools_by_id = {pool.id: pool for pool in pools}
    clusters = {pool.cluster_id for pool in pools}
    if not pools_by_id:
        return {}
    rules = None  # read at the first job: a fleet without Slurm jobs pays no query
    jobs = (
        SlurmJob.objects.filter(
            cluster_id__in=clusters, gpus__gt=0, start__isnull=False, start__lt=span.end
        )
        .filter(Q(end__isnull=True) | Q(end__gt=span.start))
        .select_related("workload")
        .only("cluster_id", "start", "end", "elapsed_seconds", "gpus", "node_names", "workload")
    )
    claims: dict = defaultdict(lambda: defaultdict(Decimal))
    for job in jobs.iterator(chunk_size=2000):
        begin, stop = max(job.start, span.start), min(job_stop(job), span.end)
        if stop <= begin:
            continue
        if rules is None:
            rules = hostname_rules_by_cluster()
        gpus_of_pool, _unplaced = job_pool_gpus(job, rules)
        placed = {pool_id: gpus for pool_id, gpus in gpus_of_pool.items() if pool_id in pools_by_id}
        if not placed:
            continue
        hour = floor_hour(begin)
        while hour < stop:
            seconds = Decimal(int((min(stop, hour + ONE_HOUR) - max(begin, hour)).total_seconds()))
            for pool_id, gpus in placed.items():
                workload = job.workload
                key = workload.id if workload and workload.pool_id == pool_id else None
                claims[(pool_id, hour)][key] += gpus * seconds / SECONDS_PER_HOUR
            hour += ONE_HOUR
    return claims


def job_hours_by_segment(span, pools, segments_of_pool) -> dict:
    """(pool id, segment start) → ``JobHours``, each pool-hour scaled down to the pool's
    GPUs first."""
    pools_by_id = {pool.id: pool for pool in pools}
    result: dict = {}
    for (pool_id, hour), claimed in hourly_job_gpu_hours(span, pools).items():
        capacity = Decimal(pools_by_id[pool_id].gpu_count)
        total = sum(claimed.values(), Decimal(0))
        scale = capacity / total if total > capacity else Decimal(1)
        begin = next(
            (start for start, finish in segments_of_pool[pool_id] if start <= hour < finish),
            segments_of_pool[pool_id][0][0],
        )
        hours = result.setdefault((pool_id, begin), JobHours())
        if scale < 1:
            hours.scaled_down_hours += 1
        for key, gpu_hours in claimed.items():
            if key is None:
                hours.unattributed += gpu_hours * scale
            else:
                hours.by_workload[key] += gpu_hours * scale
    return result
