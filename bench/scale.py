#!/usr/bin/env python
"""The scale benchmark: every line of the "100,000 GPUs" table, one section per bench, run
one after the other so that no two compete for the machine's cores.

Each section is a bench of its own, which measures its baseline in the same run and prints
its table and ratios (docs/development/benchmarks.md has the figures and how to read them):

- ``tsdb``: 100,000 GPU series × 3 h in a real VictoriaMetrics; pulling and rolling up one
  hour against the TSDB answering the same queries (bench/scale_tsdb.py);
- ``scrape``: 10,000 GPUs scraped every 15 s, one scrape per 8-GPU node, with the drains,
  batched against one scrape per task (bench/scale_scrape.py);
- ``retention``: one day at 10,000 GPUs × 15 s (57.6 M rows), dropping its partition
  against the DELETE of the same rows (bench/scale_retention.py);
- ``pages``: the Overview and the 1-year report at 1,000 pools against a bare view
  (bench/dashboard.py);
- ``web``: 100 users on the Overview and a report through gunicorn as compose runs it
  (bench/scale_web.py; needs ``wrk``);
- ``csv``: the CSV import against the keyed insert baseline (bench/telemetry.py, line 3).

Usage: ``.venv/bin/python bench/scale.py [--only tsdb,scrape] [--quick]``. ``--quick``
runs each at a tenth of its size or less, to see that it works (its ratios are not the
table's). The exit status is 1 when a section failed or missed an aim.
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent

# section → (script, arguments at full size, arguments of a quick run)
SECTIONS = {
    "tsdb": ("scale_tsdb.py", [], ["--gpus", "10000"]),
    "scrape": ("scale_scrape.py", [], ["--gpus", "1000"]),
    "retention": ("scale_retention.py", [], ["--gpus", "500"]),
    "pages": ("dashboard.py", ["--pools", "1000", "--workloads", "1000"], ["--pools", "100"]),
    "web": ("scale_web.py", [], ["--pools", "100", "--duration", "5", "--rounds", "1"]),
    "csv": (
        "telemetry.py",
        ["--skip", "dcgm,rollup,incremental,sustained"],
        ["--gpus", "200", "--hours", "4", "--skip", "dcgm,rollup,incremental,sustained"],
    ),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--quick", action="store_true", help="small sizes, to try it out")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    outcomes = []
    for name in chosen:
        script, full, quick = SECTIONS[name]
        command = [sys.executable, str(BENCH / script), *(quick if args.quick else full)]
        print(f"\n## {name}: {' '.join(command[1:])}\n", flush=True)
        started = time.monotonic()
        status = subprocess.run(command, check=False).returncode  # noqa: S603 - our benches
        outcomes.append((name, status, time.monotonic() - started))
    print("\n| section | result | wall |\n|---|---|---:|")
    for name, status, seconds in outcomes:
        result = "aims met" if status == 0 else f"exit status {status}: see its table"
        print(f"| {name} | {result} | {seconds / 60:.1f} min |")
    return 0 if all(status == 0 for _name, status, _seconds in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
