"""Importing real telemetry files and rolling them up by the hour, checked against
independent computations (Python's csv/statistics over the same files, or by hand)."""

import csv
import io
import statistics
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.pools.models import Pool, Workload, WorkloadKind
from apps.telemetry.ingest import storage
from apps.telemetry.models import (
    GpuDevice,
    GpuSample,
    HostnameRule,
    ImportRun,
    PoolHourlyUsage,
    RequestSample,
    WorkloadHourlyRequests,
)
from apps.telemetry.rollups import hourly

DATA = Path(__file__).resolve().parent.parent / "data"
SCRAPES = sorted((DATA / "dcgm-exporter" / "scrapes").glob("*.prom"))
NVIDIA_SMI = sorted((DATA / "nvidia-smi" / "query_gpu_csv").glob("*.csv"))
AZURE_CODE = DATA / "traces" / "azure-llm-2023" / "AzureLLMInferenceTrace_code.csv"
ALIBABA = DATA / "traces" / "alibaba-genai-2026" / "pod_gpu_duty_cycle_anon_head5000.csv"


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def inference_workload(pool, architecture):
    return Workload.objects.create(
        name="Code assistant",
        slug="code-assistant",
        kind=WorkloadKind.API_SERVICE,
        model_architecture=architecture,
        pool=pool,
        gpu_count=8,
    )


@pytest.mark.django_db
@pytest.mark.parametrize("path", SCRAPES, ids=lambda path: path.stem)
def test_every_dcgm_scrape_imports_once(path, pool):
    first = run(
        "import_telemetry",
        str(path),
        "--format",
        "dcgm",
        "--pool",
        pool.slug,
        "--scraped-at",
        "2026-11-01T10:15:00+00:00",
    )
    samples = GpuSample.objects.count()
    assert samples > 0
    assert first.startswith(f"{samples} rows accepted, 0 duplicates skipped, 0 rows rejected")
    again = run(
        "import_telemetry",
        str(path),
        "--format",
        "dcgm",
        "--pool",
        pool.slug,
        "--scraped-at",
        "2026-11-01T10:15:00+00:00",
    )
    assert again.startswith(f"0 rows accepted, {samples} duplicates skipped, 0 rows rejected")
    assert GpuSample.objects.count() == samples
    assert set(GpuDevice.objects.values_list("pool_id", flat=True)) == {pool.pk}
    assert ImportRun.objects.filter(status="succeeded").count() == 2


@pytest.mark.django_db
def test_every_nvidia_smi_capture_imports(pool):
    for path in NVIDIA_SMI:
        output = run("import_telemetry", str(path), "--format", "nvidia-smi", "--pool", pool.slug)
        assert "0 rows rejected" in output, (path.name, output)
    # Each capture holds one GPU reading at its own time; all share one masked UUID.
    assert GpuSample.objects.count() == len(NVIDIA_SMI)


@pytest.mark.django_db
def test_alibaba_duty_cycle_imports_through_a_column_mapping(pool):
    output = run(
        "import_telemetry",
        str(ALIBABA),
        "--format",
        "csv",
        "--pool",
        pool.slug,
        "--columns",
        "timestamp=timestamp_anon,device=container_ip,utilization_pct=value",
    )
    with ALIBABA.open() as handle:
        rows = list(csv.DictReader(handle))
    distinct = {(row["container_ip"], row["timestamp_anon"]) for row in rows}
    assert output.startswith(f"{len(distinct)} rows accepted")
    assert GpuDevice.objects.count() == len({row["container_ip"] for row in rows})


@pytest.mark.django_db
def test_azure_trace_imports_and_rolls_up_to_hand_counted_hours(inference_workload):
    output = run(
        "import_requests", str(AZURE_CODE), "--workload", "code-assistant", "--format", "azure-llm"
    )
    with AZURE_CODE.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert output == f"{len(rows)} rows accepted, 0 duplicates skipped, 0 rows rejected\n"
    again = run(
        "import_requests", str(AZURE_CODE), "--workload", "code-assistant", "--format", "azure-llm"
    )
    assert again.startswith(f"0 rows accepted, {len(rows)} duplicates skipped")

    run("rollup_usage", "--all")
    expected_requests, expected_input = Counter(), Counter()
    for row in rows:
        hour = datetime.fromisoformat(row["TIMESTAMP"][:26]).replace(
            minute=0, second=0, microsecond=0, tzinfo=UTC
        )
        expected_requests[hour] += 1
        expected_input[hour] += int(row["ContextTokens"])
    hourly = {
        row.hour: row for row in WorkloadHourlyRequests.objects.filter(workload=inference_workload)
    }
    assert {hour: row.requests for hour, row in hourly.items()} == dict(expected_requests)
    assert {hour: row.input_tokens for hour, row in hourly.items()} == dict(expected_input)
    assert all(row.errors == 0 for row in hourly.values())


@pytest.mark.django_db
def test_bad_rows_reject_the_file_unless_skipped(tmp_path, pool):
    path = tmp_path / "gpus.csv"
    path.write_text(
        "time,gpu,util\n"
        "2026-11-01T10:00:00Z,GPU-a,50\n"
        "2026-11-01T10:01:00Z,GPU-a,140\n"
        "2026-11-01T10:02:00Z,GPU-a,abc\n"
        "2026-11-01T10:03:00Z,GPU-a,70\n"
    )
    arguments = [
        "import_telemetry",
        str(path),
        "--format",
        "csv",
        "--pool",
        pool.slug,
        "--columns",
        "timestamp=time,device=gpu,utilization_pct=util",
    ]
    with pytest.raises(CommandError, match="line 3.*140.*0–100"):
        run(*arguments)
    assert not GpuSample.objects.exists() and not GpuDevice.objects.exists()
    rejected = ImportRun.objects.get()
    assert rejected.status == "rejected" and rejected.rows_rejected == 2
    assert [error["line"] for error in rejected.errors] == [3, 4]

    output = run(*arguments, "--skip-bad-rows")
    assert output.startswith("2 rows accepted, 0 duplicates skipped, 2 rows rejected")
    assert sorted(GpuSample.objects.values_list("utilization_pct", flat=True)) == [50.0, 70.0]


@pytest.mark.django_db
def test_unknown_mapping_column_and_bad_arguments_are_named(tmp_path, pool):
    path = tmp_path / "gpus.csv"
    path.write_text("time,gpu,util\n2026-11-01T10:00:00Z,GPU-a,50\n")
    with pytest.raises(CommandError, match="utilisation"):
        run(
            "import_telemetry",
            str(path),
            "--format",
            "csv",
            "--columns",
            "timestamp=time,device=gpu,utilisation=util",
        )
    with pytest.raises(CommandError, match="--pool: no pool"):
        run(
            "import_telemetry",
            str(path),
            "--format",
            "csv",
            "--pool",
            "nope",
            "--columns",
            "timestamp=time,device=gpu,utilization_pct=util",
        )
    with pytest.raises(CommandError, match="--tz: unknown time zone"):
        run(
            "import_telemetry",
            str(path),
            "--format",
            "csv",
            "--tz",
            "Mars/Olympus",
            "--columns",
            "timestamp=time,device=gpu,utilization_pct=util",
        )


def _write_samples(path, samples):
    path.write_text(
        "time,gpu,host,util,mem,power\n"
        + "".join(
            f"{moment.isoformat()},{gpu},{host},{util},{mem},{power}\n"
            for moment, gpu, host, util, mem, power in samples
        )
    )


COLUMNS = (
    "timestamp=time,device=gpu,hostname=host,utilization_pct=util,memory_used_mib=mem,power_w=power"
)


@pytest.mark.django_db
def test_hourly_rollup_matches_a_hand_computation(tmp_path, pool):
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    samples = [
        # GPU a: 40 and 80 in 10:00 → mean 60; 20 at 11:00.
        (ten + timedelta(minutes=5), "GPU-a", "node-1", 40, 1000, 300),
        (ten + timedelta(minutes=35), "GPU-a", "node-1", 80, 3000, 500),
        (ten + timedelta(hours=1, minutes=1), "GPU-a", "node-1", 20, 500, 200),
        # GPU b: 100 at 10:59:59 (still 10:00) → mean 100.
        (ten + timedelta(minutes=59, seconds=59), "GPU-b", "node-1", 100, 2000, 700),
    ]
    path = tmp_path / "samples.csv"
    _write_samples(path, samples)
    run("import_telemetry", str(path), "--format", "csv", "--pool", pool.slug, "--columns", COLUMNS)
    run("rollup_usage", "--all")

    first, second = PoolHourlyUsage.objects.filter(pool=pool).order_by("hour")
    # 10:00 — two reporting GPUs: busy = 0.60 + 1.00 = 1.6 GPU-hours of 16 capacity.
    assert first.hour == ten
    assert first.reporting_gpus == 2
    assert first.capacity_gpu_hours == pool.gpu_count
    assert first.busy_gpu_hours == pytest.approx(1.6)
    assert first.avg_utilization_pct == pytest.approx(80.0)  # 100 × 1.6 ÷ 2
    assert first.max_utilization_pct == pytest.approx(100.0)
    assert first.max_memory_used_mib == 3000
    # No energy counter: mean power × 1 h per GPU = (400 W + 700 W) → 1.1 kWh.
    assert first.energy_kwh == pytest.approx(1.1)
    # 11:00 — GPU a alone at 20 %.
    assert second.reporting_gpus == 1
    assert second.busy_gpu_hours == pytest.approx(0.2)
    assert second.energy_kwh == pytest.approx(0.2)


@pytest.mark.django_db
def test_energy_counter_deltas_beat_mean_power(pool):
    from apps.telemetry.ingest.parsers.rows import DeviceKey, GpuSampleRow, ParseResult

    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    rows = [
        GpuSampleRow(
            line_number=index + 1,
            device=DeviceKey("GPU-e"),
            timestamp=ten + timedelta(minutes=20 * index),
            utilization_pct=50.0,
            power_w=999.0,
            energy_mj=1e9 + index * 1.2e9,
        )
        for index in range(3)
    ]
    storage.import_gpu_samples(ParseResult(rows=rows, errors=[]), pool=pool)
    hourly.rollup_pool_hours(pool.pk, ten, ten + timedelta(hours=1))
    # The counter rose 2.4·10⁹ mJ = 2.4e9 ÷ 3.6e9 kWh within the hour.
    assert PoolHourlyUsage.objects.get().energy_kwh == pytest.approx(2.4e9 / 3.6e9)


@pytest.mark.django_db
def test_unknown_devices_wait_and_count_once_assigned(tmp_path, pool):
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    path = tmp_path / "samples.csv"
    _write_samples(path, [(ten, "GPU-x", "far-away-7", 30, 100, 100)])
    output = run("import_telemetry", str(path), "--format", "csv", "--columns", COLUMNS)
    assert "1 waiting for a pool" in output
    device = GpuDevice.objects.get()
    assert device.pool is None and device.assignment == "unassigned"
    assert GpuSample.objects.filter(device=device).count() == 1  # kept, not dropped
    run("rollup_usage", "--all")
    assert not PoolHourlyUsage.objects.exists()

    device.pool, device.assignment = pool, GpuDevice.Assignment.MANUAL
    device.save()
    run("rollup_usage", "--all")
    assert PoolHourlyUsage.objects.get().busy_gpu_hours == pytest.approx(0.3)


@pytest.mark.django_db
def test_hostname_rules_assign_new_devices(tmp_path, pool):
    HostnameRule.objects.create(pool=pool, hostname_pattern="gpu-sh-*")
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    path = tmp_path / "samples.csv"
    _write_samples(
        path, [(ten, "GPU-1", "gpu-sh-01", 10, 1, 1), (ten, "GPU-2", "gpu-bj-01", 10, 1, 1)]
    )
    run("import_telemetry", str(path), "--format", "csv", "--columns", COLUMNS)
    assert GpuDevice.objects.get(uuid="GPU-1").pool == pool
    assert GpuDevice.objects.get(uuid="GPU-1").assignment == "rule"
    assert GpuDevice.objects.get(uuid="GPU-2").pool is None


@pytest.mark.django_db
def test_only_touched_hours_are_queued_and_one_drain_is_asked_for(
    tmp_path, pool, django_capture_on_commit_callbacks
):
    from apps.core.models import OutboxTask
    from apps.telemetry.models import PendingRollup

    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    rows = [(ten + timedelta(hours=offset), "GPU-a", "n", 10, 1, 1) for offset in (0, 1, 5)]
    path = tmp_path / "samples.csv"
    _write_samples(path, rows)
    with django_capture_on_commit_callbacks() as callbacks:
        run(
            "import_telemetry",
            str(path),
            "--format",
            "csv",
            "--columns",
            COLUMNS,
            "--pool",
            pool.slug,
        )
    assert sorted(PendingRollup.objects.values_list("hour", flat=True)) == [
        ten,
        ten + timedelta(hours=1),
        ten + timedelta(hours=5),
    ]
    # One drain for the whole import, whatever the number of hours it touched.
    assert [task.name for task in OutboxTask.objects.all()] == ["telemetry.rollup_pending"]
    assert len(callbacks) == 1
    # 10:00–12:00 is one contiguous range, 15:00–16:00 another: two rollups.
    assert hourly.hour_ranges([ten, ten + timedelta(hours=1), ten + timedelta(hours=5)]) == [
        (ten, ten + timedelta(hours=2)),
        (ten + timedelta(hours=5), ten + timedelta(hours=6)),
    ]
    assert hourly.rollup_pending() == (3, 3)
    assert not PendingRollup.objects.exists()


@pytest.mark.django_db
def test_request_p95_and_errors_per_hour(tmp_path, inference_workload):
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    latencies = [120, 80, 300, 95, 410, 150, 99, 101, 1000, 60, 75, 88]
    lines = ["ts,in,out,lat,status"] + [
        f"{(ten + timedelta(seconds=index)).isoformat()},{100 + index},{10},{latency},"
        f"{'500' if index in (3, 7) else '200'}"
        for index, latency in enumerate(latencies)
    ]
    path = tmp_path / "requests.csv"
    path.write_text("\n".join(lines) + "\n")
    run(
        "import_requests",
        str(path),
        "--workload",
        inference_workload.slug,
        "--format",
        "csv",
        "--columns",
        "timestamp=ts,input_tokens=in,output_tokens=out,latency_ms=lat,status=status",
    )
    run("rollup_usage", "--all")
    hour = WorkloadHourlyRequests.objects.get()
    assert hour.requests == len(latencies)
    assert hour.errors == 2
    assert hour.output_tokens == 10 * len(latencies)
    # Independent p95: Python's statistics.quantiles, "inclusive" = linear interpolation.
    expected = statistics.quantiles(latencies, n=100, method="inclusive")[94]
    assert hour.p95_latency_ms == pytest.approx(expected)
    assert RequestSample.objects.count() == len(latencies)


def test_hour_ranges_merge_only_adjacent_hours():
    base = datetime(2026, 1, 1, tzinfo=UTC)
    hours = [base + timedelta(hours=offset) for offset in (3, 0, 1, 1, 7)]
    assert hourly.hour_ranges(hours) == [
        (base, base + timedelta(hours=2)),
        (base + timedelta(hours=3), base + timedelta(hours=4)),
        (base + timedelta(hours=7), base + timedelta(hours=8)),
    ]


@pytest.mark.django_db
def test_purge_keeps_recent_samples_and_every_rollup(pool, settings):
    from django.utils import timezone

    from apps.telemetry.ingest.parsers.rows import DeviceKey, GpuSampleRow, ParseResult
    from apps.telemetry.models import PurgeRun
    from apps.telemetry.rollups import partitions, retention
    from apps.telemetry.tasks import purge_raw_samples_task

    settings.TELEMETRY_RAW_RETENTION_DAYS = 14
    # Partitions of days before the horizon that earlier tests of this process made (a
    # worker's or a committed import's, which the flush between tests empties but keeps)
    # go first: the old sample's day has none, and the purge has no other to drop.
    partitions.drop_day_partitions_before(retention.raw_retention_horizon())
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    old, recent = now - timedelta(days=20), now - timedelta(days=2)
    rows = [
        GpuSampleRow(line_number=1, device=DeviceKey("GPU-p"), timestamp=old, utilization_pct=10.0),
        GpuSampleRow(
            line_number=2, device=DeviceKey("GPU-p"), timestamp=recent, utilization_pct=90.0
        ),
    ]
    storage.import_gpu_samples(ParseResult(rows=rows, errors=[]), pool=pool)
    run("rollup_usage", "--all")
    assert PoolHourlyUsage.objects.count() == 2
    purge = PurgeRun.objects.get(pk=purge_raw_samples_task())
    # The old sample sits in DEFAULT (its day has no partition): deleted, not dropped.
    assert (purge.rows_deleted, purge.partitions_dropped) == (1, [])
    assert list(GpuSample.objects.values_list("timestamp", flat=True)) == [recent]
    assert PoolHourlyUsage.objects.count() == 2  # rollups are kept forever


# --- The sample table's key, touched pool-hours, and rollups queued by the pull channels


def _row(device: str, moment: datetime, utilization: float, line: int = 1):
    from apps.telemetry.ingest.parsers.rows import DeviceKey, GpuSampleRow

    return GpuSampleRow(
        line_number=line, device=DeviceKey(device), timestamp=moment, utilization_pct=utilization
    )


def _import(rows, **options):
    from apps.telemetry.ingest.parsers.rows import ParseResult

    return storage.import_gpu_samples(ParseResult(rows=rows, errors=[]), **options)


def _other_pool(pool):
    other = Pool.objects.get(pk=pool.pk)
    other.pk, other.name, other.slug = None, "Other pool", "other-pool"
    other.save()
    return other


@pytest.mark.django_db
def test_the_sample_table_is_keyed_by_device_and_timestamp():
    """docs/development/benchmarks.md, finding 2: the primary key is the uniqueness rule, with no
    surrogate id, no second unique index and no index on device_id alone."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.attname FROM pg_index AS i JOIN pg_attribute AS a "
            "ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = 'telemetry_gpusample'::regclass AND i.indisprimary "
            "ORDER BY array_position(i.indkey::int2[], a.attnum)"
        )
        primary_key = [name for (name,) in cursor.fetchall()]
        cursor.execute(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index "
            "WHERE indrelid = 'telemetry_gpusample'::regclass AND NOT indisprimary"
        )
        other_indexes = [definition for (definition,) in cursor.fetchall()]
        cursor.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = 'telemetry_gpusample'::regclass AND contype = 'f'"
        )
        foreign_keys = [definition for (definition,) in cursor.fetchall()]
        cursor.execute(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'telemetry_gpusample'::regclass "
            "AND attname = 'id' AND NOT attisdropped"
        )
        id_columns = cursor.fetchone()[0]
    assert primary_key == ["device_id", "timestamp"]
    assert len(other_indexes) == 1 and other_indexes[0].endswith('("timestamp")')
    assert len(foreign_keys) == 1
    assert "(device_id) REFERENCES telemetry_gpudevice(id)" in foreign_keys[0]
    assert id_columns == 0
    assert GpuSample._meta.pk.name == "pk"


@pytest.mark.django_db
def test_the_same_rows_imported_twice_are_stored_once(pool):
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    rows = [
        _row(f"GPU-{gpu}", ten + timedelta(minutes=minute), 10.0 * gpu)
        for gpu in range(3)
        for minute in range(4)
    ]
    # Equal but not identical objects: the importer's caches must not tell them apart.
    repeated = _row("GPU-0", datetime(2026, 11, 1, 10, tzinfo=UTC), 99.0)
    first = _import([*rows, repeated], pool=pool)
    assert (first.accepted, first.duplicates) == (12, 1)
    second = _import(rows, pool=pool)
    assert (second.accepted, second.duplicates) == (0, 12)
    assert GpuSample.objects.count() == 12
    # The first reading of an instant is the one kept.
    kept = GpuSample.objects.get(device__uuid="GPU-0", timestamp=ten)
    assert kept.utilization_pct == 0.0
    assert set(GpuSample.objects.values_list("device__uuid", flat=True)) == {
        "GPU-0",
        "GPU-1",
        "GPU-2",
    }


@pytest.mark.django_db
def test_touched_pool_hours_are_each_pool_hour_with_a_sample(pool):
    other = _other_pool(pool)
    HostnameRule.objects.create(pool=other, hostname_pattern="other-*")
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    from apps.telemetry.ingest.parsers.rows import DeviceKey, GpuSampleRow

    def row(device, hostname, moment):
        return GpuSampleRow(
            line_number=1,
            device=DeviceKey(device),
            timestamp=moment,
            hostname=hostname,
            utilization_pct=5.0,
        )

    rows = [
        row("GPU-a", "other-1", ten),
        row("GPU-b", "unmatched", ten + timedelta(hours=3)),  # no pool: touches nothing
        row("GPU-a", "other-1", ten + timedelta(minutes=59, seconds=59)),
        row("GPU-a", "other-1", ten + timedelta(hours=1)),
        row("GPU-c", "other-2", datetime(2026, 11, 1, 10, tzinfo=UTC)),  # equal, not identical
    ]
    summary = _import(rows)
    assert summary.touched_pool_hours == {(other.pk, ten), (other.pk, ten + timedelta(hours=1))}
    assert summary.unassigned_devices == 1

    # With the import's pool, new devices join it; GPU-a keeps the pool it has.
    later = _import(
        [row("GPU-d", "x", ten + timedelta(hours=2)), row("GPU-a", "y", ten)], pool=pool
    )
    assert later.touched_pool_hours == {(pool.pk, ten + timedelta(hours=2)), (other.pk, ten)}


@pytest.mark.django_db
def test_rollups_are_queued_with_the_samples_and_only_with_them(pool):
    from django.db import transaction

    from apps.telemetry.models import PendingRollup

    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    rows = [_row("GPU-q", ten + timedelta(minutes=30 * step), 40.0) for step in range(3)]
    summary = _import(rows, pool=pool)
    queued = dict(PendingRollup.objects.values_list("hour", "token"))
    assert (
        set(queued)
        == {ten, ten + timedelta(hours=1)}
        == {h for _p, h in summary.touched_pool_hours}
    )
    assert not PoolHourlyUsage.objects.exists()

    # Touched again: still one row per pool-hour, with a new token.
    _import(rows[:1], pool=pool)
    again = dict(PendingRollup.objects.values_list("hour", "token"))
    assert set(again) == set(queued)
    assert (
        again[ten] != queued[ten]
        and again[ten + timedelta(hours=1)] == queued[ten + timedelta(hours=1)]
    )

    # An import rolled back queues nothing; one that commits queues exactly its hour.
    PendingRollup.objects.all().delete()
    with pytest.raises(RuntimeError), transaction.atomic():
        _import([_row("GPU-q", ten + timedelta(hours=5), 1.0)], pool=pool)
        raise RuntimeError("the pull failed after the import")
    assert not PendingRollup.objects.exists()
    _import([_row("GPU-q", ten + timedelta(hours=6), 1.0)], pool=pool)
    assert list(PendingRollup.objects.values_list("pool_id", "hour")) == [
        (pool.pk, ten + timedelta(hours=6))
    ]


@pytest.mark.django_db
def test_the_drain_rolls_up_queued_hours_and_keeps_those_touched_meanwhile(pool, monkeypatch):
    from apps.telemetry.models import PendingRollup

    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    other = _other_pool(pool)
    _import(
        [_row("GPU-1", ten, 30.0), _row("GPU-1", ten + timedelta(hours=1), 50.0)],
        pool=pool,
    )
    _import([_row("GPU-2", ten + timedelta(hours=4), 70.0)], pool=other)

    # While the drain rolls up pool's 10:00–12:00, another scrape stores a sample at
    # 10:30 and queues 10:00 again, as a pull committing meanwhile would.
    original = hourly.rollup_pool_hours
    late = []

    def rollup_then_a_scrape_lands(pool_id, start, end):
        written = original(pool_id, start, end)
        if pool_id == pool.pk and not late:
            late.append(
                _import(
                    [_row("GPU-3", ten + timedelta(minutes=30), 90.0)],
                    pool=pool,
                )
            )
        return written

    monkeypatch.setattr(hourly, "rollup_pool_hours", rollup_then_a_scrape_lands)
    assert hourly.rollup_pending() == (3, 3)
    assert list(PendingRollup.objects.values_list("pool_id", "hour")) == [(pool.pk, ten)]
    hours = dict(PoolHourlyUsage.objects.filter(pool=pool).values_list("hour", "busy_gpu_hours"))
    assert hours == {ten: pytest.approx(0.3), ten + timedelta(hours=1): pytest.approx(0.5)}
    assert PoolHourlyUsage.objects.get(pool=other).busy_gpu_hours == pytest.approx(0.7)

    # The next drain picks the late sample up, and then nothing is left.
    monkeypatch.setattr(hourly, "rollup_pool_hours", original)
    assert hourly.rollup_pending() == (1, 1)
    assert PoolHourlyUsage.objects.get(pool=pool, hour=ten).busy_gpu_hours == pytest.approx(1.2)
    assert not PendingRollup.objects.exists()
    assert hourly.rollup_pending() == (0, 0)


@pytest.mark.django_db
def test_rollup_usage_also_drains_the_queue(pool):
    from apps.telemetry.models import PendingRollup

    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    _import([_row("GPU-u", ten, 25.0)], pool=pool)
    # Without --all only the last 48 hours are redone, which 2026-11-01 may not be in.
    output = run("rollup_usage")
    assert "(1 of them queued by imports)" in output
    assert not PendingRollup.objects.exists()
    assert PoolHourlyUsage.objects.get(pool=pool, hour=ten).busy_gpu_hours == pytest.approx(0.25)


@pytest.mark.django_db
def test_range_rollup_tasks_left_in_the_outbox_become_queued_hours(pool, inference_workload):
    """The migration that brought the drain turns the per-range rollup tasks an outbox
    still holds into the hours they named, so none of them is lost at an upgrade."""
    from importlib import import_module

    from django.apps import apps as registry

    from apps.core.models import OutboxTask
    from apps.telemetry.models import PendingRollup, PendingWorkloadRollup

    migration = import_module("apps.telemetry.migrations.0012_drain_queue_for_workload_hours")
    ten = datetime(2026, 11, 1, 10, tzinfo=UTC)
    OutboxTask.objects.create(
        name="telemetry.rollup_pool_hours",
        args=[pool.pk, ten.isoformat(), (ten + timedelta(hours=3)).isoformat()],
    )
    OutboxTask.objects.create(
        name="telemetry.rollup_workload_hours",
        args=[inference_workload.pk, ten.isoformat(), (ten + timedelta(hours=1)).isoformat()],
    )
    OutboxTask.objects.create(name="telemetry.rollup_pending")
    migration.queue_the_ranges_of_range_tasks(registry, None)
    assert sorted(PendingRollup.objects.values_list("hour", flat=True)) == [
        ten + timedelta(hours=offset) for offset in range(3)
    ]
    assert list(PendingWorkloadRollup.objects.values_list("workload_id", "hour")) == [
        (inference_workload.pk, ten)
    ]
    assert list(OutboxTask.objects.values_list("name", flat=True)) == ["telemetry.rollup_pending"]
