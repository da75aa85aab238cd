#!/usr/bin/env python
"""Peak memory of importing a FOCUS bill, at one size and at ten times it.

Writes two FOCUS files (``--lines`` charges, default 50,000, and ten times as many), then
runs ``manage.py import_bill FILE`` on each in a fresh process whose peak resident set
size the kernel reports on exit (``os.wait4``'s ``ru_maxrss``). A streamed import's peak
does not follow the file's size; the aim is: the larger file's peak ≤ 1.5 × the smaller's.

Usage (from the repository root; see bench/README.md):

    .venv/bin/python bench/bills_import.py                 # 50,000 and 500,000 lines
    .venv/bin/python bench/bills_import.py --lines 5000    # a quick run

It uses its own database (``--database-url``, default
postgres://postgres@127.0.0.1:5432/gpufleet_bench_bills), creates it when missing,
migrates it and empties the bills tables first.
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))
sys.path.insert(0, str(REPOSITORY / "bench"))

import telemetry as fleet_bench  # noqa: E402 - bench/telemetry.py, beside this file
from memory import MIB, peak_rss_bytes  # noqa: E402 - bench/memory.py, beside this file

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/gpufleet_bench_bills"
HEADER = (
    "BilledCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
    "ChargePeriodEnd,ServiceProviderName,ResourceId,SkuId,ChargeDescription,Tags\n"
)


def write_bill(path: Path, lines: int, provider: str) -> int:
    """A FOCUS file of ``lines`` hourly charges, written a line at a time; its bytes."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write(HEADER)
        for number in range(lines):
            day, hour = divmod(number % 720, 24)
            handle.write(
                f"{number % 97}.123456,USD,2024-09-01T00:00:00Z,2024-10-01T00:00:00Z,"
                f"2024-09-{day + 1:02d}T{hour:02d}:00:00Z,2024-09-{day + 1:02d}T{hour:02d}:59:59Z,"
                f"{provider},i-{number:010d},p5.48xlarge,8 x H100 instance hour,"
                f'"{{""team"": ""ml"", ""n"": ""{number}""}}"\n'
            )
    return path.stat().st_size


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    args = parser.parse_args(argv)

    fleet_bench.prepare_database(args.database_url)
    fleet_bench.setup_django(args.database_url)
    from apps.bills.models import Bill

    Bill.objects.all().delete()
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "REPORTS_WARM_UP": "false",
    }
    env.pop("CELERY_BROKER_URL", None)
    env.pop("REDIS_URL", None)
    results = []
    with tempfile.TemporaryDirectory() as directory:
        for factor in (1, 10):
            path = Path(directory) / f"bill_{factor}x.csv"
            size = write_bill(path, args.lines * factor, provider=f"Bench Cloud {factor}x")
            fleet_bench.log(f"{args.lines * factor:,} lines, {size / MIB:,.1f} MiB written")
            peak, seconds = peak_rss_bytes(
                [sys.executable, "manage.py", "import_bill", str(path)], env
            )
            results.append((factor, size, peak, seconds))
    print()
    for factor, size, peak, seconds in results:
        print(
            f"{factor:>2}×  {args.lines * factor:>9,} lines  {size / MIB:8,.1f} MiB file  "
            f"{peak / MIB:8,.0f} MiB peak RSS  {seconds:7.1f} s"
        )
    ratio = results[1][2] / results[0][2]
    verdict = "PASS" if ratio <= 1.5 else "MISS"
    print(f"10× file's peak ÷ 1× file's peak = {ratio:.2f} (aim ≤ 1.5)  {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
