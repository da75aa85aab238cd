#!/usr/bin/env python
"""Peak memory of importing a large telemetry file, against reading the same file.

Writes a generic GPU CSV of about ``--megabytes`` (default 200 MB) from the synthetic fleet
of bench/telemetry.py, then runs, each in a fresh process whose peak resident set size the
kernel reports on exit (``os.wait4``'s ``ru_maxrss``):

- the baseline: Python reading the whole file into one string (what any import that
  holds the text pays at least);
- ``manage.py import_telemetry FILE --format csv`` into an empty database.

It prints both peaks, their ratio, and the aim: peak ≤ 2 × the file's size + 300 MB.

Usage (from the repository root; see bench/README.md):

    .venv/bin/python bench/memory.py                    # ~200 MB, a few minutes
    .venv/bin/python bench/memory.py --megabytes 20     # a quick run

It uses its own database (``--database-url``, default
postgres://postgres@127.0.0.1:5432/gpufleet_bench_memory), creates it when missing,
migrates it and empties the telemetry tables first.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))
sys.path.insert(0, str(REPOSITORY / "bench"))

import telemetry as fleet_bench  # noqa: E402 - bench/telemetry.py, beside this file

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/gpufleet_bench_memory"
MIB = 2**20
MB = 10**6
# dcgm-free generic CSV of bench/telemetry.py: about 75 bytes a line.
GPUS = 1000


def peak_rss_bytes(command: list[str], env: dict) -> tuple[int, float]:
    """(peak RSS in bytes, seconds) of one child process run to its end."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, cwd=REPOSITORY)  # noqa: S603 - our commands
    _pid, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command[:3]} failed with {os.waitstatus_to_exitcode(status)}")
    return usage.ru_maxrss * 1024, seconds  # Linux reports kibibytes


def write_csv(path: Path, megabytes: int) -> int:
    """The fleet's minutes until the file holds ``megabytes``; returns its size in bytes."""
    nodes = fleet_bench.build_fleet(GPUS, 4)
    target = megabytes * MB
    with path.open("w", encoding="utf-8") as csv_file:
        csv_file.write(fleet_bench.CSV_HEADER)
        minute = 0
        while csv_file.tell() < target:
            chunk = fleet_bench.csv_text(nodes, range(minute, minute + 60))
            csv_file.write(chunk[len(fleet_bench.CSV_HEADER) :])
            minute += 60
    return path.stat().st_size


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    args = parser.parse_args(argv)

    fleet_bench.prepare_database(args.database_url)
    fleet_bench.setup_django(args.database_url)
    fleet_bench.reset_telemetry()
    [pool] = fleet_bench.create_pools(1, GPUS)
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "REPORTS_WARM_UP": "false",
    }
    env.pop("CELERY_BROKER_URL", None)
    env.pop("REDIS_URL", None)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fleet.csv"
        size = write_csv(path, args.megabytes)
        fleet_bench.log(f"{size / MB:,.0f} MB CSV written")
        read_peak, read_seconds = peak_rss_bytes(
            [sys.executable, "-c", f"text = open({str(path)!r}).read(); print(len(text))"], env
        )
        import_peak, import_seconds = peak_rss_bytes(
            [
                sys.executable,
                "manage.py",
                "import_telemetry",
                str(path),
                "--format",
                "csv",
                "--columns",
                fleet_bench.CSV_COLUMNS,
                "--pool",
                pool.slug,
            ],
            env,
        )
    aim = 2 * size + 300 * MB
    verdict = "PASS" if import_peak <= aim else "MISS"
    print()
    print(f"file                                   {size / MIB:9,.0f} MiB")
    print(
        f"baseline: read the file into a string  {read_peak / MIB:9,.0f} MiB peak RSS "
        f"({read_peak / size:.2f}× the file, {read_seconds:.1f} s)"
    )
    print(
        f"import_telemetry --format csv          {import_peak / MIB:9,.0f} MiB peak RSS "
        f"({import_peak / size:.2f}× the file, {import_peak / read_peak:.2f}× the baseline, "
        f"{import_seconds:.1f} s)"
    )
    print(f"aim: ≤ 2 × file + 300 MB = {aim / MIB:,.0f} MiB                  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
