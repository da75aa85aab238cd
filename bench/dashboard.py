"""Overview and reports pages on a year of rollups.

Fills a database of its own with 100 pools, 200 workloads and a year of hourly rollups
(876,000 pool-hours, 1,752,000 workload-hours, written by ``generate_series`` on the
server, then the daily rows), and prints p50/p95 of each page and their ratio to a bare
view that renders the base template, measured alternately in the same run.

    .venv/bin/python bench/dashboard.py                      # the spec's size
    .venv/bin/python bench/dashboard.py --days 60 --repeat 15  # a quick run

Aim: every page's p95 ≤ 10× the bare view's p95, as a visitor meets it: after a rollup
once the warm-up it queues has run, and cached (apps/reports/cache.py). The same pages
computed in the request (a visitor during a warm-up) and each warm-up's duration are
printed too. Exits 1 when an aim is missed.
"""

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=100)
    parser.add_argument("--workloads", type=int, default=200)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--repeat", type=int, default=30, help="requests per page")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the rows a previous run with the same sizes wrote (skips the ~4 min fill)",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpufleet_bench_dashboard"
        ),
    )
    return parser.parse_args()


def setup_django(database_url):
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"
    # No worker: every page is computed or warmed in this process, whatever broker the
    # caller's environment names (a broker would send long ranges to a worker).
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost")
    import django
    import psycopg

    base, _, name = database_url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def fill(pools, workloads, days):
    """Pools, workloads and the hourly rows, written on the server."""
    from datetime import timedelta
    from decimal import Decimal

    from django.db import connection
    from django.utils import timezone

    from apps.catalog.models import GpuModel
    from apps.pools.models import Deployment, Pool, Purpose, Workload, WorkloadKind
    from apps.pools.services import save_pool
    from apps.telemetry.rollups.days import rebuild_all_days

    # A previous run's fleet goes first (workloads protect their pools).
    Workload.objects.filter(slug__startswith="bench-w").delete()
    Pool.objects.filter(slug__startswith="bench-").delete()
    gpu = GpuModel.objects.get(slug="h100-sxm")
    created = []
    for index in range(pools):
        pool = Pool(
            name=f"Bench pool {index:03d}",
            slug=f"bench-{index:03d}",
            purpose=list(Purpose)[index % 3],
            deployment=Deployment.CLOUD_ON_DEMAND,
            gpu_model=gpu,
            gpu_count=64,
            gpus_per_node=8,
            on_demand_price_per_gpu_hour_usd=Decimal("2.50"),
            # In service from the start of the history the benchmark writes.
            in_service_from=timezone.now() - timedelta(days=days + 1),
        )
        save_pool(pool)
        created.append(pool)
    for index in range(workloads):
        Workload.objects.create(
            name=f"Bench workload {index:03d}",
            slug=f"bench-w{index:03d}",
            kind=WorkloadKind.ONLINE_INFERENCE if index % 2 else WorkloadKind.PRE_TRAINING,
            pool=created[index % pools],
            gpu_count=8,
        )
    end = timezone.now().replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(days=days)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO telemetry_poolhourlyusage (pool_id, hour, reporting_gpus,
                capacity_gpu_hours, busy_gpu_hours, avg_utilization_pct, max_utilization_pct,
                max_memory_used_mib, energy_kwh)
            SELECT pool.id, hour, 64, 64, 64 * u / 100, u, LEAST(100, u + 5), 50000, NULL
            FROM pools_pool AS pool,
                 generate_series(%s::timestamptz, %s::timestamptz - interval '1 hour',
                                 interval '1 hour') AS hour,
                 LATERAL (SELECT (30 + 40 * sin(extract(hour FROM hour) / 24 * 2 * pi())
                                  + pool.id %% 10)::float AS u) AS util
            WHERE pool.slug LIKE 'bench-%%'
            """,
            [start, end],
        )
        cursor.execute(
            """
            INSERT INTO telemetry_workloadhourlyrequests (workload_id, hour, requests,
                input_tokens, output_tokens, errors, p95_latency_ms)
            SELECT workload.id, hour, 1000, 400000, 100000, 2, 800
            FROM pools_workload AS workload,
                 generate_series(%s::timestamptz, %s::timestamptz - interval '1 hour',
                                 interval '1 hour') AS hour
            WHERE workload.slug LIKE 'bench-w%%'
            """,
            [start, end],
        )
    rebuild_all_days()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def filled(pools, workloads, days):
    """Whether the database holds exactly the fleet and hours ``fill`` would write."""
    from apps.pools.models import Pool, Workload
    from apps.telemetry.models import PoolHourlyUsage

    return (
        Pool.objects.filter(slug__startswith="bench-").count() == pools
        and Workload.objects.filter(slug__startswith="bench-w").count() == workloads
        and PoolHourlyUsage.objects.filter(pool__slug__startswith="bench-").count()
        == pools * days * 24
    )


def measure(repeat):
    from django.contrib.auth import get_user_model
    from django.template.response import TemplateResponse
    from django.test import RequestFactory

    from apps.dashboard.views import overview
    from apps.reports.cache import bump_reports_version
    from apps.reports.views import report
    from apps.reports.warming import warm_view

    # A superuser reads the whole fleet, the scope the warm-ups compute ("all"): a reader
    # of no team would see only shared pools, under another cache key than the warm-up's.
    user, _ = get_user_model().objects.update_or_create(
        username="bench-reader", defaults={"is_superuser": True, "is_staff": True}
    )
    factory = RequestFactory()

    def bare():
        request = factory.get("/")
        request.user = user
        request.htmx = False
        response = TemplateResponse(request, "base.html", {})
        response.render()

    def page(view, query=""):
        def run():
            request = factory.get("/" + query)
            request.user = user
            request.htmx = False
            request.resolver_match = None
            response = view(request)
            response.render()
            assert response.status_code == 200

        return run

    from datetime import UTC, datetime, timedelta

    year_ago = (datetime.now(UTC) - timedelta(days=364)).date().isoformat()
    # (view, query string, what the warm-up records for it: apps/reports/cache.py)
    pages = {
        "overview": (overview, "", ("overview", "")),
        "reports, 30 days by pool": (report, "group_by=pool", None),
        "reports, 1 year by pool": (report, f"start={year_ago}&group_by=pool", None),
        "reports, 1 year by workload": (report, f"start={year_ago}&group_by=workload", None),
    }
    # Each page three ways:
    # - "after a rollup, warmed": the reports version is bumped (as every rollup does) and
    #   the warm-up the rollup queues recomputes the page (untimed: the worker's work, timed
    #   apart below); then the visit is timed. This is what a visitor meets.
    # - "cached": nothing changed since the previous visit.
    # - "computed in the request": bumped, no warm-up: a visitor who arrives while the
    #   warm-up runs, or the first visitor of a range nobody viewed lately (ranges over
    #   31 days go to a worker with a progress bar, apps/reports/views.py).
    cases = {"bare view (base template)": (bare, None)}
    warm_up_seconds = {}
    for name, (view, query, remembered) in pages.items():
        remembered = remembered or ("report", query)
        run = page(view, f"?{query}" if query else "")
        cases[f"{name}, after a rollup, warmed"] = (run, ("warm", remembered))
        cases[f"{name}, cached"] = (run, None)
        cases[f"{name}, computed in the request"] = (run, ("bump", remembered))
        warm_up_seconds[name] = []
    timings = {name: [] for name in cases}
    for run, _ in cases.values():  # warm-up of the interpreter and PostgreSQL's buffers
        run()
    for _ in range(repeat):
        for name, (run, before) in cases.items():
            if before is not None:
                bump_reports_version()
            if before is not None and before[0] == "warm":
                started = time.perf_counter()
                warm_view(*before[1])
                warm_up_seconds[name.split(", after")[0]].append(time.perf_counter() - started)
            # The garbage of the previous case (a page computed in this process) is
            # collected first: in production warm-ups run in the worker, not in the web
            # process, and a full collection would land on whichever request came next.
            gc.collect()
            started = time.perf_counter()
            run()
            timings[name].append(time.perf_counter() - started)
    return timings, warm_up_seconds


def main():
    arguments = parse_arguments()
    setup_django(arguments.database_url)
    started = time.perf_counter()
    if arguments.reuse and filled(arguments.pools, arguments.workloads, arguments.days):
        print("reusing the previous run's rows", file=sys.stderr)
    else:
        print("filling …", file=sys.stderr)
        fill(arguments.pools, arguments.workloads, arguments.days)
    print(f"filled in {time.perf_counter() - started:.0f} s; measuring …", file=sys.stderr)
    timings, warm_up_seconds = measure(arguments.repeat)
    bare_p95 = statistics.quantiles(timings["bare view (base template)"], n=20)[18]
    print(
        f"gpufleet dashboard benchmark: {arguments.pools} pools, {arguments.workloads} "
        f"workloads, {arguments.days} days of hourly rollups; {arguments.repeat} requests per "
        f"page, alternating"
    )
    print(f"{'page':58} {'p50 ms':>9} {'p95 ms':>9} {'p95 ÷ bare':>11}  aim ≤ 10×")
    missed = False
    for name, values in timings.items():
        p50 = statistics.median(values) * 1000
        p95 = statistics.quantiles(values, n=20)[18] * 1000
        ratio = p95 / (bare_p95 * 1000)
        if name.startswith("bare"):
            verdict = ""
        elif name.endswith("computed in the request"):
            verdict = "(no aim: the warm-up's work)"
        else:
            verdict = "PASS" if ratio <= 10 else "MISS"
        missed |= verdict == "MISS"
        print(f"{name:58} {p50:9.1f} {p95:9.1f} {ratio:10.1f}×  {verdict}")
    print()
    print("warm-up per page after a rollup (worker time; a drain every 60 s with pull sources):")
    for name, values in warm_up_seconds.items():
        p50 = statistics.median(values)
        print(f"  {name:56} p50 {p50 * 1000:8.1f} ms = {100 * p50 / 60:5.2f} % of 60 s")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
