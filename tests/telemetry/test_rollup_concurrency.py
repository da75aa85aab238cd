"""Two rollups of one pool never interleave: each deletes the hours it rebuilds and
inserts them again, so a second one in between would insert the same rows and flags and
fail on their unique keys (seen when an upload's rollup task and a rollup run by hand
met on one hour). The second waits for the first's commit, then rebuilds the same rows."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections, transaction

from apps.pools.models import Pool
from apps.telemetry.ingest import formats, storage
from apps.telemetry.models import PoolHourFlag, PoolHourlyUsage
from apps.telemetry.rollups import hourly

HOUR = datetime(2026, 11, 1, 10, tzinfo=UTC)
COLUMNS = {"timestamp": "time", "device": "gpu", "utilization_pct": "util"}


@pytest.mark.django_db(transaction=True)
def test_a_second_rollup_of_a_pool_waits_for_the_first_and_fails_nothing(pool):
    # One GPU declared, two reporting: the hour is flagged over_reported, so both rollups
    # write a flag row as well as the hour.
    Pool.objects.filter(pk=pool.pk).update(gpu_count=1, gpus_per_node=1)
    text = "time,gpu,util\n" + "".join(
        f"{(HOUR + timedelta(minutes=minute)).isoformat()},{gpu},50\n"
        for minute in range(0, 60, 10)
        for gpu in ("GPU-a", "GPU-b")
    )
    storage.import_gpu_samples(
        formats.parse_gpu_text(text, format="csv", columns=COLUMNS), pool=pool
    )
    first_holds_its_transaction = threading.Event()
    release_the_first = threading.Event()
    second_done = threading.Event()
    errors = []

    def first():
        try:
            with transaction.atomic():
                hourly.rollup_pool_hours(pool.pk, HOUR, HOUR + timedelta(hours=1))
                first_holds_its_transaction.set()
                release_the_first.wait(30)
        except Exception as error:  # reported by the assertion below
            errors.append(("first", error))
        finally:
            connections.close_all()

    def second():
        try:
            hourly.rollup_pool_hours(pool.pk, HOUR, HOUR + timedelta(hours=1))
        except Exception as error:
            errors.append(("second", error))
        finally:
            second_done.set()
            connections.close_all()

    threads = [threading.Thread(target=first)]
    threads[0].start()
    assert first_holds_its_transaction.wait(30)
    threads.append(threading.Thread(target=second))
    threads[1].start()
    # The second waits while the first holds its transaction open.
    assert not second_done.wait(1.5)
    release_the_first.set()
    for thread in threads:
        thread.join(30)
    assert errors == []
    row = PoolHourlyUsage.objects.get(pool=pool, hour=HOUR)
    assert row.reporting_gpus == 2
    assert list(
        PoolHourFlag.objects.filter(pool=pool, hour=HOUR).values_list("kind", flat=True)
    ) == [PoolHourFlag.Kind.OVER_REPORTED]
