"""Four weeks of hourly usage and requests for the demo fleet, shaped by a real daily
curve (the Alibaba GenAI serving trace, demo_data/SOURCES.md), so the Overview and the
reports have something true-looking to draw. Deterministic: running it again rewrites the
same rows (keyed upserts) and records no interruption twice.
"""

import csv
import random
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from django.db import transaction
from django.utils import timezone

from apps.pools.models import TRAINING_KINDS, Interruption, InterruptionCause, Pool, Purpose
from apps.reports.rollups import rebuild_days
from apps.telemetry.models import PoolHourlyUsage, WorkloadHourlyRequests

DEMAND_CSV = Path(__file__).parent / "demo_data" / "alibaba_genai_weekday_hour_requests.csv"
DEMO_DAYS = 28
# Pools with no telemetry for a while, so "unmeasured" hours show up in the reports.
GAP_HOURS = {"edge-t4": (60, 108)}  # hours ago: [from, to)
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


@transaction.atomic
def seed_usage_demo(now=None) -> tuple[int, int]:
    """Write the demo fleet's hourly rows for the last 28 days; returns (pool-hours,
    workload-hours) written."""
    now = now or timezone.now()
    end = now.replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(days=DEMO_DAYS)
    relative = load_relative_demand()
    pools = list(Pool.objects.select_related("gpu_model").prefetch_related("workloads"))
    interruptions = _seed_interruptions(pools, start, end)
    failure_hours = defaultdict(list)
    for interruption in interruptions:
        failure_hours[interruption.workload.pool_id].append(interruption.occurred_at)

    usage_rows, request_rows = [], []
    hours = int((end - start) / timedelta(hours=1))
    for pool in pools:
        zone = ZoneInfo(pool.timezone or "UTC")
        gap = GAP_HOURS.get(pool.slug)
        tdp_kw = pool.gpu_model.tdp_watts / 1000
        memory_mib = float(pool.gpu_model.memory_gb) * 1e9 / 2**20
        for step in range(hours):
            hour = start + timedelta(hours=step)
            hours_ago = hours - step
            if gap and gap[0] <= hours_ago < gap[1]:
                continue
            local = hour.astimezone(zone)
            rng = random.Random(f"{pool.slug}:{step}")  # noqa: S311 (demo data, seeded)
            wobble = rng.uniform(-1, 1)
            since = [
                (hour - at).total_seconds() / 3600
                for at in failure_hours[pool.id]
                if timedelta(0) <= hour - at < timedelta(hours=3)
            ]
            utilization = _utilization_pct(
                pool, relative[(local.isoweekday(), local.hour)], wobble, min(since, default=None)
            )
            reporting = pool.gpu_count - (1 if rng.random() < 0.03 else 0)
            busy = reporting * utilization / 100
            usage_rows.append(
                PoolHourlyUsage(
                    pool=pool,
                    hour=hour,
                    reporting_gpus=reporting,
                    capacity_gpu_hours=pool.gpu_count,
                    busy_gpu_hours=busy,
                    avg_utilization_pct=utilization,
                    max_utilization_pct=min(100.0, utilization + 6 + 4 * abs(wobble)),
                    max_memory_used_mib=memory_mib * (0.55 + 0.3 * abs(wobble)),
                    # Idle GPUs still draw about a third of their board power.
                    energy_kwh=reporting * tdp_kw * (0.3 + 0.7 * utilization / 100),
                )
            )
            for workload in pool.workloads.all():
                scale = REQUEST_SCALE.get(workload.slug)
                if not scale:
                    continue
                per_hour, input_tokens, output_tokens = scale
                shape = relative[(local.isoweekday(), local.hour)]
                if workload.slug == "nightly-batch-summaries":
                    shape = 2.5 if local.hour < 6 else 0.05
                requests = max(0, round(per_hour * shape * (1 + 0.1 * wobble)))
                request_rows.append(
                    WorkloadHourlyRequests(
                        workload=workload,
                        hour=hour,
                        requests=requests,
                        input_tokens=requests * input_tokens,
                        output_tokens=requests * output_tokens,
                        errors=round(requests * (0.002 + 0.004 * abs(wobble))),
                        p95_latency_ms=400 + 900 * min(shape, 3) / 3 + 50 * wobble,
                    )
                )
    PoolHourlyUsage.objects.bulk_create(
        usage_rows,
        batch_size=2000,
        update_conflicts=True,
        unique_fields=["pool", "hour"],
        update_fields=[
            "reporting_gpus",
            "capacity_gpu_hours",
            "busy_gpu_hours",
            "avg_utilization_pct",
            "max_utilization_pct",
            "max_memory_used_mib",
            "energy_kwh",
        ],
    )
    WorkloadHourlyRequests.objects.bulk_create(
        request_rows,
        batch_size=2000,
        update_conflicts=True,
        unique_fields=["workload", "hour"],
        update_fields=["requests", "input_tokens", "output_tokens", "errors", "p95_latency_ms"],
    )
    rebuild_days(start, end)
    return len(usage_rows), len(request_rows)


def _seed_interruptions(pools, start, end) -> list[Interruption]:
    """A few interruptions per training job over the window, recorded once."""
    causes = list(InterruptionCause)
    recorded = []
    for pool in pools:
        for workload in pool.workloads.all():
            if workload.kind not in TRAINING_KINDS:
                continue
            existing = list(workload.interruptions.all())
            if existing:
                recorded.extend(existing)
                continue
            rng = random.Random(f"interruptions:{workload.slug}")  # noqa: S311 (demo data)
            every_days = 3 if workload.gpu_count >= 64 else 9
            at = start + timedelta(days=rng.uniform(0.5, every_days))
            while at < end - timedelta(hours=6):
                interruption = Interruption.objects.create(
                    workload=workload,
                    occurred_at=at.replace(second=0, microsecond=0),
                    cause=causes[rng.randrange(len(causes))],
                    restart_minutes=rng.choice([12, 18, 25, 40, 75]),
                    notes="Demo data.",
                )
                interruption.workload = workload
                recorded.append(interruption)
                at += timedelta(days=rng.uniform(every_days * 0.6, every_days * 1.4))
    return recorded
