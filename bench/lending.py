"""Lendable off-peak capacity of the fleet (``/reports/lendable/``) on 28 days of rollups.

Fills a database of its own with pools and 28 days of hourly rollups (the dashboard
benchmark's fill: a third of the pools serve inference), then times
``apps.reports.lending.capacity.fleet_lendable`` — the 95th percentile of busy GPUs per pool ×
weekday × local hour, in SQL — against a baseline measured alternately in the same run:
one plain ``GROUP BY pool`` sum over the very rows the percentile reads. It also counts
the queries at the whole fleet and at a tenth of it: they must not grow with the pools.

    .venv/bin/python bench/lending.py                 # 1,000 pools (334 inference), 28 days
    .venv/bin/python bench/lending.py --pools 150     # a quick run

Aims: the lending read ≤ 10× the plain aggregate's median, and the same number of
queries at both sizes. Exits 1 when an aim is missed.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))

DAYS = 28  # apps/reports/lending/capacity.py WINDOW_DAYS
AIM_RATIO = 10.0


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds of each")
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpufleet_bench_lending"
        ),
    )
    return parser.parse_args()


def main():
    arguments = parse_arguments()
    import dashboard

    dashboard.setup_django(arguments.database_url)
    from django.db import connection
    from django.db.models import Sum
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from apps.pools.models import Pool, Purpose
    from apps.reports.lending import capacity as lending
    from apps.telemetry.models import PoolDailyUsage, PoolHourlyUsage

    # The lending window ends at the current hour: a fill from an earlier hour would
    # leave the window's last hours empty, so the rows are written afresh each run.
    print(f"filling {arguments.pools} pools × {DAYS} days of hours …", file=sys.stderr)
    # A previous run's rollups protect its pools from the fill's delete.
    for model in (PoolHourlyUsage, PoolDailyUsage):
        model.objects.filter(pool__slug__startswith="bench-")._raw_delete(connection.alias)
    dashboard.fill(arguments.pools, 0, DAYS + 1)
    now = timezone.now()
    span = lending.lending_span(now)
    inference = Pool.objects.filter(slug__startswith="bench-", purpose=Purpose.INFERENCE)
    pool_count = inference.count()
    rows = PoolHourlyUsage.objects.filter(
        pool__in=inference, hour__gte=span.start, hour__lt=span.end
    )
    row_count = rows.count()

    def baseline():
        return list(rows.values("pool_id").annotate(busy=Sum("busy_gpu_hours")))

    def lendable():
        return lending.fleet_lendable(now)

    def timed(function):
        started = time.perf_counter()
        result = function()
        return time.perf_counter() - started, result

    timed(baseline), timed(lendable)  # warm the caches of the server and the code
    baseline_seconds, lendable_seconds = [], []
    for _round in range(arguments.repeat):
        seconds, _ = timed(baseline)
        baseline_seconds.append(seconds)
        seconds, fleet = timed(lendable)
        lendable_seconds.append(seconds)
    ratio = statistics.median(lendable_seconds) / statistics.median(baseline_seconds)

    with CaptureQueriesContext(connection) as whole:
        lending.lendable_capacity(inference, now)
    tenth = inference.order_by("pk")[: max(1, pool_count // 10)]
    with CaptureQueriesContext(connection) as part:
        lending.lendable_capacity(list(tenth), now)

    print(
        f"{pool_count} inference pools, {row_count:,} pool-hours in the "
        f"{DAYS}-day window; fleet lendable {fleet.lendable_gpu_hours_per_week:,} "
        "GPU-hours a week"
    )
    print(f"{'':34} {'median':>9} {'best':>9}")
    for name, seconds in (
        ("GROUP BY pool sum (baseline)", baseline_seconds),
        ("fleet_lendable", lendable_seconds),
    ):
        print(f"{name:34} {statistics.median(seconds):8.3f}s {min(seconds):8.3f}s")
    print(f"ratio fleet_lendable ÷ baseline (medians): {ratio:.2f}× (aim ≤ {AIM_RATIO:g}×)")
    print(
        f"queries: {len(whole.captured_queries)} for {pool_count} pools, "
        f"{len(part.captured_queries)} for {len(tenth)} (aim: equal)"
    )
    missed = ratio > AIM_RATIO or len(whole.captured_queries) != len(part.captured_queries)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
