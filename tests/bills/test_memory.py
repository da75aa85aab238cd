"""The import's memory stays flat in the file's size: the peak of a file ten times
longer is not ten times higher (tracemalloc measures Python's allocations). The lines'
INSERTs are counted rather than sent, so the test measures the importer's reading and
batching in a second; bench/bills_import.py measures the whole import against
PostgreSQL at larger sizes."""

import gc
import tracemalloc

import pytest

from apps.bills import importer
from apps.bills.models import Bill, BillLine

pytestmark = pytest.mark.django_db

HEADER = (
    "BilledCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
    "ChargePeriodEnd,ProviderName,ResourceId,SkuId,Tags\n"
)


def write_focus_file(path, lines: int) -> None:
    """A FOCUS file of ``lines`` charges, written a line at a time."""
    with path.open("w") as handle:
        handle.write(HEADER)
        for number in range(lines):
            hour = number % 24
            handle.write(
                f"{number}.123456,USD,2024-09-01T00:00Z,2024-10-01T00:00Z,"
                f"2024-09-02T{hour:02d}:00Z,2024-09-02T{hour:02d}:59Z,Example Cloud,"
                f'i-{number:08d},p5.48xlarge,"{{""n"": ""{number}""}}"\n'
            )


def _peak(path) -> int:
    gc.collect()
    tracemalloc.start()
    with path.open("rb") as binary:
        importer.import_bill(binary, filename=path.name, source=Bill.Source.COMMAND)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_peak_memory_does_not_grow_with_the_file(tmp_path, monkeypatch):
    written = []
    monkeypatch.setattr(importer, "BATCH_SIZE", 50)
    monkeypatch.setattr(
        BillLine.objects, "bulk_create", lambda batch, **kwargs: written.append(len(batch))
    )
    small, large = tmp_path / "small.csv", tmp_path / "large.csv"
    write_focus_file(small, 200)
    write_focus_file(large, 2000)
    small_peak = _peak(small)
    Bill.objects.all().delete()
    large_peak = _peak(large)
    assert sum(written) == 2200 and max(written) == 50
    # Proportional growth would be 10×; a flat import stays within a small factor.
    assert large_peak < 1.5 * small_peak, (small_peak, large_peak)
