"""Hourly aggregates pulled from a real VictoriaMetrics and a real Prometheus.

Both servers are loaded with the same real-looking fleet (label sets copied from the
dcgm-exporter scrapes in tests/data: eight H100s of an AICR node, one with a workload's pod
labels, and the MIG-partitioned A100 of Princeton's Della with three slices), one sample
a minute over three hours. After the pull and the drain, every pool-hour, the workload
attribution and the days are compared with a computation in Python over the very samples
that were loaded (``expected_pool_hours`` and friends below): the means, counts and peaks
as their definitions say, the MIG shares as apps/telemetry/mig.py's docstring states them,
and the energy counter's ``increase`` as each server documents it.
"""

import json
import random
import re
import threading
import time
import urllib.request
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from apps.catalog.models import GpuModel
from apps.pools.hours import floor_hour
from apps.telemetry.models import (
    GpuDeviceHour,
    GpuSample,
    ImportRun,
    PoolDailyUsage,
    PoolHourFlag,
    PoolHourlyUsage,
    PullSource,
    WorkloadHourlyUsage,
)
from apps.telemetry.pull import promql, tsdb
from apps.telemetry.rollups import hourly
from apps.telemetry.rollups.retention import samples_held_q
from tests.factories import HostnameRuleFactory, PoolFactory, PullSourceFactory, WorkloadFactory
from tests.telemetry import tsdb_servers
from tests.telemetry.tsdb_servers import Series

DATA = Path(__file__).resolve().parent.parent / "data" / "dcgm-exporter"
H100_SCRAPE = DATA / "scrapes" / "aicr_8xH100_k8s_podlabels_driver580_sampled.prom"
MIG_SCRAPE = DATA / "mig" / "princeton_della_A100_MIG_line.prom"
MINUTE_MS = 60_000
HOUR = timedelta(hours=1)
HOURS_LOADED = 3
MIG_SLICES = (("1", "3g.40gb"), ("2", "2g.20gb"), ("7", "1g.10gb"))
POD_PREFIX = "vllm-agg-0-"

victoria_metrics_mark = pytest.mark.victoria_metrics
prometheus_mark = pytest.mark.prometheus

_LINE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)\{(?P<labels>.*)\}\s+\S+\s*$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="([^"]*)"')


def label_sets(path: Path, metric: str) -> list[dict]:
    """The label sets of ``metric``'s lines in a scrape, read with a regex of our own."""
    sets = []
    for line in path.read_text().splitlines():
        match = _LINE.match(line)
        if match and match["name"] == metric:
            sets.append(dict(_LABEL.findall(match["labels"])))
    return sets


def ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


# --- The fleet -----------------------------------------------------------------------------


def fleet_series(first_hour: datetime, tag: str) -> list[Series]:
    """Three hours of one-minute samples from ``first_hour`` on, every series labelled
    ``test=tag``. GPU 0 of the H100 node carries its pod's labels until half past the
    second hour and none after (the pod ended); it has no energy counter, so its energy
    comes from its power. The A100's slices report engine activity, their memory and the
    GPU's energy counter, as dcgm-exporter publishes them."""
    rng = random.Random(16)
    start = ms(first_hour)
    minutes = 60 * HOURS_LOADED
    series: list[Series] = []
    h100 = label_sets(H100_SCRAPE, "DCGM_FI_DEV_GPU_UTIL")
    assert len(h100) == 8 and h100[0].get("pod", "").startswith(POD_PREFIX)
    for index, labels in enumerate(h100):
        labels = {**labels, "test": tag}
        stamps = [start + minute * MINUTE_MS for minute in range(minutes)]
        util = [float(rng.randint(0, 100)) for _ in stamps]
        memory = [float(rng.randint(1_000, 80_000)) for _ in stamps]
        power = [round(rng.uniform(60, 700), 3) for _ in stamps]
        if index == 0:
            without_pod = {
                k: v for k, v in labels.items() if k not in ("pod", "namespace", "container")
            }
            cut = 90  # minute 30 of the second hour
            for name, values in (
                ("DCGM_FI_DEV_GPU_UTIL", util),
                ("DCGM_FI_DEV_FB_USED", memory),
                ("DCGM_FI_DEV_POWER_USAGE", power),
            ):
                series.append(
                    Series(name, labels, list(zip(stamps[:cut], values[:cut], strict=True)))
                )
                series.append(
                    Series(name, without_pod, list(zip(stamps[cut:], values[cut:], strict=True)))
                )
            continue
        counter, energy = 10**10 * (index + 1), []
        for watts in power:
            counter += watts * 60 * 1000  # the minute's energy in mJ
            energy.append(float(counter))
        for name, values in (
            ("DCGM_FI_DEV_GPU_UTIL", util),
            ("DCGM_FI_DEV_FB_USED", memory),
            ("DCGM_FI_DEV_POWER_USAGE", power),
            ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", energy),
        ):
            series.append(Series(name, labels, list(zip(stamps, values, strict=True))))
    (della,) = label_sets(MIG_SCRAPE, "DCGM_FI_DEV_FB_USED")
    gpu_labels = {k: v for k, v in della.items() if k not in ("GPU_I_ID", "GPU_I_PROFILE")}
    stamps = [start + minute * MINUTE_MS for minute in range(minutes)]
    counter, energy = 7 * 10**10, []
    for _ in stamps:
        counter += rng.uniform(50, 300) * 60 * 1000
        energy.append(float(counter))
    for instance, profile in MIG_SLICES:
        labels = {**gpu_labels, "GPU_I_ID": instance, "GPU_I_PROFILE": profile, "test": tag}
        activity = [round(rng.uniform(0, 1), 4) for _ in stamps]
        memory = [float(rng.randint(100, 10_000)) for _ in stamps]
        series.append(
            Series(
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, list(zip(stamps, activity, strict=True))
            )
        )
        series.append(Series("DCGM_FI_DEV_FB_USED", labels, list(zip(stamps, memory, strict=True))))
        series.append(
            Series(
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                labels,
                list(zip(stamps, energy, strict=True)),
            )
        )
    return series


# --- The independent computation -----------------------------------------------------------


def prometheus_increase(points, window_start_ms: int, window_end_ms: int) -> float | None:
    """Prometheus' ``increase`` over the samples in the window: the counter's rise from the
    first to the last sample, extrapolated towards the window's edges where the samples
    come within 1.1 × their mean spacing of them, else by half a spacing (Prometheus
    docs, "increase()": "extrapolated to cover the full time range"; the rule is
    ``extrapolatedRate`` in promql/functions.go). No counter resets here."""
    if len(points) < 2:
        return None
    (first_ms, first), (last_ms, last) = points[0], points[-1]
    result = last - first
    sampled = (last_ms - first_ms) / 1000
    to_start = (first_ms - window_start_ms) / 1000
    to_end = (window_end_ms - last_ms) / 1000
    average = sampled / (len(points) - 1)
    threshold = average * 1.1
    if result > 0 and first >= 0:
        to_start = min(to_start, sampled * first / result)
    extrapolate_to = sampled
    extrapolate_to += to_start if to_start < threshold else average / 2
    extrapolate_to += to_end if to_end < threshold else average / 2
    return result * extrapolate_to / sampled


def victoria_metrics_increase(points, previous) -> float | None:
    """VictoriaMetrics' ``increase``: the last value in the window minus the last sample
    before it (VictoriaMetrics MetricsQL docs, "increase": "it doesn't extrapolate" and
    takes the previous sample into account); without one, from the window's first value
    when the counter is far from zero, as here."""
    if not points:
        return None
    if previous is None:
        return points[-1][1] - points[0][1]
    return points[-1][1] - previous[1]


def device_hours(series: list[Series], server: str) -> dict:
    """(uuid, GPU_I_ID, hour) → what the rollup needs, from the loaded samples."""
    by_device = defaultdict(lambda: defaultdict(list))  # key → metric → [(ts, value, pod)]
    for one in series:
        key = (one.labels["UUID"], one.labels.get("GPU_I_ID"))
        for timestamp, value in one.points:
            by_device[key][one.name].append((timestamp, value, one.labels.get("pod", "")))
    result = {}
    for key, metrics in by_device.items():
        for name in metrics:
            metrics[name].sort()
        hours = {
            floor_hour(datetime.fromtimestamp(t / 1000, UTC))
            for t, _v, _p in metrics["DCGM_FI_DEV_FB_USED"]
        }
        for hour in sorted(hours):
            low, high = ms(hour), ms(hour + HOUR)

            def within(name, metrics=metrics, low=low, high=high):
                return [(t, v, p) for t, v, p in metrics.get(name, []) if low <= t < high]

            engine = within("DCGM_FI_PROF_GR_ENGINE_ACTIVE")
            util = (
                [(t, v * 100, p) for t, v, p in engine]
                if engine
                else within("DCGM_FI_DEV_GPU_UTIL")
            )
            energy_points = [(t, v) for t, v, _p in within("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")]
            energy_kwh = None
            if energy_points:
                if server == "prometheus":
                    rise = prometheus_increase(energy_points, low - 1, high - 1)
                else:
                    before = [
                        (t, v)
                        for t, v, _p in metrics["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
                        if t < low
                    ]
                    rise = victoria_metrics_increase(energy_points, before[-1] if before else None)
                energy_kwh = rise / 3.6e9
            else:
                power = [v for _t, v, _p in within("DCGM_FI_DEV_POWER_USAGE")]
                energy_kwh = sum(power) / len(power) / 1000 if power else None
            result[(*key, hour)] = {
                "utilization": [v for _t, v, _p in util],
                "pods": [p for _t, _v, p in util],
                "max_memory_mib": max(v for _t, v, _p in within("DCGM_FI_DEV_FB_USED")),
                "energy_kwh": energy_kwh,
            }
    return result


def expected_pool_hours(series, server, pool_of_host: dict, slices_of_pool: dict) -> dict:
    """(pool id, hour) → the pool-hour's figures, as apps/telemetry/rollups/hourly.py defines
    them, computed GPU by GPU from ``device_hours``."""
    hours = device_hours(series, server)
    hosts = {
        (one.labels["UUID"], one.labels.get("GPU_I_ID")): one.labels["Hostname"] for one in series
    }
    profiles = {
        (one.labels["UUID"], one.labels.get("GPU_I_ID")): one.labels.get("GPU_I_PROFILE")
        for one in series
    }
    gpus = defaultdict(lambda: {"whole": None, "slices": []})
    for (uuid, instance, hour), figures in hours.items():
        pool = pool_of_host[hosts[(uuid, instance)]]
        entry = gpus[(pool, hour, uuid)]
        if instance is None:
            entry["whole"] = figures
        else:
            entry["slices"].append((profiles[(uuid, instance)], figures))
    pools = defaultdict(lambda: {"shares": [], "memory": [], "energy": []})
    for (pool, hour, _uuid), entry in gpus.items():
        if entry["slices"]:
            total_slices = slices_of_pool[pool]
            share = (
                sum(
                    (sum(f["utilization"]) / len(f["utilization"])) / 100 * int(profile[0])
                    for profile, f in entry["slices"]
                )
                / total_slices
            )
            share = min(share, 1.0)
            memory = sum(f["max_memory_mib"] for _p, f in entry["slices"])
            energy = max(f["energy_kwh"] for _p, f in entry["slices"])
        else:
            figures = entry["whole"]
            share = sum(figures["utilization"]) / len(figures["utilization"]) / 100
            memory, energy = figures["max_memory_mib"], figures["energy_kwh"]
        pools[(pool, hour)]["shares"].append(share)
        pools[(pool, hour)]["memory"].append(memory)
        pools[(pool, hour)]["energy"].append(energy)
    return {
        key: {
            "reporting_gpus": len(v["shares"]),
            "busy_gpu_hours": sum(v["shares"]),
            "avg_utilization_pct": 100 * sum(v["shares"]) / len(v["shares"]),
            "max_utilization_pct": 100 * max(v["shares"]),
            "max_memory_used_mib": max(v["memory"]),
            "energy_kwh": sum(v["energy"]),
        }
        for key, v in pools.items()
    }


def expected_attribution(series, server) -> dict:
    """hour → (allocated, busy) GPU-hours of the workload whose pods start with
    POD_PREFIX: its share of each whole GPU's samples and their utilisation ÷ the GPU's
    samples in the hour (WorkloadHourlyUsage's docstring)."""
    result = {}
    for (_uuid, instance, hour), figures in device_hours(series, server).items():
        if instance is not None:
            continue
        matched = [
            value
            for value, pod in zip(figures["utilization"], figures["pods"], strict=True)
            if pod.startswith(POD_PREFIX)
        ]
        if matched:
            count = len(figures["utilization"])
            allocated, busy = result.get(hour, (0.0, 0.0))
            result[hour] = (allocated + len(matched) / count, busy + sum(matched) / 100 / count)
    return result


# --- Fixtures -----------------------------------------------------------------------------


@pytest.fixture
def fleet(catalog):
    """The H100 pool (16 GPUs declared) and the A100 MIG pool (1 GPU), hostname rules
    sending each node's GPUs to its pool, and a workload on the H100 pool's pod."""
    h100 = PoolFactory(
        name="TSDB H100", slug="tsdb-h100", gpu_model=GpuModel.objects.get(slug="h100-sxm")
    )
    a100_model = GpuModel.objects.get(slug="a100-pcie-80gb")
    a100 = PoolFactory(name="TSDB A100 MIG", slug="tsdb-a100", gpu_model=a100_model, gpu_count=1)
    HostnameRuleFactory(pool=h100, hostname_pattern="gpu-node-*")
    HostnameRuleFactory(pool=a100, hostname_pattern="della-*")
    workload = WorkloadFactory(
        name="TSDB vLLM", pool=h100, k8s_namespace="dynamo-workload", pod_name_prefix=POD_PREFIX
    )
    return {
        "h100": h100,
        "a100": a100,
        "workload": workload,
        "pool_of_host": {"gpu-node-1": h100.pk, "della-l01g1": a100.pk},
        "slices_of_pool": {h100.pk: h100.gpu_model.mig_compute_slices or 7, a100.pk: 7},
    }


def hourly_source(url: str, tag: str, **fields) -> PullSource:
    return PullSourceFactory(
        name=f"tsdb {tag}",
        kind=PullSource.Kind.PROMETHEUS_HOURLY,
        url=url,
        label_filters=f'test="{tag}"',
        **fields,
    )


def first_hour_now() -> tuple[datetime, datetime]:
    """(first hour loaded, now): five hours back, so the three loaded and one empty hour
    after them are all complete."""
    now = timezone.now()
    return floor_hour(now) - 5 * HOUR, now


def assert_rollups_equal_the_computation(series, server, fleet, first_hour):
    expected = expected_pool_hours(series, server, fleet["pool_of_host"], fleet["slices_of_pool"])
    rows = {
        (row.pool_id, row.hour): row
        for row in PoolHourlyUsage.objects.filter(pool__in=[fleet["h100"], fleet["a100"]])
    }
    assert set(rows) == set(expected)
    assert len(expected) == 2 * HOURS_LOADED
    for key, figures in expected.items():
        row = rows[key]
        assert row.capacity_gpu_hours == (16 if key[0] == fleet["h100"].pk else 1)
        for name, value in figures.items():
            assert getattr(row, name) == pytest.approx(value, rel=1e-9), (key, name)
    # No MIG conflict and no over-reporting: the slices are the GPU, once.
    assert not PoolHourFlag.objects.filter(pool__in=[fleet["h100"], fleet["a100"]]).exists()

    attribution = expected_attribution(series, server)
    assert sorted(attribution) == [first_hour, first_hour + HOUR]
    assert attribution[first_hour][0] == pytest.approx(1.0)
    assert attribution[first_hour + HOUR][0] == pytest.approx(0.5)
    stored = {
        row.hour: row for row in WorkloadHourlyUsage.objects.filter(workload=fleet["workload"])
    }
    assert set(stored) == set(attribution)
    for hour, (allocated, busy) in attribution.items():
        assert stored[hour].allocated_gpu_hours == pytest.approx(allocated, rel=1e-9)
        assert stored[hour].busy_gpu_hours == pytest.approx(busy, rel=1e-9)

    # Days: the UTC days' sums of the expected hours (PoolDailyUsage's definitions).
    days = defaultdict(lambda: defaultdict(float))
    for (pool, hour), figures in expected.items():
        day = days[(pool, hour.date())]
        day["measured_hours"] += 1
        day["busy_gpu_hours"] += figures["busy_gpu_hours"]
        day["reporting_gpu_hours"] += figures["reporting_gpus"]
        day["energy_kwh"] += figures["energy_kwh"]
    daily = {
        (row.pool_id, row.day): row
        for row in PoolDailyUsage.objects.filter(pool__in=[fleet["h100"], fleet["a100"]])
    }
    assert set(daily) == set(days)
    for key, sums in days.items():
        for name, value in sums.items():
            assert getattr(daily[key], name) == pytest.approx(value, rel=1e-9), (key, name)


def hourly_figures() -> list[dict]:
    return list(PoolHourlyUsage.objects.order_by("pool_id", "hour").values(*FIGURES))


FIGURES = (
    "pool_id",
    "hour",
    "reporting_gpus",
    "capacity_gpu_hours",
    "busy_gpu_hours",
    "avg_utilization_pct",
    "max_utilization_pct",
    "max_memory_used_mib",
    "energy_kwh",
)


def pulled_rows() -> list[tuple]:
    return sorted(
        GpuDeviceHour.objects.values_list(
            "device__key",
            "hour",
            "namespace",
            "pod",
            "container",
            "samples",
            "utilization_pct",
            "max_memory_used_mib",
            "energy_kwh",
            "power_w",
        )
    )


# --- Against VictoriaMetrics ---------------------------------------------------------------


@victoria_metrics_mark
@pytest.mark.django_db
def test_hourly_aggregates_from_victoria_metrics_equal_a_computation_over_the_samples(
    victoria_metrics, fleet
):
    first_hour, now = first_hour_now()
    series = fleet_series(first_hour, "vm-main")
    victoria_metrics.load(series)
    source = hourly_source(victoria_metrics.base_url, "vm-main")

    run = tsdb.pull_hourly(source, now=now, start=first_hour, end=first_hour + 4 * HOUR)

    assert run.status == ImportRun.Status.SUCCEEDED, run.message
    source.refresh_from_db()
    # The empty fourth hour is complete too: the resume point passes it.
    assert source.pulled_until == first_hour + 4 * HOUR
    assert source.last_status == "ok"
    # 8 H100s + 3 slices per hour, GPU 0 twice in its second hour (with and without pod).
    assert run.rows_accepted == GpuDeviceHour.objects.count() == 11 * HOURS_LOADED + 1
    assert not GpuSample.objects.exists()  # no raw sample is copied
    hourly.rollup_pending()
    assert_rollups_equal_the_computation(series, "victoria-metrics", fleet, first_hour)

    # A re-pull of the same hours replaces, never adds.
    before = pulled_rows()
    hourly_before = hourly_figures()
    again = tsdb.pull_hourly(source, now=now, start=first_hour, end=first_hour + 4 * HOUR)
    assert again.status == ImportRun.Status.SUCCEEDED
    assert again.rows_duplicate == again.rows_accepted == len(before)
    assert "replaced an earlier pull" in again.message
    assert pulled_rows() == before
    hourly.rollup_pending()
    assert hourly_figures() == hourly_before


@victoria_metrics_mark
@pytest.mark.django_db
def test_stored_device_hours_are_held_and_survive_the_raw_retention(
    victoria_metrics, fleet, settings
):
    first_hour, now = first_hour_now()
    victoria_metrics.load(fleet_series(first_hour, "vm-held"))
    source = hourly_source(victoria_metrics.base_url, "vm-held")
    tsdb.pull_hourly(source, now=now, start=first_hour, end=first_hour + 3 * HOUR)
    hourly.rollup_pending()
    hours = PoolHourlyUsage.objects.filter(pool=fleet["h100"])
    # No raw sample, yet every pool-hour is rebuildable: its device-hours are held.
    assert hours.count() == HOURS_LOADED
    assert hours.filter(samples_held_q()).count() == HOURS_LOADED

    from apps.telemetry.tasks import purge_raw_samples_task

    settings.TELEMETRY_RAW_RETENTION_DAYS = 0
    purge_raw_samples_task()
    assert GpuDeviceHour.objects.count() == 11 * HOURS_LOADED + 1
    # A recompute of everything gives the same rows again from the stored device-hours.
    before = hourly_figures()
    hourly.rollup_everything()
    after = hourly_figures()
    # The same sums, added up in another order by the fleet-wide statement.
    assert [row["hour"] for row in after] == [row["hour"] for row in before]
    for old, new in zip(before, after, strict=True):
        for name in FIGURES[2:]:
            assert new[name] == pytest.approx(old[name], rel=1e-12)


@victoria_metrics_mark
@pytest.mark.django_db
def test_a_stopped_pull_resumes_at_the_first_hour_not_complete(victoria_metrics, fleet):
    first_hour, now = first_hour_now()
    victoria_metrics.load(fleet_series(first_hour, "vm-resume"))
    source = hourly_source(victoria_metrics.base_url, "vm-resume", pulled_until=first_hour)
    lines = []
    run = tsdb.pull_hourly(
        source,
        now=now,
        end=first_hour + 4 * HOUR,
        chunk_hours=1,
        max_chunks=2,
        progress=lambda outcome, number, chunks: lines.append((number, chunks)),
    )
    assert run.status == ImportRun.Status.SUCCEEDED
    assert lines == [(1, 2), (2, 2)]
    source.refresh_from_db()
    assert source.pulled_until == first_hour + 2 * HOUR
    # The restart: a new run with no range continues at the resume point.
    rest = tsdb.pull_hourly(source, now=now, end=first_hour + 4 * HOUR, chunk_hours=1)
    assert rest.rows_duplicate == 0
    assert rest.message.startswith(f"Hourly aggregates {first_hour + 2 * HOUR:%Y-%m-%d %H:00}–")
    source.refresh_from_db()
    assert source.pulled_until == first_hour + 4 * HOUR
    assert GpuDeviceHour.objects.count() == 11 * HOURS_LOADED + 1
    # Nothing complete is left in the range: the next look records no run.
    runs = ImportRun.objects.count()
    assert tsdb.pull_hourly(source, now=now, end=first_hour + 4 * HOUR) is None
    assert ImportRun.objects.count() == runs


@victoria_metrics_mark
@pytest.mark.django_db
def test_each_sample_lands_in_exactly_one_hour(victoria_metrics, fleet):
    """The hour is [h, h + 1 h): samples on the hour belong to it, one a millisecond
    before the next hour too, the next hour's first sample does not."""
    first_hour, now = first_hour_now()
    labels = {
        "UUID": "GPU-boundary-0000",
        "gpu": "0",
        "Hostname": "gpu-node-boundary",
        "test": "vm-boundary",
    }
    stamps = [
        first_hour,
        first_hour + timedelta(minutes=30),
        first_hour + HOUR - timedelta(milliseconds=1),
        first_hour + HOUR,
        first_hour + 2 * HOUR - timedelta(minutes=1),
    ]
    victoria_metrics.load(
        [
            Series(
                "DCGM_FI_DEV_GPU_UTIL",
                labels,
                [
                    (ms(stamp), value)
                    for stamp, value in zip(stamps, [10, 20, 30, 90, 50], strict=True)
                ],
            )
        ]
    )
    source = hourly_source(victoria_metrics.base_url, "vm-boundary", pool=fleet["h100"])
    tsdb.pull_hourly(source, now=now, start=first_hour, end=first_hour + 2 * HOUR)
    rows = {
        row.hour: (row.samples, row.utilization_pct)
        for row in GpuDeviceHour.objects.filter(device__uuid="GPU-boundary-0000")
    }
    assert rows == {first_hour: (3, 20.0), first_hour + HOUR: (2, 70.0)}


class Proxy:
    """A stand-in for a TSDB in trouble, in front of the real VictoriaMetrics: it passes
    requests on, or marks the answers partial (as a VictoriaMetrics cluster does when a
    storage node is down) or adds a Prometheus warning, or answers too slowly, or 503."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.mode = "pass"
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                if proxy.mode == "slow":
                    time.sleep(3)
                if proxy.mode == "unavailable":
                    body = b"service unavailable"
                    self.send_response(503)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                with urllib.request.urlopen(proxy.upstream + self.path, timeout=30) as answer:  # noqa: S310
                    payload = json.loads(answer.read())
                if proxy.mode == "partial":
                    payload["isPartial"] = True
                if proxy.mode == "warning":
                    payload["warnings"] = ["remote store 2 of 3 did not answer"]
                body = json.dumps(payload).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up waiting

            def log_message(self, format, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(victoria_metrics):
    proxy = Proxy(victoria_metrics.base_url)
    yield proxy
    proxy.close()


@victoria_metrics_mark
@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["partial", "warning"])
def test_a_partial_answer_is_stored_but_its_hours_are_not_complete(
    victoria_metrics, proxy, fleet, mode
):
    first_hour, now = first_hour_now()
    tag = f"vm-{mode}"
    victoria_metrics.load(fleet_series(first_hour, tag))
    source = hourly_source(proxy.url, tag, pulled_until=first_hour)
    proxy.mode = mode

    run = tsdb.pull_hourly(source, now=now, end=first_hour + 3 * HOUR)

    assert run.status == ImportRun.Status.SUCCEEDED
    assert "partially" in run.message and "not marked complete" in run.message
    if mode == "warning":
        assert "remote store 2 of 3 did not answer" in run.message
    source.refresh_from_db()
    assert source.pulled_until == first_hour  # not moved on
    assert source.last_status == "warning"
    assert GpuDeviceHour.objects.count() == 11 * HOURS_LOADED + 1  # but stored

    proxy.mode = "pass"
    whole = tsdb.pull_hourly(source, now=now, end=first_hour + 3 * HOUR)
    assert "partially" not in whole.message
    source.refresh_from_db()
    assert source.pulled_until == first_hour + 3 * HOUR
    assert GpuDeviceHour.objects.count() == 11 * HOURS_LOADED + 1  # replaced, not added


@victoria_metrics_mark
@pytest.mark.django_db
def test_a_slow_failing_or_unreachable_server_stops_the_run_with_what_to_do(
    victoria_metrics, proxy, fleet
):
    first_hour, now = first_hour_now()
    victoria_metrics.load(fleet_series(first_hour, "vm-slow"))
    source = hourly_source(proxy.url, "vm-slow", pulled_until=first_hour)

    # The first chunk goes through, then the server slows down: the chunk written stays.
    calls = {"chunks": 0}

    def slow_after_first(outcome, number, chunks):
        calls["chunks"] += 1
        proxy.mode = "slow"

    run = tsdb.pull_hourly(
        source,
        now=now,
        end=first_hour + 3 * HOUR,
        chunk_hours=1,
        timeout_seconds=1,
        progress=slow_after_first,
    )
    assert calls["chunks"] == 1
    # The chunk written stays, counted: the run that wrote it has not failed.
    assert run.status == ImportRun.Status.SUCCEEDED
    run.refresh_from_db()
    assert run.rows_accepted == GpuDeviceHour.objects.count() > 0
    assert "did not answer within 1 s" in run.message
    assert f"The hours from {first_hour + HOUR:%Y-%m-%d %H:00} UTC on are not pulled" in run.message
    assert "Check that the server is up and not overloaded" in run.message
    source.refresh_from_db()
    assert source.pulled_until == first_hour + HOUR
    assert source.last_status == "error"
    assert GpuDeviceHour.objects.filter(hour=first_hour).exists()
    assert not GpuDeviceHour.objects.filter(hour=first_hour + HOUR).exists()

    proxy.mode = "unavailable"
    refused = tsdb.pull_hourly(source, now=now, end=first_hour + 3 * HOUR)
    assert refused.status == ImportRun.Status.FAILED
    assert refused.rows_accepted == 0
    assert "answered HTTP 503" in refused.message

    source.url = f"http://127.0.0.1:{tsdb_servers.free_port()}"
    source.save()
    unreachable = tsdb.pull_hourly(source, now=now, end=first_hour + 3 * HOUR)
    assert unreachable.status == ImportRun.Status.FAILED
    assert "could not reach" in unreachable.message
    source.refresh_from_db()
    assert source.pulled_until == first_hour + HOUR  # where the next pull resumes


@victoria_metrics_mark
@pytest.mark.django_db
def test_label_filters_choose_the_series(victoria_metrics, fleet):
    first_hour, now = first_hour_now()
    victoria_metrics.load(fleet_series(first_hour, "vm-filters"))
    only_workload = PullSourceFactory(
        name="dynamo only",
        kind=PullSource.Kind.PROMETHEUS_HOURLY,
        url=victoria_metrics.base_url,
        label_filters='test="vm-filters",namespace=~"dynamo-.*"',
    )
    tsdb.pull_hourly(only_workload, now=now, start=first_hour, end=first_hour + 3 * HOUR)
    assert set(GpuDeviceHour.objects.values_list("namespace", "hour")) == {
        ("dynamo-workload", first_hour),
        ("dynamo-workload", first_hour + HOUR),
    }
    GpuDeviceHour.objects.all().delete()
    only_mig = PullSourceFactory(
        name="della only",
        kind=PullSource.Kind.PROMETHEUS_HOURLY,
        url=victoria_metrics.base_url,
        label_filters='test = "vm-filters", Hostname="della-l01g1", GPU_I_ID!="2"',
    )
    tsdb.pull_hourly(only_mig, now=now, start=first_hour, end=first_hour + 3 * HOUR)
    assert sorted(set(GpuDeviceHour.objects.values_list("device__key", flat=True))) == [
        f"{uuid}/{instance}"
        for uuid in ["GPU-d6dd33b9-e50e-997c-f303-c8f7312fa498"]
        for instance in ("1", "7")
    ]


def test_label_filters_are_checked_and_written_back_canonically():
    matchers = promql.parse_label_filters(' {cluster = "a", namespace=~"ml-.*",pod!~"x\\"y"} ')
    assert promql.format_label_filters(matchers) == ('cluster="a",namespace=~"ml-.*",pod!~"x\\"y"')
    assert promql.parse_label_filters("") == []
    for text, said in [
        ("cluster=a", "a value in double quotes at character 9"),
        ('cluster="a" namespace="b"', "a comma between matchers"),
        ('9x="a"', "a label name at character 1"),
        ('cluster~"a"', "=, !=, =~ or !~"),
        ('namespace=~"ml-("', "regular expression of namespace is not valid"),
        ('__name__="up"', "__name__ cannot be filtered on"),
        ('cluster="a', 'the closing " of the value'),
    ]:
        with pytest.raises(promql.LabelFilterError, match=re.escape(said)):
            promql.parse_label_filters(text)
    query = promql.hourly_queries('cluster="a"')[0].promql
    assert query.startswith("max by (UUID, uuid, gpu, Hostname, GPU_I_ID, GPU_I_PROFILE")
    assert query.endswith('(count_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{cluster="a"}[1h]))')


def test_the_evaluation_instant_is_the_last_millisecond_of_the_hour():
    hour = datetime(2026, 12, 1, 10, tzinfo=UTC)
    instant = promql.evaluation_instant(hour)
    assert instant == datetime(2026, 12, 1, 10, 59, 59, 999000, tzinfo=UTC)
    assert promql.hour_of_instant(ms(instant)) == hour


@victoria_metrics_mark
@pytest.mark.django_db
def test_pull_telemetry_backfills_a_week_in_chunks_with_progress(victoria_metrics, fleet, capsys):
    first_hour, now = first_hour_now()
    victoria_metrics.load(fleet_series(first_hour, "vm-command"))
    source = hourly_source(victoria_metrics.base_url, "vm-command")
    week_ago = first_hour - timedelta(days=7) + 3 * HOUR
    call_command(
        "pull_telemetry",
        "--source",
        source.slug,
        "--start",
        week_ago.isoformat(),
        "--end",
        (first_hour + 3 * HOUR).isoformat(),
    )
    out = capsys.readouterr().out
    progress = [line for line in out.splitlines() if line.startswith("[")]
    assert len(progress) == 7 and progress[0].startswith("[1/7]")
    assert progress[-1].endswith(f"{11 * HOURS_LOADED + 1} device-hours")
    assert "Complete up to" in out
    source.refresh_from_db()
    assert source.pulled_until == first_hour + 3 * HOUR
    with pytest.raises(CommandError, match="no pull source 'nope'"):
        call_command("pull_telemetry", "--source", "nope")
    with pytest.raises(CommandError, match="write an ISO time"):
        call_command("pull_telemetry", "--source", source.slug, "--start", "yesterday")


# --- Against Prometheus ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def prometheus_fleet(tmp_path_factory):
    """A real Prometheus holding the same fleet, backfilled through promtool."""
    first_hour, _now = first_hour_now()
    series = fleet_series(first_hour, "prom-main")
    boundary = Series(
        "DCGM_FI_DEV_GPU_UTIL",
        {"UUID": "GPU-boundary-0001", "gpu": "0", "Hostname": "gpu-node-b", "test": "prom-b"},
        [
            (ms(first_hour), 10.0),
            (ms(first_hour + timedelta(minutes=30)), 20.0),
            (ms(first_hour + HOUR), 90.0),
            (ms(first_hour + 2 * HOUR - timedelta(minutes=1)), 50.0),
        ],
    )
    process, base_url = tsdb_servers.start_prometheus_with(
        [*series, boundary], tmp_path_factory.mktemp("prometheus-hourly")
    )
    try:
        yield base_url, first_hour, series
    finally:
        tsdb_servers.stop(process)


@prometheus_mark
@pytest.mark.django_db
def test_hourly_aggregates_from_prometheus_equal_a_computation_over_the_samples(
    prometheus_fleet, fleet
):
    base_url, first_hour, series = prometheus_fleet
    source = hourly_source(base_url, "prom-main")
    run = tsdb.pull_hourly(source, start=first_hour, end=first_hour + 4 * HOUR)
    assert run.status == ImportRun.Status.SUCCEEDED, run.message
    assert run.rows_accepted == 11 * HOURS_LOADED + 1
    hourly.rollup_pending()
    assert_rollups_equal_the_computation(series, "prometheus", fleet, first_hour)


@prometheus_mark
@pytest.mark.django_db
def test_prometheus_puts_each_sample_in_exactly_one_hour(prometheus_fleet, fleet):
    base_url, first_hour, _series = prometheus_fleet
    source = hourly_source(base_url, "prom-b", pool=fleet["h100"])
    tsdb.pull_hourly(source, start=first_hour, end=first_hour + 2 * HOUR)
    rows = {
        row.hour: (row.samples, row.utilization_pct)
        for row in GpuDeviceHour.objects.filter(device__uuid="GPU-boundary-0001")
    }
    assert rows == {first_hour: (2, 15.0), first_hour + HOUR: (2, 70.0)}


@victoria_metrics_mark
@pytest.mark.django_db
def test_beat_pulls_one_chunk_of_complete_hours_a_tick(victoria_metrics, fleet):
    from apps.telemetry.pull.tasks import pull_source_task

    first_hour, now = first_hour_now()
    victoria_metrics.load(fleet_series(first_hour, "vm-beat"))
    source = hourly_source(victoria_metrics.base_url, "vm-beat", pulled_until=first_hour - 2 * HOUR)
    assert pull_source_task(source.pk) == ImportRun.Status.SUCCEEDED
    source.refresh_from_db()
    # One chunk (a day at most) a tick: here every complete hour up to now.
    assert source.pulled_until == tsdb.complete_until(timezone.now())
    assert GpuDeviceHour.objects.count() == 11 * HOURS_LOADED + 1
    assert pull_source_task(source.pk) == "nothing due"


@pytest.mark.django_db
def test_label_filters_stored_past_the_checks_fail_the_run_with_what_to_do():
    source = PullSourceFactory(
        name="typed in the admin",
        kind=PullSource.Kind.PROMETHEUS_HOURLY,
        url=f"http://127.0.0.1:{tsdb_servers.free_port()}",
        label_filters="cluster=a",
    )
    run = tsdb.pull_hourly(source, now=timezone.now())
    assert run.status == ImportRun.Status.FAILED
    assert "label filters are not PromQL label matchers" in run.message
    assert "correct them on the pull-sources page" in run.message
