"""What keeps an hourly pull of a whole fleet cheap, checked on small answers: each label
set is read into a device once whatever the number of queries answering it, the garbage
collector pause ends with the chunk, and the drain rolls up every pool of an hour with
the same number of queries however many pools there are (bench/scale_tsdb.py measures
the fleet-sized case)."""

import gc
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.telemetry.models import GpuDeviceHour, PendingRollup, PoolHourlyUsage, PullSource
from apps.telemetry.pull import promql, tsdb
from apps.telemetry.rollups import hourly
from tests.factories import GpuDeviceFactory, PoolFactory, PullSourceFactory

HOUR = datetime(2026, 11, 2, 10, tzinfo=UTC)


def matrix(*series: tuple[dict, str]) -> dict:
    """A query_range ``data`` of one point per series, at ``HOUR``'s evaluation instant,
    timestamps as the servers write them (float seconds)."""
    instant = round(promql.evaluation_instant(HOUR).timestamp(), 3)
    return {
        "resultType": "matrix",
        "result": [{"metric": labels, "values": [[instant, value]]} for labels, value in series],
    }


GPU_A = {"UUID": "GPU-a", "gpu": "0", "Hostname": "node-1", "modelName": "NVIDIA H100"}
GPU_B = {
    "UUID": "GPU-b",
    "gpu": "1",
    "Hostname": "node-1",
    "modelName": "NVIDIA H100",
    "namespace": "ml",
    "pod": "infer-0",
    "container": "main",
}


def test_every_query_of_a_label_set_fills_one_device_hour():
    answers = [
        ("util_samples", matrix((GPU_A, "60"), (GPU_B, "30"))),
        ("util_mean", matrix((GPU_B, "80"), (GPU_A, "25.5"))),
        ("max_memory_used_mib", matrix((GPU_A, "1000"), (GPU_B, "2048"))),
        ("energy_mj", matrix((GPU_A, "3600000000"), (GPU_B, "1800000000"))),
        ("engine_samples", matrix()),
        ("engine_mean", matrix()),
        ("power_w", matrix()),
    ]

    rows, problems = tsdb.device_hours_from_answers(answers)

    assert problems == []
    by_uuid = {row.device.uuid: row for row in rows}
    assert sorted(by_uuid) == ["GPU-a", "GPU-b"]
    a, b = by_uuid["GPU-a"], by_uuid["GPU-b"]
    assert (a.hour, a.samples, a.utilization_pct, a.max_memory_used_mib) == (HOUR, 60, 25.5, 1000)
    assert (b.hour, b.samples, b.utilization_pct, b.max_memory_used_mib) == (HOUR, 30, 80, 2048)
    # 3.6·10⁹ mJ is 1 kWh.
    assert (a.energy_kwh, b.energy_kwh) == (1.0, 0.5)
    assert (b.namespace, b.pod, b.container) == ("ml", "infer-0", "main")
    assert (a.namespace, a.pod, a.container) == ("", "", "")


def test_a_metric_name_on_the_series_does_not_split_its_device():
    named = [
        ("util_samples", matrix(({**GPU_A, "__name__": "DCGM_FI_DEV_GPU_UTIL"}, "60"))),
        ("util_mean", matrix(({**GPU_A, "__name__": "DCGM_FI_DEV_GPU_UTIL"}, "40"))),
        ("max_memory_used_mib", matrix(({**GPU_A, "__name__": "DCGM_FI_DEV_FB_USED"}, "512"))),
    ]

    rows, problems = tsdb.device_hours_from_answers(named)

    assert problems == []
    assert [(row.samples, row.utilization_pct, row.max_memory_used_mib) for row in rows] == [
        (60, 40, 512)
    ]


def test_a_series_naming_no_device_is_named_once_whatever_answered_it():
    nameless = {"Hostname": "node-2", "modelName": "NVIDIA H100"}  # no UUID, no gpu
    answers = [
        ("util_samples", matrix((nameless, "60"), (GPU_A, "60"))),
        ("util_mean", matrix((nameless, "50"), (GPU_A, "50"))),
        ("max_memory_used_mib", matrix((nameless, "10"), (GPU_A, "10"))),
    ]

    rows, problems = tsdb.device_hours_from_answers(answers)

    assert [row.device.uuid for row in rows] == ["GPU-a"]
    assert len(problems) == 1
    assert "has no UUID label" in problems[0] and problems[0].endswith("left out")


def test_a_value_out_of_range_names_its_series_and_hour():
    answers = [
        ("util_samples", matrix((GPU_B, "60"))),
        ("util_mean", matrix((GPU_B, "250"))),
    ]

    rows, problems = tsdb.device_hours_from_answers(answers)

    assert rows[0].utilization_pct is None
    assert problems == [
        '{UUID="GPU-b", Hostname="node-1", pod="infer-0"} in the hour 2026-11-02 10:00 UTC: '
        "mean GPU_UTIL 250 is outside 0–100 (a DCGM blank value among its samples?); left out"
    ]


def test_the_garbage_collector_is_back_on_after_a_chunk_even_when_it_fails():
    assert gc.isenabled()
    with tsdb._cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), tsdb._cyclic_gc_paused():
        raise RuntimeError("the server went away")
    assert gc.isenabled()
    # A caller that turned it off keeps it off.
    gc.disable()
    try:
        with tsdb._cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def _drain_queries(pool_count: int) -> tuple[int, dict]:
    """Queue ``pool_count`` pools' hour as one pull does, drain it; (queries of the
    drain, busy GPU-hours per pool)."""
    source = PullSourceFactory(kind=PullSource.Kind.PROMETHEUS_HOURLY, url="http://tsdb")
    pools = [PoolFactory(gpu_count=2) for _ in range(pool_count)]
    for number, pool in enumerate(pools):
        for gpu, utilization_pct in enumerate((10.0 * number, 50.0)):
            GpuDeviceHour.objects.create(
                device=GpuDeviceFactory(pool=pool, uuid=f"GPU-{pool.pk}-{gpu}"),
                hour=HOUR,
                samples=60,
                utilization_pct=utilization_pct,
                source=source,
                pulled_at=HOUR + timedelta(hours=1),
            )
    hourly.queue_pool_hours({(pool.pk, HOUR) for pool in pools})
    with CaptureQueriesContext(connection) as drained:
        hourly.rollup_pending()
    busy = {row.pool_id: row.busy_gpu_hours for row in PoolHourlyUsage.objects.filter(hour=HOUR)}
    # Each pool's GPUs: 10·number % and 50 % busy for the hour.
    assert busy == pytest.approx({pool.pk: 0.1 * n + 0.5 for n, pool in enumerate(pools)})
    assert not PendingRollup.objects.exists()
    GpuDeviceHour.objects.all().delete()
    PoolHourlyUsage.objects.all().delete()
    return len(drained.captured_queries)


@pytest.mark.django_db
def test_the_drain_of_a_fleets_hour_takes_as_many_queries_for_six_pools_as_for_two():
    two = _drain_queries(2)
    six = _drain_queries(6)
    # Unqueuing is one DELETE per pool-hour (row by row, in the order imports lock them);
    # the rollup itself does not grow with the pools.
    assert six - two == 4
