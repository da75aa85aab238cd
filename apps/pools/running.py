"""When each workload was running: [from, until) intervals read from its status history.

A workload is running while its status is ``running`` and it is not archived; planned,
paused, finished and archived time is not running. The history is django-simple-history's
table (``Workload.history``): each record is the workload as saved at ``history_date``,
in force until the next record.

- Before its first record a workload did not exist: not running. A workload created before
  the history table existed, with status running, is running from its first record on
  (the record ``populate_history`` or its first later save wrote), not before: what the
  history does not show is not charged.
- A workload without any record (rows written around the model, e.g. by a bulk insert)
  holds its current state throughout: running over the whole span if it is running and
  not archived now, never otherwise.
- ``archived_at`` ends the running time even where the archive left no record.
"""

from collections import defaultdict
from datetime import datetime

from apps.pools.models import Workload, WorkloadStatus

Interval = tuple[datetime, datetime]


def _is_running(status: str, archived_at) -> bool:
    return status == WorkloadStatus.RUNNING and archived_at is None


def running_intervals(workloads, start: datetime, end: datetime) -> dict[int, list[Interval]]:
    """Each workload's running intervals clipped to [start, end), oldest first, keyed by
    id (a workload never running in it: an empty list). One query."""
    workloads = list(workloads)
    ids = [workload.id for workload in workloads]
    records = defaultdict(list)
    rows = (
        Workload.history.model.objects.filter(id__in=ids, history_date__lt=end)
        .order_by("id", "history_date", "history_id")
        .values_list("id", "history_date", "status", "archived_at")
    )
    for workload_id, moment, status, archived_at in rows:
        records[workload_id].append((moment, _is_running(status, archived_at)))
    intervals: dict[int, list[Interval]] = {}
    for workload in workloads:
        steps = records.get(workload.id)
        if not steps:
            running = _is_running(workload.status, workload.archived_at)
            steps = [(start, running)]
        found: list[Interval] = []
        for index, (moment, running) in enumerate(steps):
            until = steps[index + 1][0] if index + 1 < len(steps) else end
            if workload.archived_at is not None:
                until = min(until, workload.archived_at)
            begin, finish = max(moment, start), min(until, end)
            if not running or begin >= finish:
                continue
            if found and found[-1][1] == begin:
                found[-1] = (found[-1][0], finish)
            else:
                found.append((begin, finish))
        intervals[workload.id] = found
    return intervals


def running_seconds(intervals: list[Interval], start: datetime, end: datetime) -> float:
    """Seconds of [start, end) inside ``intervals``."""
    total = 0.0
    for begin, finish in intervals:
        overlap = (min(finish, end) - max(begin, start)).total_seconds()
        if overlap > 0:
            total += overlap
    return total
