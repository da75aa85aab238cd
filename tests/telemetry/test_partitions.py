"""Raw samples in daily partitions on PostgreSQL (apps/telemetry/rollups/partitions.py): the
partitions after migrate, made ahead by beat's task, made on demand for a day that has
none (rows wait in DEFAULT, nothing lost), their locks never failing an import, retention
dropping whole days while the hourly rollups, the in-window samples and the reports stay
exactly as they were, and the page that shows them."""

import json
import threading
import time
import uuid
from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from apps.core.models import OutboxTask
from apps.reports.cache import bump_reports_version
from apps.telemetry import tasks
from apps.telemetry.ingest import storage
from apps.telemetry.ingest.parsers.rows import DeviceKey, GpuSampleRow, ParseResult
from apps.telemetry.models import GpuDevice, GpuSample, PoolDailyUsage, PoolHourlyUsage, PurgeRun
from apps.telemetry.rollups import hourly, partitions, retention
from tests.conftest import CeleryWorker
from tests.waiting import wait_until


def _sql(statement: str, params=None):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else cursor.rowcount


def _today() -> date:
    return timezone.now().astimezone(UTC).date()


def _partition_names() -> list[str]:
    return [
        name
        for (name,) in _sql(
            "SELECT child.relname FROM pg_inherits JOIN pg_class AS child "
            "ON child.oid = pg_inherits.inhrelid "
            "WHERE pg_inherits.inhparent = 'telemetry_gpusample'::regclass ORDER BY 1"
        )
    ]


def _where_rows_are() -> dict[tuple[int, datetime], str]:
    """(device id, timestamp) → the partition that holds the row, read from tableoid."""
    return {
        (device_id, moment): table
        for device_id, moment, table in _sql(
            'SELECT device_id, "timestamp", tableoid::regclass::text FROM telemetry_gpusample'
        )
    }


def _expected_partition(moment: datetime, names: set[str]) -> str:
    """The partition a row belongs in, from its UTC day alone."""
    name = f"telemetry_gpusample_p{moment.astimezone(UTC):%Y%m%d}"
    return name if name in names else "telemetry_gpusample_default"


def _device(pool=None, uuid="GPU-part-0") -> GpuDevice:
    moment = timezone.now()
    return GpuDevice.objects.create(
        key=uuid, uuid=uuid, pool=pool, first_seen_at=moment, last_seen_at=moment
    )


def _rows(device_uuid: str, moments, utilization_pct=40.0) -> list[GpuSampleRow]:
    return [
        GpuSampleRow(
            line_number=index + 1,
            device=DeviceKey(device_uuid),
            timestamp=moment,
            utilization_pct=utilization_pct + index % 7,
            memory_used_mib=1000.0 + index,
        )
        for index, moment in enumerate(moments)
    ]


def _import(rows, pool):
    return storage.import_gpu_samples(ParseResult(rows=rows, errors=[]), pool=pool)


# --- The partitions after migrate


@pytest.mark.django_db
def test_the_samples_table_is_partitioned_by_day_after_migrate():
    [(strategy, key_column)] = _sql(
        "SELECT partstrat, attname FROM pg_partitioned_table "
        "JOIN pg_attribute ON attrelid = partrelid AND attnum = partattrs[0] "
        "WHERE partrelid = 'telemetry_gpusample'::regclass"
    )
    assert (strategy, key_column) == ("r", "timestamp")
    # The key and the timestamp index are partitioned indexes (relkind I) and the foreign
    # key to the device is on the parent, so every partition has it.
    kinds = dict(
        _sql(
            "SELECT relname, relkind FROM pg_class WHERE relname IN "
            "('telemetry_gpusample_pkey', 'gpu_sample_timestamp')"
        )
    )
    assert kinds == {"telemetry_gpusample_pkey": "I", "gpu_sample_timestamp": "I"}
    [(foreign_key,)] = _sql(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = 'telemetry_gpusample'::regclass AND contype = 'f'"
    )
    assert "REFERENCES telemetry_gpudevice(id)" in foreign_key
    # One partition per day from the retention horizon's day to the days ahead, and DEFAULT.
    first = retention.raw_retention_horizon().astimezone(UTC).date()
    last = _today() + timedelta(days=settings.TELEMETRY_PARTITION_DAYS_AHEAD)
    expected = {
        f"telemetry_gpusample_p{first + timedelta(days=offset):%Y%m%d}"
        for offset in range((last - first).days + 1)
    }
    names = set(_partition_names())
    assert expected <= names
    assert "telemetry_gpusample_default" in names
    # A partition's bounds are its UTC day: [00:00, next 00:00).
    bounds = dict(
        _sql(
            "SELECT relname, pg_get_expr(relpartbound, oid) FROM pg_class WHERE relname = %s",
            [partitions.partition_name(_today())],
        )
    )
    day = _today()
    assert bounds[partitions.partition_name(day)] == (
        f"FOR VALUES FROM ('{day} 00:00:00+00') TO ('{day + timedelta(days=1)} 00:00:00+00')"
    )


@pytest.mark.django_db
def test_rows_land_in_their_days_partition_at_the_bounds(pool):
    device = _device(pool)
    midnight = partitions.day_start(_today())
    moments = [midnight - timedelta(microseconds=1), midnight, midnight + timedelta(hours=23)]
    for moment in moments:
        GpuSample.objects.create(device=device, timestamp=moment, utilization_pct=10.0)
    where = _where_rows_are()
    names = set(_partition_names())
    assert [where[(device.pk, moment)] for moment in moments] == [
        partitions.partition_name(_today() - timedelta(days=1)),
        partitions.partition_name(_today()),
        partitions.partition_name(_today()),
    ]
    assert all(where[(device.pk, m)] == _expected_partition(m, names) for m in moments)


# --- Made ahead by beat


def test_beat_runs_the_partition_task_hourly_and_the_purge_after_midnight():
    entry = settings.CELERY_BEAT_SCHEDULE["create-sample-partitions"]
    assert entry["task"] == "telemetry.ensure_sample_partitions"
    assert entry["schedule"] == timedelta(hours=1)
    assert tasks.ensure_sample_partitions_task.name == "telemetry.ensure_sample_partitions"
    # At 00:10 UTC the horizon is a midnight: every expired day is a whole partition.
    purge = settings.CELERY_BEAT_SCHEDULE["purge-raw-telemetry"]["schedule"]
    assert (purge.hour, purge.minute) == ({0}, {10})
    ten_past = datetime(2026, 12, 1, 0, 10, 30, tzinfo=UTC)
    assert retention.raw_retention_horizon(ten_past) == datetime(
        2026, 12, 1, tzinfo=UTC
    ) - timedelta(days=settings.TELEMETRY_RAW_RETENTION_DAYS)


@pytest.mark.django_db
def test_the_beat_task_makes_the_missing_days_ahead_and_back():
    ahead = settings.TELEMETRY_PARTITION_DAYS_AHEAD
    missing = [_today() + timedelta(days=ahead), _today() + timedelta(days=ahead - 1)]
    missing.append(retention.raw_retention_horizon().astimezone(UTC).date())  # a backfill's day
    for day in missing:
        _sql(f"DROP TABLE {partitions.partition_name(day)}")
    assert not set(map(partitions.partition_name, missing)) & set(_partition_names())

    created = tasks.ensure_sample_partitions_task()

    assert created == 3
    assert set(map(partitions.partition_name, missing)) <= set(_partition_names())
    # Run again: nothing to do.
    assert tasks.ensure_sample_partitions_task() == 0
    # Tomorrow's run makes tomorrow's last day ahead.
    tomorrow = timezone.now() + timedelta(days=1)
    changes = retention.ensure_sample_partitions(now=tomorrow)
    assert changes.created == [_today() + timedelta(days=ahead + 1)]


# --- On demand: a day that has no partition


@pytest.mark.django_db
def test_an_import_into_days_without_a_partition_loses_nothing(pool):
    ahead = settings.TELEMETRY_PARTITION_DAYS_AHEAD
    # A node whose clock runs 30 days ahead, and a backfill of a day whose partition is gone.
    skewed = partitions.day_start(_today() + timedelta(days=ahead + 30)) + timedelta(hours=5)
    backfill_day = _today() - timedelta(days=3)
    _sql(f"DROP TABLE {partitions.partition_name(backfill_day)}")
    backfill = partitions.day_start(backfill_day) + timedelta(hours=7)
    moments = [skewed + timedelta(seconds=15 * step) for step in range(40)]
    moments += [backfill + timedelta(seconds=15 * step) for step in range(240)]
    rows = _rows("GPU-part-skew", moments)
    OutboxTask.objects.all().delete()
    from django.core.cache import cache

    cache.delete("telemetry:sample-partitions-requested")

    summary = _import(rows, pool)

    assert summary.accepted == len(moments) == 280
    where = _where_rows_are()
    assert set(where.values()) == {"telemetry_gpusample_default"}
    # The import asked for the days' partitions after its commit.
    assert list(OutboxTask.objects.values_list("name", flat=True)) == [
        "telemetry.ensure_sample_partitions"
    ]
    # Imported again while the rows still wait in DEFAULT: every row a duplicate.
    assert _import(rows, pool).accepted == 0
    stored_before = sorted(
        GpuSample.objects.values_list(
            "device_id", "timestamp", "utilization_pct", "memory_used_mib"
        )
    )

    tasks.ensure_sample_partitions_task()

    names = set(_partition_names())
    assert {
        partitions.partition_name(skewed.date()),
        partitions.partition_name(backfill_day),
    } <= names
    where = _where_rows_are()
    assert all(table == _expected_partition(moment, names) for (_d, moment), table in where.items())
    assert "telemetry_gpusample_default" not in where.values()
    stored_after = sorted(
        GpuSample.objects.values_list(
            "device_id", "timestamp", "utilization_pct", "memory_used_mib"
        )
    )
    assert stored_after == stored_before
    assert len(stored_after) == 280
    # In their own partitions now, the same rows are still duplicates.
    assert _import(rows, pool).accepted == 0
    # And the hours roll up from them: 240 samples of 40…46 % over 7:00–8:00.
    hourly.rollup_pool_hours(pool.pk, backfill, backfill + timedelta(hours=1))
    expected_busy = sum(40.0 + index % 7 for index in range(40, 280)) / 240 / 100
    hour = PoolHourlyUsage.objects.get(pool=pool, hour=backfill)
    assert hour.busy_gpu_hours == pytest.approx(expected_busy)


@pytest.mark.django_db
def test_rows_before_the_window_stay_in_default_and_no_partition_is_asked_for(pool):
    old = retention.raw_retention_horizon() - timedelta(days=2)
    OutboxTask.objects.all().delete()
    assert _import(_rows("GPU-part-old", [old]), pool).accepted == 1
    assert set(_where_rows_are().values()) == {"telemetry_gpusample_default"}
    assert not OutboxTask.objects.filter(name="telemetry.ensure_sample_partitions").exists()
    assert retention.ensure_sample_partitions().created == []


@pytest.mark.django_db(transaction=True)
def test_a_partition_change_never_fails_an_import_in_flight(pool, monkeypatch):
    """An import holds its devices' lock until it commits: the partition task gives up on
    the day after a short wait (LOCK_TIMEOUT) and leaves it for its next run; the import
    commits whole, and its rows in DEFAULT get their partition afterwards."""
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT", timedelta(milliseconds=300))
    monkeypatch.setattr(partitions, "_LOCK_RETRY_PAUSE_SECONDS", 0.05)
    device = _device(pool, "GPU-part-lock")
    day = _today() + timedelta(days=2)
    _sql(f"DROP TABLE {partitions.partition_name(day)}")
    database = connection.settings_dict
    url = (
        f"postgresql://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
        f"{database['PORT'] or 5432}/{database['NAME']}"
    )
    moment = partitions.day_start(day) + timedelta(hours=1)
    with psycopg.connect(url) as import_in_flight:
        # What an import does first: touch its devices, then store rows (into DEFAULT).
        import_in_flight.execute(
            "UPDATE telemetry_gpudevice SET last_seen_at = now() WHERE id = %s", [device.pk]
        )
        import_in_flight.execute(
            'INSERT INTO telemetry_gpusample (device_id, "timestamp", utilization_pct, pod, '
            "namespace, container) VALUES (%s, %s, 55.0, '', '', '')",
            [device.pk, moment],
        )
        started = time.monotonic()
        changes = retention.ensure_sample_partitions()
        waited_seconds = time.monotonic() - started
        assert changes.postponed == [day] and day not in changes.created
        # Three attempts of 0.3 s and two pauses, not an import's length.
        assert waited_seconds < 3
        # Meanwhile another write to an existing day goes through at once.
        other_started = time.monotonic()
        GpuSample.objects.create(device=device, timestamp=timezone.now(), utilization_pct=1.0)
        assert time.monotonic() - other_started < 1
        import_in_flight.commit()
    assert _where_rows_are()[(device.pk, moment)] == "telemetry_gpusample_default"
    assert retention.ensure_sample_partitions().created == [day]
    assert _where_rows_are()[(device.pk, moment)] == partitions.partition_name(day)


@pytest.mark.django_db(transaction=True)
def test_reads_go_on_while_a_partition_is_attached(pool):
    """ATTACH takes SHARE UPDATE EXCLUSIVE on the parent: a report-style read of the
    samples runs while the partition task holds its locks, not after."""
    device = _device(pool, "GPU-part-read")
    GpuSample.objects.create(device=device, timestamp=timezone.now(), utilization_pct=5.0)
    day = _today() + timedelta(days=3)
    _sql(f"DROP TABLE {partitions.partition_name(day)}")
    holding = threading.Event()
    release = threading.Event()
    original = partitions._set_lock_timeout

    def hold_after_locks(cursor):
        original(cursor)
        # Take the locks, then hold them while the main thread reads.
        cursor.execute("LOCK TABLE telemetry_gpudevice IN SHARE ROW EXCLUSIVE MODE")
        cursor.execute("LOCK TABLE telemetry_gpusample IN SHARE UPDATE EXCLUSIVE MODE")
        holding.set()
        release.wait(10)

    def make_partition():
        try:
            partitions._set_lock_timeout = hold_after_locks
            partitions.ensure_partitions(day, day)
        finally:
            partitions._set_lock_timeout = original
            connection.close()

    worker = threading.Thread(target=make_partition)
    worker.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        now = timezone.now()
        count = GpuSample.objects.filter(
            timestamp__gte=now - timedelta(hours=1), timestamp__lt=now + timedelta(hours=1)
        ).count()
        assert count == 1 and time.monotonic() - started < 1
    finally:
        release.set()
        worker.join(20)
    assert partitions.partition_name(day) in _partition_names()


# --- Retention drops whole days


def _purge_fixture(pool):
    """Samples every 20 min of two GPUs from 4 days before the horizon's day to 2 days after
    it, in partitions of their own (older days made as the migration would have), rolled up."""
    horizon = retention.raw_retention_horizon()
    horizon_day = horizon.astimezone(UTC).date()
    first_day = horizon_day - timedelta(days=4)
    # Days before the horizon that earlier tests of this process left partitions for (the
    # flush between tests empties them but keeps them) would be dropped beside these.
    partitions.drop_day_partitions_before(horizon)
    partitions.ensure_partitions(first_day, horizon_day)
    devices = [_device(pool, f"GPU-part-ret-{index}") for index in range(2)]
    start = partitions.day_start(first_day)
    end = partitions.day_start(horizon_day + timedelta(days=3))
    samples = []
    moment, step = start, 0
    while moment < end:
        for index, device in enumerate(devices):
            samples.append(
                GpuSample(
                    device=device,
                    timestamp=moment,
                    utilization_pct=float((step * 7 + index * 13) % 100),
                )
            )
        moment += timedelta(minutes=20)
        step += 1
    GpuSample.objects.bulk_create(samples)
    hourly.rollup_pool_hours(pool.pk, start, end)
    return horizon, first_day, start, end, samples


def _hourly(pool):
    return list(
        PoolHourlyUsage.objects.filter(pool=pool)
        .order_by("hour")
        .values_list("hour", "reporting_gpus", "busy_gpu_hours", "avg_utilization_pct")
    )


def _daily(pool):
    """(day, measured hours, busy GPU-hours) rows; the busy sum is rounded to 1e-9 GPU-h,
    since a day summed from its hours in another order differs in its last bits."""
    return [
        (day, hours, round(busy, 9))
        for day, hours, busy in PoolDailyUsage.objects.filter(pool=pool)
        .order_by("day")
        .values_list("day", "measured_hours", "busy_gpu_hours")
    ]


@pytest.mark.django_db
def test_retention_drops_whole_days_and_deletes_the_rest(pool, client, make_user):
    horizon, first_day, start, end, samples = _purge_fixture(pool)
    horizon_day = horizon.astimezone(UTC).date()
    # The days dropped, by hand: every day whose next midnight is at or before the horizon.
    dropped_days = [
        first_day + timedelta(days=offset)
        for offset in range(10)
        if partitions.day_start(first_day + timedelta(days=offset + 1)) <= horizon
    ]
    assert dropped_days == [first_day + timedelta(days=offset) for offset in range(4)]
    # One dropped day analysed (its estimate), the others never (counted instead).
    _sql(f"ANALYZE {partitions.partition_name(first_day)}")
    counted = {
        day: sum(1 for sample in samples if sample.timestamp.date() == day) for day in dropped_days
    }
    assert set(counted.values()) == {2 * 72}  # 2 GPUs × 72 samples a day
    deleted_by_hand = sum(
        1 for sample in samples if partitions.day_start(horizon_day) <= sample.timestamp < horizon
    )
    hourly_before, daily_before = _hourly(pool), _daily(pool)
    user = make_user("ops")
    client.force_login(user)
    report_url = (
        reverse("api-report-cost")
        + f"?start={start:%Y-%m-%dT%H:%M:%SZ}&end={end:%Y-%m-%dT%H:%M:%SZ}&group_by=pool"
    )
    report_before = client.get(report_url).json()

    run_id = tasks.purge_raw_samples_task()

    run = PurgeRun.objects.get(pk=run_id)
    assert run.status == PurgeRun.Status.SUCCEEDED and run.horizon == horizon
    assert [item["day"] for item in run.partitions_dropped] == [d.isoformat() for d in dropped_days]
    assert run.rows_dropped_estimate == sum(counted.values()) == 576
    assert run.rows_deleted == deleted_by_hand
    assert run.message == (
        f"Dropped 4 daily partitions ({dropped_days[0]} – {dropped_days[-1]}, about 576 rows, "
        f"{_size(run)}) and deleted {deleted_by_hand:,} rows before "
        f"{horizon:%Y-%m-%d %H:%M} UTC."
    )
    assert not set(map(partitions.partition_name, dropped_days)) & set(_partition_names())
    # Left: exactly the samples from the horizon on.
    kept = sorted((s.device_id, s.timestamp) for s in samples if s.timestamp >= horizon)
    assert sorted(GpuSample.objects.values_list("device_id", "timestamp")) == kept
    # Every hour holds all its samples or none (what retention.samples_held_q relies on).
    per_hour_before = _per_hour(s.timestamp for s in samples)
    per_hour_after = _per_hour(GpuSample.objects.values_list("timestamp", flat=True))
    assert all(per_hour_after.get(hour, 0) in (0, count) for hour, count in per_hour_before.items())
    # The rollups are untouched, and stay so through a recompute of the whole range and of
    # the pool's history: the dropped hours are final, the held ones rebuild the same.
    assert _hourly(pool) == hourly_before and _daily(pool) == daily_before
    hourly.rollup_pool_hours(pool.pk, start, end)
    hourly.rollup_pool_history(pool.pk)
    assert _hourly(pool) == hourly_before and _daily(pool) == daily_before
    bump_reports_version()
    assert client.get(report_url).json() == report_before

    # A second run finds nothing more: nothing counted twice.
    again = PurgeRun.objects.get(pk=tasks.purge_raw_samples_task())
    assert (again.partitions_dropped, again.rows_deleted) == ([], 0)
    assert again.message == (
        f"No daily partition to drop; deleted 0 rows before {again.horizon:%Y-%m-%d %H:%M} UTC."
    )


def _size(run) -> str:
    from django.template.defaultfilters import filesizeformat

    return filesizeformat(sum(item["size_bytes"] for item in run.partitions_dropped))


def _per_hour(moments) -> dict[datetime, int]:
    counts: dict[datetime, int] = {}
    for moment in moments:
        hour = moment.replace(minute=0, second=0, microsecond=0)
        counts[hour] = counts.get(hour, 0) + 1
    return counts


@pytest.mark.django_db(transaction=True)
def test_a_day_whose_lock_is_not_granted_is_deleted_instead_and_dropped_next_time(
    pool, monkeypatch
):
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT", timedelta(milliseconds=200))
    monkeypatch.setattr(partitions, "_LOCK_RETRY_PAUSE_SECONDS", 0.05)
    horizon = retention.raw_retention_horizon()
    old_day = horizon.astimezone(UTC).date() - timedelta(days=2)
    partitions.ensure_partitions(old_day, old_day)
    device = _device(pool, "GPU-part-busy")
    old = partitions.day_start(old_day)
    GpuSample.objects.bulk_create(
        GpuSample(device=device, timestamp=old + timedelta(hours=hour), utilization_pct=9.0)
        for hour in range(24)
    )
    database = connection.settings_dict
    url = (
        f"postgresql://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
        f"{database['PORT'] or 5432}/{database['NAME']}"
    )
    with psycopg.connect(url) as reader:
        # A long transaction that read the old day (a recompute, say) holds it.
        reader.execute('SELECT count(*) FROM telemetry_gpusample WHERE "timestamp" >= %s', [old])
        run = PurgeRun.objects.get(pk=tasks.purge_raw_samples_task())
        reader.rollback()
    assert run.status == PurgeRun.Status.SUCCEEDED
    assert run.partitions_postponed == [partitions.partition_name(old_day)]
    assert run.rows_deleted == 24 and not GpuSample.objects.filter(timestamp__lt=horizon).exists()
    assert run.message.endswith(
        "1 partition was in use: its rows are removed, and the table itself is dropped by "
        "the next run."
    )
    again = PurgeRun.objects.get(pk=tasks.purge_raw_samples_task())
    assert [item["name"] for item in again.partitions_dropped] == [
        partitions.partition_name(old_day)
    ]
    assert again.rows_dropped_estimate == 0


@pytest.mark.django_db(transaction=True)
def test_imports_and_reads_go_on_while_an_old_day_is_truncated(pool):
    """The purge's TRUNCATE locks the old day's partition alone: an insert of today's
    samples and a read of today's hours run while it is held (its commit, which unlinks
    the day's files, takes seconds for a large fleet)."""
    old_day = retention.raw_retention_horizon().astimezone(UTC).date() - timedelta(days=1)
    partitions.ensure_partitions(old_day, old_day)
    device = _device(pool, "GPU-part-trunc")
    GpuSample.objects.create(device=device, timestamp=partitions.day_start(old_day))
    database = connection.settings_dict
    url = (
        f"postgresql://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
        f"{database['PORT'] or 5432}/{database['NAME']}"
    )
    with psycopg.connect(url) as purge:
        purge.execute(f"TRUNCATE {partitions.partition_name(old_day)}")
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('lock_timeout', '1s', false)")
        try:
            now = timezone.now()
            GpuSample.objects.create(device=device, timestamp=now, utilization_pct=3.0)
            assert (
                GpuSample.objects.filter(
                    timestamp__gte=now - timedelta(minutes=5),
                    timestamp__lt=now + timedelta(minutes=5),
                ).count()
                == 1
            )
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('lock_timeout', '0', false)")
        purge.commit()
    assert not GpuSample.objects.filter(timestamp__lt=retention.raw_retention_horizon()).exists()


@pytest.mark.django_db
def test_a_purge_whose_worker_stopped_is_marked_interrupted():
    stale = timezone.now() - timedelta(seconds=settings.STALLED_RUN_AFTER_SECONDS + 60)
    run = PurgeRun.objects.create(status=PurgeRun.Status.RUNNING, heartbeat_at=stale)
    assert retention.reap_stalled_purges() == 1
    run.refresh_from_db()
    assert run.status == PurgeRun.Status.INTERRUPTED
    assert run.message.startswith("The worker stopped while purging raw samples (last heard")
    assert run.message.endswith("the next daily purge removes what it left.")


@pytest.mark.django_db
def test_a_failed_purge_says_what_to_do(monkeypatch):
    def broken(horizon):
        raise RuntimeError("disk full")

    monkeypatch.setattr(partitions, "drop_day_partitions_before", broken)
    with pytest.raises(RuntimeError):
        tasks.purge_raw_samples_task()
    run = PurgeRun.objects.get()
    assert run.status == PurgeRun.Status.FAILED
    assert run.message.startswith("The retention purge stopped with an error (RuntimeError: disk")
    assert "nothing is half-deleted; the next daily purge carries on" in run.message


# --- The storage page


@pytest.mark.django_db
def test_the_storage_page_shows_the_partitions_with_their_estimates(client, make_user, pool):
    device = _device(pool, "GPU-part-page")
    # Thirty minutes of today's, even in the first half hour after midnight (UTC).
    midnight = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    latest = max(timezone.now(), midnight + timedelta(minutes=30))
    GpuSample.objects.bulk_create(
        GpuSample(device=device, timestamp=latest - timedelta(minutes=m)) for m in range(30)
    )
    today = partitions.partition_name(_today())
    _sql(f"ANALYZE {today}")
    [(estimate, size_bytes)] = _sql(
        "SELECT reltuples::bigint, pg_total_relation_size(oid) FROM pg_class WHERE relname = %s",
        [today],
    )
    assert estimate == 30
    client.force_login(make_user("ops"))
    response = client.get(reverse("telemetry:storage"))
    assert response.status_code == 200
    rows = {row["partition"].name: row for row in response.context["rows"]}
    assert rows[today]["partition"].rows_estimate == 30
    assert rows[today]["partition"].size_bytes == size_bytes
    assert rows[today]["state"] == "held"
    assert rows["telemetry_gpusample_default"]["state"] == "default"
    page = response.content.decode()
    assert f"<code>{today}</code>" in page and "Rows (estimate)" in page
    client.force_login(make_user("lead"))
    assert client.get(reverse("telemetry:storage")).status_code == 403


@pytest.mark.django_db
def test_the_storage_page_in_chinese(client, make_user):
    PurgeRun.objects.create(
        status=PurgeRun.Status.SUCCEEDED,
        horizon=datetime(2026, 11, 17, 9, tzinfo=UTC),
        partitions_dropped=[
            {
                "name": "telemetry_gpusample_p20261115",
                "day": "2026-11-15",
                "rows_estimate": 5,
                "size_bytes": 2048,
            },
        ],
        rows_dropped_estimate=5,
        rows_deleted=3,
    )
    client.force_login(make_user("ops"))
    page = client.get(reverse("telemetry:storage"), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "样本存储" in page and "每日分区" in page
    assert "删除了 2026-11-17 09:00 UTC 之前的 3 行" in page
    assert json.dumps("Daily partitions")[1:-1] not in page


# --- At worker start


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_makes_the_missing_partitions_when_it_starts():
    """A real worker process: beat may have been down for days, so a worker asks for the
    partitions as soon as it is ready (celery's worker_ready) and makes them."""
    day = _today() + timedelta(days=settings.TELEMETRY_PARTITION_DAYS_AHEAD)
    _sql(f"DROP TABLE {partitions.partition_name(day)}")
    assert partitions.partition_name(day) not in _partition_names()
    worker = CeleryWorker(f"gpufleet-partitions-{uuid.uuid4().hex[:8]}", "celery-partitions.log")
    try:
        worker.wait_until_ready()
        wait_until(
            lambda: partitions.partition_name(day) in _partition_names(),
            timeout_seconds=60,
            what=f"the worker to make {partitions.partition_name(day)}",
        )
    finally:
        worker.stop()
    assert "telemetry.ensure_sample_partitions" in worker.log_path.read_text()
