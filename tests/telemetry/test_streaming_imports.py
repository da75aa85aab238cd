"""Imports stream their input: a file is parsed, staged and inserted a chunk of lines at a
time inside one transaction, so memory holds one chunk of rows, never the file.

Every chunked result is compared with the same input parsed whole (the parsers' one-shot
functions, unchanged) on the real sample files of tests/data (SOURCES.md), and an import
split into chunks of a few lines must store exactly what one chunk stores, count the same
rows, errors and warnings, and land whole or not at all.
"""

import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db.models import Sum

from apps.pools.models import Pool
from apps.telemetry.ingest import formats, importer, parsers, storage
from apps.telemetry.ingest.parsers.rows import DeviceKey, GpuSampleRow, ParseResult
from apps.telemetry.models import GpuDevice, GpuSample, ImportRun, PoolHourFlag, RequestSample
from tests.telemetry.helpers import COLUMNS, import_csv_command
from tests.waiting import wait_until

DATA = Path(__file__).resolve().parent.parent / "data"
ALIBABA = DATA / "traces/alibaba-genai-2026/pod_gpu_duty_cycle_anon_head5000.csv"
AZURE_CODE = DATA / "traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv"
NVIDIA_SMI = DATA / "nvidia-smi/query_gpu_csv"
DCGM_SCRAPE = DATA / "dcgm-exporter/scrapes/kops_aws_L4_driver580.prom"
ALIBABA_COLUMNS = {
    "timestamp": "timestamp_anon",
    "device": "container_ip",
    "utilization_pct": "value",
}
TEN = datetime(2026, 11, 1, 10, tzinfo=UTC)


def _chunked(iterate, source, chunk_rows, **kwargs) -> list:
    return list(iterate(source, chunk_rows=chunk_rows, **kwargs))


def _merged(chunks) -> tuple[list, list]:
    return (
        [row for chunk in chunks for row in chunk.rows],
        [error for chunk in chunks for error in chunk.errors],
    )


# The parsers: a chunked read equals the whole read, line numbers included


def test_a_csv_read_in_chunks_equals_the_csv_read_whole():
    text = ALIBABA.read_text()
    whole = parsers.parse_gpu_csv(text, columns=ALIBABA_COLUMNS)
    chunks = _chunked(
        parsers.iter_gpu_csv, parsers.FileLines(ALIBABA), 777, columns=ALIBABA_COLUMNS
    )
    # 5,000 data lines after the header, 777 lines a chunk: ⌈5000 / 777⌉ = 7 chunks.
    assert len(chunks) == 7
    rows, errors = _merged(chunks)
    assert rows == whole.rows and errors == whole.errors
    assert len(rows) + len(errors) == 5000
    assert rows[-1].line_number == 5001


def test_a_csv_with_bad_lines_keeps_their_line_numbers_across_chunks():
    lines = ["time,gpu,util"] + [
        f"{(TEN + timedelta(minutes=minute)).isoformat()},GPU-a,{50 if minute % 9 else 140}"
        for minute in range(40)
    ]
    text = "\n".join(lines) + "\n"
    whole = parsers.parse_gpu_csv(
        text, columns={"timestamp": "time", "device": "gpu", "utilization_pct": "util"}
    )
    rows, errors = _merged(
        _chunked(
            parsers.iter_gpu_csv,
            text,
            4,
            columns={"timestamp": "time", "device": "gpu", "utilization_pct": "util"},
        )
    )
    # minutes 0, 9, 18, 27, 36 read 140 %: lines 2, 11, 20, 29, 38
    assert [error.line_number for error in errors] == [2, 11, 20, 29, 38]
    assert errors == whole.errors and rows == whole.rows


@pytest.mark.parametrize(
    "name",
    [
        "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.csv",
        "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62__load.csv",
        "linux-x86_64__nvidia-h200-mig__590.48.01__load.csv",
    ],
)
def test_nvidia_smi_read_in_chunks_equals_it_read_whole(name):
    path = NVIDIA_SMI / name
    # Ten captures one after the other: the same GPUs, as a log of `nvidia-smi -l` would be.
    header, *body = path.read_text(encoding="utf-8-sig").splitlines()
    text = "\n".join([header, *(body * 10)]) + "\n"
    whole = parsers.parse_nvidia_smi_csv(text)
    chunks = _chunked(parsers.iter_nvidia_smi_csv, text, 3)
    assert len(chunks) == -(-len(body) * 10 // 3)
    assert _merged(chunks) == (whole.rows, whole.errors)


def test_the_azure_trace_read_in_chunks_equals_it_read_whole():
    whole = parsers.parse_azure_llm(AZURE_CODE.read_text())
    chunks = _chunked(parsers.iter_azure_llm, parsers.FileLines(AZURE_CODE), 1000)
    # A header and 8,819 requests (`wc -l` counts 8,819: no final newline, as the
    # dataset's README says): lines 2–8,820, ⌈8819 / 1000⌉ = 9 chunks.
    assert len(chunks) == 9
    assert _merged(chunks) == (whole.rows, whole.errors)
    assert sum(len(chunk.rows) for chunk in chunks) == 8819


def _scrapes(count: int) -> str:
    """``count`` copies of a real dcgm-exporter scrape, each line stamped a minute apart
    in milliseconds, as a file of successive scrapes holds them."""
    scrape = DCGM_SCRAPE.read_text()
    copies = []
    for minute in range(count):
        stamp = int((TEN + timedelta(minutes=minute)).timestamp() * 1000)
        copies.append(
            "\n".join(
                line if not line or line.startswith("#") else f"{line} {stamp}"
                for line in scrape.splitlines()
            )
        )
    return "\n".join(copies) + "\n"


def test_dcgm_is_cut_only_where_a_scrape_begins():
    text = _scrapes(6)
    whole = parsers.parse_dcgm(text, scraped_at=TEN)
    assert len(whole.rows) == 6  # one L4, six minutes
    chunks = _chunked(parsers.iter_dcgm, text, 1, scraped_at=TEN)
    # At least one sample a chunk: each scrape is a chunk, none split between two.
    assert [len(chunk.rows) for chunk in chunks] == [1] * 6
    assert _merged(chunks) == (whole.rows, whole.errors)
    assert [row.line_number for row in whole.rows] == [
        row.line_number for chunk in chunks for row in chunk.rows
    ]


def test_dcgm_names_a_sample_repeated_from_an_earlier_scrape():
    # The same scrape twice without timestamps: both are dated at the scrape time.
    scrape = DCGM_SCRAPE.read_text()
    text = scrape + scrape
    chunks = _chunked(parsers.iter_dcgm, text, 1, scraped_at=TEN)
    rows, errors = _merged(chunks)
    first_line = parsers.parse_dcgm(scrape, scraped_at=TEN).rows[0].line_number
    assert [row.line_number for row in rows] == [first_line]
    # Every stored metric line of the second copy is named, with the first copy's line.
    stored_lines = sum(
        1 for line in scrape.splitlines() if line.split("{", 1)[0] in parsers.dcgm.METRIC_NAMES
    )
    assert len(errors) == stored_lines
    offset = scrape.count("\n")
    assert errors[0].message.startswith(f"line {first_line + offset}: ")
    assert all(
        error.message.endswith(
            f"repeats the GPU and time of the sample from line {first_line} on, "
            "in an earlier scrape"
        )
        for error in errors
    )


def test_file_lines_name_the_line_of_a_nul_or_of_bytes_that_are_not_utf8(tmp_path):
    nul = tmp_path / "nul.csv"
    nul.write_bytes(b"time,gpu,util\n2026-11-01T10:00:00+00:00,GPU-a,50\nGPU-\x00\n")
    with pytest.raises(parsers.TelemetryFormatError, match=r"^line 3: a NUL character"):
        list(parsers.FileLines(nul))
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes(b"time,gpu,util\n2026-11-01T10:00:00+00:00,GPU-\xe9,50\n")
    with pytest.raises(parsers.TelemetryFormatError) as refused:
        list(parsers.FileLines(latin1))
    # "time,gpu,util\n" is 14 bytes, "2026-11-01T10:00:00+00:00,GPU-" 30 more: byte 44.
    assert str(refused.value) == (
        "line 2: not UTF-8 text (invalid continuation byte at byte 44 of the file)"
    )


def test_file_lines_drop_the_byte_order_mark_and_count_the_bytes_read(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbftime,gpu,util\r\nx,y,z\r\n")
    lines = parsers.FileLines(path)
    assert list(lines) == ["time,gpu,util\r\n", "x,y,z\r\n"]
    assert lines.bytes_read == path.stat().st_size and lines.fraction_read == 1.0


# The importer: chunks of a few lines store what one chunk stores


def _fleet_csv(minutes: int, devices=("GPU-a", "GPU-b", "GPU-c")) -> str:
    return "time,gpu,util\n" + "".join(
        f"{(TEN + timedelta(minutes=minute)).isoformat()},{device},{(minute * 7) % 101}\n"
        for minute in range(minutes)
        for device in devices
    )


@pytest.mark.django_db
def test_an_import_in_chunks_stores_what_an_import_in_one_chunk_stores(pool, tmp_path, monkeypatch):
    path = tmp_path / "fleet.csv"
    path.write_text(_fleet_csv(150))  # 3 GPUs × 150 minutes = 450 rows, 3 hours
    monkeypatch.setattr(formats, "IMPORT_CHUNK_ROWS", 40)  # ⌈450 / 40⌉ = 12 chunks
    run = ImportRun.objects.create(
        kind="gpu", format="csv", pool=pool, status=ImportRun.Status.RUNNING
    )
    summary = importer.run_import(run, path, columns=formats.parse_column_mapping(COLUMNS))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.SUCCEEDED
    assert (run.rows_total, run.rows_accepted, run.rows_duplicate) == (450, 450, 0)
    stored = sorted(GpuSample.objects.values_list("device__uuid", "timestamp", "utilization_pct"))
    expected = sorted(
        (device, TEN + timedelta(minutes=minute), float((minute * 7) % 101))
        for minute in range(150)
        for device in ("GPU-a", "GPU-b", "GPU-c")
    )
    assert stored == expected
    assert GpuDevice.objects.count() == 3
    assert summary.new_devices == 3 and summary.unassigned_devices == 0
    # Hours 10:00, 11:00 and 12:00 (minute 149 is 12:29) are scheduled for rollup.
    assert summary.touched_pool_hours == {
        (pool.pk, TEN + timedelta(hours=hours)) for hours in range(3)
    }


@pytest.mark.django_db
def test_a_device_is_described_by_its_latest_sample_across_chunks(pool, tmp_path, monkeypatch):
    # GPU-a moves from node-1 to node-2 at minute 30; the rows come newest first, so the
    # latest sample (minute 59, node-2) is in the first chunk and the oldest in the last.
    text = "time,gpu,util,host\n" + "".join(
        f"{(TEN + timedelta(minutes=minute)).isoformat()},GPU-a,50,"
        f"{'node-1' if minute < 30 else 'node-2'}\n"
        for minute in reversed(range(60))
    )
    path = tmp_path / "moves.csv"
    path.write_text(text)
    monkeypatch.setattr(formats, "IMPORT_CHUNK_ROWS", 7)
    run = ImportRun.objects.create(
        kind="gpu", format="csv", pool=pool, status=ImportRun.Status.RUNNING
    )
    importer.run_import(run, path, columns=formats.parse_column_mapping(COLUMNS + ",hostname=host"))
    device = GpuDevice.objects.get()
    assert device.hostname == "node-2"
    assert (device.first_seen_at, device.last_seen_at) == (TEN, TEN + timedelta(minutes=59))


@pytest.mark.django_db
def test_a_bad_line_in_the_last_chunk_refuses_the_whole_file(pool, tmp_path, monkeypatch):
    text = _fleet_csv(100) + f"{(TEN + timedelta(hours=3)).isoformat()},GPU-new,140\n"
    path = tmp_path / "fleet.csv"
    path.write_text(text)
    monkeypatch.setattr(formats, "IMPORT_CHUNK_ROWS", 25)
    with pytest.raises(CommandError, match="Rejected: 1 bad row"):
        import_csv_command(path, pool)
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.REJECTED
    assert (run.rows_total, run.rows_rejected, run.rows_accepted) == (301, 1, 0)
    assert [(error["line"], error["message"]) for error in run.errors] == [
        (302, "line 302: utilization_pct '140' is outside 0–100")
    ]
    # The chunks stored before the bad line are rolled back with their devices.
    assert not GpuSample.objects.exists() and not GpuDevice.objects.exists()


@pytest.mark.django_db
def test_skipping_bad_rows_across_chunks_keeps_every_good_row_and_counts_every_bad_one(
    pool, tmp_path, monkeypatch
):
    lines = _fleet_csv(60).splitlines()
    # Every 10th data line reads 140 %: lines 11, 21, …, 181 (18 of the 180).
    for index in range(10, len(lines), 10):
        lines[index] = lines[index].rsplit(",", 1)[0] + ",140"
    path = tmp_path / "fleet.csv"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(formats, "IMPORT_CHUNK_ROWS", 16)
    import_csv_command(path, pool, "--skip-bad-rows")
    run = ImportRun.objects.get()
    assert (run.rows_total, run.rows_accepted, run.rows_rejected) == (180, 162, 18)
    assert [error["line"] for error in run.errors] == list(range(11, 182, 10))
    assert GpuSample.objects.count() == 162


@pytest.mark.django_db
def test_warnings_and_flags_add_up_across_chunks(pool, tmp_path, monkeypatch):
    # The pool enters service at 10:30: the hour 10:00 is paid whole (an hour the period
    # overlaps), so only samples before 10:00 are outside; 09:00–09:59 holds 60 minutes
    # × 3 GPUs = 180 of them. The run arrives at 11:30, and samples after 11:35 (the
    # 5-minute tolerance) are clock skew: 11:36–11:59, 24 minutes × 3 GPUs = 72 samples,
    # the latest 29 minutes ahead.
    Pool.objects.filter(pk=pool.pk).update(in_service_from=TEN + timedelta(minutes=30))
    start = TEN - timedelta(hours=1)
    text = "time,gpu,util\n" + "".join(
        f"{(start + timedelta(minutes=minute)).isoformat()},{device},50\n"
        for minute in range(180)
        for device in ("GPU-a", "GPU-b", "GPU-c")
    )
    monkeypatch.setattr(formats, "IMPORT_CHUNK_ROWS", 50)
    run = ImportRun.objects.create(
        kind="gpu",
        format="csv",
        source=ImportRun.Source.COMMAND,
        pool=pool,
        status=ImportRun.Status.RUNNING,
    )
    ImportRun.objects.filter(pk=run.pk).update(created_at=TEN + timedelta(hours=1, minutes=30))
    run.refresh_from_db()
    path = tmp_path / "fleet.csv"
    path.write_text(text)
    summary = importer.run_import(run, path, columns=formats.parse_column_mapping(COLUMNS))
    assert summary.accepted == 540
    assert summary.warnings[0].startswith("180 samples before pool Test H100 training entered")
    assert summary.warnings[1].startswith(
        "72 samples of pool Test H100 training dated up to 29 min ahead of their arrival"
    )
    flag = PoolHourFlag.objects.get(kind=PoolHourFlag.Kind.CLOCK_SKEW)
    assert (flag.hour, flag.samples, flag.gpus) == (TEN + timedelta(hours=1), 72, 3)


@pytest.mark.django_db
def test_a_nul_in_a_later_chunk_refuses_the_file_and_keeps_nothing(pool, tmp_path, monkeypatch):
    text = _fleet_csv(50) + "2026-11-01T13:00:00+00:00,GPU-\x00,50\n"
    path = tmp_path / "fleet.csv"
    path.write_text(text)
    monkeypatch.setattr(formats, "IMPORT_CHUNK_ROWS", 20)
    with pytest.raises(CommandError, match="line 152: a NUL character"):
        import_csv_command(path, pool, "--skip-bad-rows")
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.REJECTED
    assert not GpuSample.objects.exists() and not GpuDevice.objects.exists()


@pytest.mark.django_db
def test_a_request_log_imports_in_chunks(workload, tmp_path, monkeypatch):
    monkeypatch.setattr(formats, "IMPORT_CHUNK_ROWS", 500)
    call_command(
        "import_requests",
        str(AZURE_CODE),
        "--workload",
        workload.slug,
        "--format",
        "azure-llm",
        stdout=None,
    )
    run = ImportRun.objects.get()
    whole = parsers.parse_azure_llm(AZURE_CODE.read_text())
    assert (run.rows_total, run.rows_accepted) == (8819, len(whole.rows))
    # What the database holds, summed in SQL, against the rows parsed whole in Python.
    stored = RequestSample.objects.aggregate(
        requests=Sum("count"), input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens")
    )
    assert stored == {
        "requests": 8819,
        "input_tokens": sum(row.input_tokens for row in whole.rows),
        "output_tokens": sum(row.output_tokens for row in whole.rows),
    }


@pytest.mark.django_db
def test_an_import_holds_a_chunk_of_rows_not_the_file(pool, tmp_path, monkeypatch):
    """Python's peak allocations while importing do not grow with the file: a file four
    times longer, read 500 lines at a time, peaks within 1.5× of the shorter one.
    Holding the text or every parsed row (some 400 bytes each) would peak four times
    higher."""
    devices = [f"GPU-{n}" for n in range(10)]
    short, long = tmp_path / "short.csv", tmp_path / "long.csv"
    short.write_text(_fleet_csv(500, devices=devices))  # 5,000 rows
    long.write_text(_fleet_csv(2000, devices=devices))  # 20,000 rows
    assert long.stat().st_size > 3.9 * short.stat().st_size
    monkeypatch.setattr(formats, "IMPORT_CHUNK_ROWS", 500)
    import_csv_command(short, pool)  # devices registered, queries compiled: both imports alike
    peaks = {}
    tracemalloc.start()
    try:
        for path in (short, long):
            tracemalloc.reset_peak()
            import_csv_command(path, pool)
            peaks[path.name] = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ImportRun.objects.order_by("pk").last().rows_total == 20_000
    assert peaks["long.csv"] < 1.5 * peaks["short.csv"], peaks


@pytest.mark.django_db
def test_a_chunk_is_inserted_while_the_next_is_parsed(pool):
    """The INSERT of one chunk runs beside the parse of the next (storage._ChunkInserts):
    a lock held from another connection stops the first chunk's INSERT, and the parser is
    still asked for the second chunk; one after the other, the import would wait at that
    INSERT until its lock timeout and fail."""
    from django.db import connection

    settings = connection.settings_dict
    locker = psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        user=settings["USER"],
        dbname=settings["NAME"],
        autocommit=False,
    )
    seen_waiting = []

    def rows(first_minute):
        return [
            GpuSampleRow(
                line_number=minute + 1,
                device=DeviceKey(f"GPU-{gpu}"),
                timestamp=TEN + timedelta(minutes=minute),
                utilization_pct=float(minute),
            )
            for minute in range(first_minute, first_minute + 10)
            for gpu in "ab"
        ]

    def chunks():
        yield ParseResult(rows=rows(0), errors=[])

        # Asked for the second chunk: the first one's INSERT waits for the lock meanwhile.
        def insert_waiting():
            locker.execute("SELECT pg_stat_clear_snapshot()")  # a fresh view each time
            return locker.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO telemetry_gpusample%%'"
            ).fetchone()[0]

        seen_waiting.append(wait_until(insert_waiting, timeout_seconds=5, what="the INSERT"))
        locker.rollback()  # the lock goes: the first INSERT proceeds
        yield ParseResult(rows=rows(10), errors=[])

    try:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '10s'")
        locker.execute("LOCK TABLE telemetry_gpusample IN SHARE MODE")
        summary = storage.import_gpu_samples(chunks(), pool=pool)
    finally:
        locker.close()
    assert seen_waiting == [1]
    assert (summary.accepted, summary.duplicates) == (40, 0)
    assert GpuSample.objects.count() == 40
