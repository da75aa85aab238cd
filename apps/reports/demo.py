"""Hourly usage and requests for the demo fleet, shaped by a real daily curve (the Alibaba
GenAI serving trace, demo_data/SOURCES.md), so the Overview and the reports have something
true-looking to draw.

The history starts four weeks before the first seed and each seed extends it up to the
current hour, so a demo left running for days shows no growing "unmeasured" stretch.
Deterministic: an hour's figures depend on the pool's demo key and the hour alone, a seed
writes only the hours after each pool's and workload's last row (a second seed within the
hour writes nothing), and the interruptions follow one sequence from the history's start,
each recorded once.

Only the demo's own pools and workloads are written to: the caller (``seed_demo``) passes
them by their demo keys, and every read and rebuild here is limited to them, so a user's
pool beside the demo keeps its rows, its daily sums and its history's start.
"""

import csv
import random
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from django.db import transaction
from django.db.models import Max, Min
from django.utils import timezone

from apps.pools.hours import floor_hour
from apps.pools.models import TRAINING_KINDS, Interruption, InterruptionCause, Pool, Purpose
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests
from apps.telemetry.rollups.days import rollup_pool_days, rollup_workload_days

DEMAND_CSV = Path(__file__).parent / "demo_data" / "alibaba_genai_weekday_hour_requests.csv"
DEMO_DAYS = 28  # of history before the first seed
# Pools with no telemetry for a while, so "unmeasured" hours show up in the reports.
GAP_HOURS = {"edge-t4": (60, 108)}  # [from, to) hours before the end of the first seed
# Requests per hour at the curve's mean, and the tokens of a typical request.
REQUEST_SCALE = {
    "chat-api-asia": (5200, 900, 260),
    "chat-api-cn": (7400, 1100, 300),
    "embeddings-eu": (21000, 350, 0),
    "search-rerank-online": (9000, 600, 8),
    "store-assistant-int8": (1800, 500, 180),
    "nightly-batch-summaries": (2400, 3000, 400),
}


def load_relative_demand() -> dict[tuple[int, int], float]:
    """(ISO weekday, hour) → mean requests in that hour ÷ the mean over all hours."""
    per_slot = {}
    with DEMAND_CSV.open() as handle:
        for row in csv.DictReader(handle):
            days = int(row["days_observed"]) or 1
            per_slot[(int(row["iso_weekday"]), int(row["hour_of_day"]))] = (
                int(row["requests"]) / days
            )
    mean = sum(per_slot.values()) / len(per_slot)
    return {slot: value / mean for slot, value in per_slot.items()}


def _utilization_pct(pool: Pool, relative: float, wobble: float, hours_since_failure) -> float:
    if pool.purpose == Purpose.TRAINING:
        base = 88.0 + 6 * wobble
        if hours_since_failure is not None and hours_since_failure < 2:
            base = 18.0 + 10 * hours_since_failure  # the job restarts from its checkpoint
    elif pool.purpose == Purpose.INFERENCE:
        base = 12.0 + 26.0 * min(relative, 2.8) + 5 * wobble
    else:  # mixed: fine-tuning by day, batch by night, the online service on top
        base = 45.0 + 14.0 * min(relative, 2.5) + 6 * wobble
    return max(0.0, min(100.0, base))


def demo_history_start(pools, now=None) -> datetime:
    """The first hour of the demo's usage: where the first seed started it on the demo's
    ``pools``, else DEMO_DAYS before the current hour. Demo pools are in service from then
    on."""
    first = PoolHourlyUsage.objects.filter(pool__in=list(pools)).aggregate(first=Min("hour"))[
        "first"
    ]
    if first is not None:
        return first
    return _demo_end(now or timezone.now()) - timedelta(days=DEMO_DAYS)


def _demo_end(now: datetime) -> datetime:
    # The current hour is written too: a newcomer's Overview has no unmeasured hour.
    return floor_hour(now) + timedelta(hours=1)


def _next_hours(model, owner_field: str, owners) -> dict[int, datetime]:
    """Owner id → the hour after its last stored row, for ``owners`` only."""
    return {
        owner_id: last + timedelta(hours=1)
        for owner_id, last in model.objects.filter(**{f"{owner_field}__in": list(owners)})
        .values_list(owner_field)
        .annotate(last=Max("hour"))
        .values_list(owner_field, "last")
    }


@transaction.atomic
def seed_usage_demo(
    *, pools: dict, workloads: dict, now=None, measured=frozenset()
) -> tuple[int, int]:
    """Extend the demo's hourly rows up to ``now``'s hour included (default: now), from
    each pool's and workload's last row on, or from the history's start (no earlier than
    the pool's service start) when it has none; the daily sums of those hours are rebuilt,
    theirs alone. ``pools`` and ``workloads`` map the demo's keys (its spec's slugs) to
    the demo's objects. The pools of ``measured`` (keys) get no hours and their workloads
    no drawn interruptions: their GPUs' telemetry and their Slurm jobs give them
    (apps/slurm/demo.py); their workloads' requests are written. Returns (pool-hours,
    workload-hours) written."""
    now = now or timezone.now()
    end = _demo_end(now)
    start = demo_history_start(pools.values(), now)
    relative = load_relative_demand()
    pool_ids = [pool.id for pool in pools.values()]
    workload_ids = [workload.id for workload in workloads.values()]
    workloads_of = defaultdict(list)
    for key, workload in workloads.items():
        workloads_of[workload.pool_id].append((key, workload))
    drawn = {key: pool for key, pool in pools.items() if key not in measured}
    interruptions = _seed_interruptions(drawn, workloads_of, start, end)
    failure_hours = defaultdict(list)
    for pool_id, occurred_at in interruptions:
        failure_hours[pool_id].append(occurred_at)
    next_pool_hour = _next_hours(PoolHourlyUsage, "pool_id", pool_ids)
    next_workload_hour = _next_hours(WorkloadHourlyRequests, "workload_id", workload_ids)
    # Gaps sit where the first seed put them, so later seeds neither fill nor move them.
    first_end = start + timedelta(days=DEMO_DAYS)

    usage_rows, request_rows = [], []
    first_written = end
    for key, pool in pools.items():
        zone = ZoneInfo(pool.timezone or "UTC")
        gap_from, gap_until = (
            (
                first_end - timedelta(hours=GAP_HOURS[key][1]),
                first_end - timedelta(hours=GAP_HOURS[key][0]),
            )
            if key in GAP_HOURS
            else (end, end)
        )
        tdp_kw = pool.gpu_model.tdp_watts / 1000
        memory_mib = float(pool.gpu_model.memory_gb) * 1e9 / 2**20
        pool_start = max(start, floor_hour(pool.in_service_from))
        pool_from = next_pool_hour.get(pool.id, pool_start)
        serving = [
            (workload_key, workload, next_workload_hour.get(workload.id, pool_start))
            for workload_key, workload in workloads_of[pool.id]
            if workload_key in REQUEST_SCALE
        ]
        hour = min([pool_from, *(workload_from for *_, workload_from in serving)])
        first_written = min(first_written, hour)
        while hour < end:
            this_hour, hour = hour, hour + timedelta(hours=1)
            if gap_from < this_hour <= gap_until:
                continue
            hour_rows = _demo_hour(
                key,
                pool,
                this_hour,
                zone=zone,
                relative=relative,
                failures=failure_hours[pool.id],
                tdp_kw=tdp_kw,
                memory_mib=memory_mib,
                workloads=[
                    (workload_key, workload)
                    for workload_key, workload, workload_from in serving
                    if this_hour >= workload_from
                ],
            )
            if this_hour >= pool_from and key not in measured:
                usage_rows.append(hour_rows[0])
            request_rows.extend(hour_rows[1])
    PoolHourlyUsage.objects.bulk_create(usage_rows, batch_size=2000)
    WorkloadHourlyRequests.objects.bulk_create(request_rows, batch_size=2000)
    if usage_rows:
        rollup_pool_days(pool_ids, first_written, end)
    if request_rows:
        rollup_workload_days(workload_ids, first_written, end)
    return len(usage_rows), len(request_rows)


def _demo_hour(key, pool, hour, *, zone, relative, failures, tdp_kw, memory_mib, workloads):
    """(PoolHourlyUsage, [WorkloadHourlyRequests…]) of one pool-hour: the curve's value at
    the hour's local weekday and time, with a wobble seeded by the pool's demo key and the
    hour (the key, not the slug: a pool named apart draws the same curve)."""
    local = hour.astimezone(zone)
    rng = random.Random(f"{key}:{hour:%Y-%m-%dT%H}")  # noqa: S311 (demo data, seeded)
    wobble = rng.uniform(-1, 1)
    since = [
        (hour - at).total_seconds() / 3600
        for at in failures
        if timedelta(0) <= hour - at < timedelta(hours=3)
    ]
    shape = relative[(local.isoweekday(), local.hour)]
    utilization = _utilization_pct(pool, shape, wobble, min(since, default=None))
    reporting = pool.gpu_count - (1 if rng.random() < 0.03 else 0)
    usage = PoolHourlyUsage(
        pool=pool,
        hour=hour,
        reporting_gpus=reporting,
        capacity_gpu_hours=pool.gpu_count,
        busy_gpu_hours=reporting * utilization / 100,
        avg_utilization_pct=utilization,
        max_utilization_pct=min(100.0, utilization + 6 + 4 * abs(wobble)),
        max_memory_used_mib=memory_mib * (0.55 + 0.3 * abs(wobble)),
        # Idle GPUs still draw about a third of their board power.
        energy_kwh=reporting * tdp_kw * (0.3 + 0.7 * utilization / 100),
    )
    requests_rows = []
    for workload_key, workload in workloads:
        per_hour, input_tokens, output_tokens = REQUEST_SCALE[workload_key]
        workload_shape = shape
        if workload_key == "nightly-batch-summaries":
            workload_shape = 2.5 if local.hour < 6 else 0.05
        requests = max(0, round(per_hour * workload_shape * (1 + 0.1 * wobble)))
        requests_rows.append(
            WorkloadHourlyRequests(
                workload=workload,
                hour=hour,
                requests=requests,
                input_tokens=requests * input_tokens,
                output_tokens=requests * output_tokens,
                errors=round(requests * (0.002 + 0.004 * abs(wobble))),
                p95_latency_ms=400 + 900 * min(workload_shape, 3) / 3 + 50 * wobble,
            )
        )
    return usage, requests_rows


def _seed_interruptions(pools, workloads_of, start, end) -> list[tuple[int, datetime]]:
    """A few interruptions per demo training job from the history's start to ``end``: one
    sequence per workload drawn from its own seed (its demo key), so a later seed
    continues it. Only those after the workload's latest recorded interruption are added:
    none is recorded twice, and one deleted by hand stays deleted. Returns (pool id,
    when) of all the demo workloads' interruptions."""
    causes = list(InterruptionCause)
    recorded = []
    for pool in pools.values():
        for key, workload in workloads_of[pool.id]:
            if workload.kind not in TRAINING_KINDS:
                continue
            existing = list(workload.interruptions.values_list("occurred_at", flat=True))
            recorded.extend((pool.id, occurred_at) for occurred_at in existing)
            latest = max(existing, default=None)
            rng = random.Random(f"interruptions:{key}")  # noqa: S311 (demo data)
            every_days = 3 if workload.gpu_count >= 64 else 9
            at = start + timedelta(days=rng.uniform(0.5, every_days))
            while at < end - timedelta(hours=6):
                # Drawn whether or not it is recorded, so the sequence stays the same.
                occurred_at = at.replace(second=0, microsecond=0)
                cause = causes[rng.randrange(len(causes))]
                restart_minutes = rng.choice([12, 18, 25, 40, 75])
                if latest is None or occurred_at > latest:
                    Interruption.objects.create(
                        workload=workload,
                        occurred_at=occurred_at,
                        cause=cause,
                        restart_minutes=restart_minutes,
                        notes="Demo data.",
                    )
                    recorded.append((pool.id, occurred_at))
                at += timedelta(days=rng.uniform(every_days * 0.6, every_days * 1.4))
    return recorded
