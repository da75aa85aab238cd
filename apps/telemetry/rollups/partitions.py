"""Raw samples partitioned by UTC day, so that retention drops a day's table rather than
deleting its rows one by one.

``telemetry_gpusample`` is partitioned by RANGE ("timestamp"): one partition per UTC day,
``telemetry_gpusample_p20261201`` holding [2026-12-01 00:00, 2026-12-02 00:00) UTC, and a
DEFAULT partition, ``telemetry_gpusample_default``, for any instant whose day has none.
The key (device_id, timestamp) and the timestamp index are partitioned indexes and the
foreign key to the device is kept (migration 0017). Before that migration the table is
plain and every function here does nothing.

**A DEFAULT partition, not a partition created before the insert that needs it.** Making
a partition, whether ``CREATE TABLE … PARTITION OF`` or ``ATTACH PARTITION``, takes a SHARE
ROW EXCLUSIVE lock on ``telemetry_gpudevice`` (the foreign key's triggers), and every
import holds ROW EXCLUSIVE on that table from its first new device or ``last_seen_at``
update until it commits. An import that made its own partition would either wait on
itself (from a second connection) or, in its own transaction, stop every other import
until it commits. So no write ever runs DDL: the rows of a day without a partition (a
backfill, a node whose clock runs ahead) land in the DEFAULT partition at once and whole,
keyed like every other row, and the import asks for ``telemetry.ensure_sample_partitions``
after its commit (``retention.request_partitions_if_needed``), which makes the day's
partition and moves those rows into it. DEFAULT therefore stays nearly empty, which keeps
short the scan of it that every ATTACH makes (under an ACCESS EXCLUSIVE lock on DEFAULT
alone) to prove no row of the new day is left there.

**Locks.** ``ensure_partitions`` (beat, hourly and at worker start) creates each partition
as a plain table and ATTACHes it, which takes only SHARE UPDATE EXCLUSIVE on the parent:
imports and reads go on meanwhile. Its locks are taken in one order, the devices first
(waited for LOCK_TIMEOUT at most: the other imports' commits), then the parent and the
DEFAULT partition without waiting, so it never waits while holding a lock someone else
needs. A day it cannot lock now is left for its next run, its rows staying in DEFAULT,
readable and counted, meanwhile. Retention (``drop_day_partitions_before``) empties a
whole day with TRUNCATE (a lock on that partition only) and then drops it: DROP TABLE takes
ACCESS EXCLUSIVE on the parent for a catalog change, waited for LOCK_TIMEOUT at most, so an
import or a read of the samples waits behind it for at most that long. (``DETACH …
CONCURRENTLY``, which waits without blocking, is refused while a DEFAULT partition exists.)
"""

import logging
import re
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time

from django.db import OperationalError, connection, transaction

logger = logging.getLogger(__name__)

TABLE = "telemetry_gpusample"
DEVICE_TABLE = "telemetry_gpudevice"
DEFAULT_PARTITION = f"{TABLE}_default"
_DAY_PARTITION = re.compile(rf"^{TABLE}_p(\d{{8}})$")
# How long a partition change waits for the locks it needs: what an import or a page may
# wait behind it.
LOCK_TIMEOUT = timedelta(seconds=2)
# Attempts at a day's locks per run, a short pause apart, before it is left to the next run.
LOCK_ATTEMPTS = 3
_LOCK_RETRY_PAUSE_SECONDS = 0.5
# Rows in DEFAULT dated further ahead than this stay there (a clock years off is no day
# worth a table); they are read, counted and flagged like every sample.
FURTHEST_DAY_AHEAD = timedelta(days=366)
# SQLSTATEs of a lock not granted in time (lock_timeout, NOWAIT) and of a deadlock.
_LOCK_NOT_AVAILABLE, _DEADLOCK = "55P03", "40P01"


@dataclass(frozen=True)
class Partition:
    name: str
    day: date | None  # None for the DEFAULT partition
    # pg_class.reltuples: the planner's estimate, kept by ANALYZE (autovacuum); -1 for a
    # partition never analysed.
    rows_estimate: int
    size_bytes: int  # table, indexes and TOAST

    @property
    def is_default(self) -> bool:
        return self.day is None

    @property
    def start(self) -> datetime | None:
        return day_start(self.day) if self.day else None


@dataclass
class PartitionChanges:
    created: list[date]
    rows_moved: int  # from DEFAULT into the partitions created
    postponed: list[date]  # days whose locks were not granted: left for the next run


@dataclass
class DroppedPartitions:
    dropped: list[Partition]  # emptied and dropped
    emptied: list[Partition]  # emptied; the DROP's lock was not granted: the next run's
    postponed: list[Partition]  # whole days before the horizon whose lock was not granted


def partition_name(day: date) -> str:
    return f"{TABLE}_p{day:%Y%m%d}"


def day_start(day: date) -> datetime:
    return datetime.combine(day, clock_time(0), tzinfo=UTC)


def days_between(first: date, last: date) -> list[date]:
    """Every day from ``first`` to ``last``, both included."""
    return [first + timedelta(days=offset) for offset in range((last - first).days + 1)]


def is_partitioned() -> bool:
    """Whether the samples table is partitioned (it is from migration 0017 on)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass(%s))",
            [TABLE],
        )
        return cursor.fetchone()[0]


def partitions() -> list[Partition]:
    """The samples table's partitions, oldest day first, the DEFAULT partition last; none
    where the table is not partitioned."""
    if not is_partitioned():
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT child.relname, child.reltuples::bigint, pg_total_relation_size(child.oid),
                   pg_get_expr(child.relpartbound, child.oid) = 'DEFAULT'
            FROM pg_inherits JOIN pg_class AS child ON child.oid = pg_inherits.inhrelid
            WHERE pg_inherits.inhparent = to_regclass(%s)
            """,
            [TABLE],
        )
        rows = cursor.fetchall()
    found = []
    for name, rows_estimate, size_bytes, is_default in rows:
        match = _DAY_PARTITION.match(name)
        if not is_default and not match:
            continue  # not one of ours: never counted, never dropped
        day = None if is_default else datetime.strptime(match.group(1), "%Y%m%d").date()
        found.append(Partition(name, day, rows_estimate, size_bytes))
    return sorted(found, key=lambda partition: (partition.day is None, partition.day))


def _partition_days() -> set[date]:
    """The days that have a partition, from the catalog alone: unlike ``partitions()``
    (whose sizes open each table), it never waits for a lock someone holds on them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT child.relname FROM pg_inherits "
            "JOIN pg_class AS child ON child.oid = pg_inherits.inhrelid "
            "WHERE pg_inherits.inhparent = to_regclass(%s)",
            [TABLE],
        )
        names = [row[0] for row in cursor.fetchall()]
    return {
        datetime.strptime(match.group(1), "%Y%m%d").date()
        for match in map(_DAY_PARTITION.match, names)
        if match
    }


def _days_in_default(first: date, last: date) -> list[date] | None:
    """The UTC days from ``first`` to ``last`` that have rows in DEFAULT, one index probe
    per day found (a loose scan of the timestamp index), however many rows each holds.
    None when DEFAULT is locked beyond LOCK_TIMEOUT (a partition being made, a migration):
    those days wait for the next run."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            _set_lock_timeout(cursor)
            return _days_in_default_query(cursor, first, last)
    except OperationalError as error:
        if not _is_lock_failure(error):
            raise
        logger.info("DEFAULT partition locked; its days wait for the next run: %s", error)
        return None


def _days_in_default_query(cursor, first: date, last: date) -> list[date]:
    cursor.execute(
        f"""
        WITH RECURSIVE found (day) AS (
            SELECT (SELECT date_trunc('day', min("timestamp") AT TIME ZONE 'UTC')
                    FROM {DEFAULT_PARTITION} WHERE "timestamp" >= %s AND "timestamp" < %s)
            UNION ALL
            SELECT (SELECT date_trunc('day', min("timestamp") AT TIME ZONE 'UTC')
                    FROM {DEFAULT_PARTITION}
                    WHERE "timestamp" >= (found.day + interval '1 day') AT TIME ZONE 'UTC'
                      AND "timestamp" < %s)
            FROM found WHERE found.day IS NOT NULL
        )
        SELECT day::date FROM found WHERE day IS NOT NULL
        """,  # noqa: S608 - the table name is a module constant
        [day_start(first), *[day_start(last + timedelta(days=1))] * 2],
    )
    return [row[0] for row in cursor.fetchall()]


def default_holds_rows(first: date, last: date) -> bool:
    """Whether DEFAULT holds rows dated from ``first`` to ``last`` (one index probe): rows
    that ``ensure_partitions`` over those days would move into partitions of their own."""
    if not is_partitioned():
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT EXISTS (SELECT 1 FROM {DEFAULT_PARTITION} WHERE "timestamp" >= %s '  # noqa: S608 - module constant
            'AND "timestamp" < %s)',
            [day_start(first), day_start(last + timedelta(days=1))],
        )
        return cursor.fetchone()[0]


def _is_lock_failure(error: OperationalError) -> bool:
    return getattr(error.__cause__, "sqlstate", None) in (_LOCK_NOT_AVAILABLE, _DEADLOCK)


def _set_lock_timeout(cursor) -> None:
    milliseconds = int(LOCK_TIMEOUT.total_seconds() * 1000)
    cursor.execute("SELECT set_config('lock_timeout', %s, true)", [f"{milliseconds}ms"])


def _with_lock_attempts(work, *args):
    """``work(*args)``'s result, trying again a short pause later when its locks were not
    granted; None when they never were in LOCK_ATTEMPTS tries."""
    for attempt in range(LOCK_ATTEMPTS):
        try:
            return work(*args)
        except OperationalError as error:
            if not _is_lock_failure(error):
                raise
            logger.info("locks for %s not granted (attempt %s): %s", args, attempt + 1, error)
            if attempt + 1 < LOCK_ATTEMPTS:
                time.sleep(_LOCK_RETRY_PAUSE_SECONDS)
    return None


def _create_day_partition(day: date) -> int:
    """Make ``day``'s partition, with the rows DEFAULT holds for it, in one transaction;
    returns the rows moved (0 when the partition already exists). Raises OperationalError
    (lock not available) when the locks are not granted in time."""
    name = partition_name(day)
    start, end = day_start(day), day_start(day + timedelta(days=1))
    with transaction.atomic(), connection.cursor() as cursor:
        _set_lock_timeout(cursor)
        # Devices first, waited for: the other imports' commits. Then, holding it, the
        # parent and DEFAULT without waiting, so no one ever waits on a lock held here
        # while this waits on one of theirs.
        cursor.execute(f"LOCK TABLE {DEVICE_TABLE} IN SHARE ROW EXCLUSIVE MODE")
        cursor.execute(f"LOCK TABLE {TABLE} IN SHARE UPDATE EXCLUSIVE MODE NOWAIT")
        cursor.execute(f"LOCK TABLE {DEFAULT_PARTITION} IN ACCESS EXCLUSIVE MODE NOWAIT")
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        if cursor.fetchone()[0]:
            return 0  # made meanwhile by another worker
        cursor.execute(f"CREATE TABLE {name} (LIKE {TABLE} INCLUDING DEFAULTS INCLUDING STORAGE)")
        in_day = 'WHERE "timestamp" >= %s AND "timestamp" < %s'
        cursor.execute(
            f"INSERT INTO {name} SELECT * FROM {DEFAULT_PARTITION} {in_day}",  # noqa: S608 - module constants
            [start, end],
        )
        moved = cursor.rowcount
        cursor.execute(f"DELETE FROM {DEFAULT_PARTITION} {in_day}", [start, end])  # noqa: S608
        # The bounds are datetimes made here, written as UTC literals (DDL takes no
        # parameters).
        cursor.execute(
            f"ALTER TABLE {TABLE} ATTACH PARTITION {name} "
            f"FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')"
        )
    return moved


def ensure_partitions(first: date, last: date) -> PartitionChanges:
    """Make sure every day from ``first`` to ``last`` has its partition, and every day up
    to FURTHEST_DAY_AHEAD past ``last`` that has rows in DEFAULT gets one, its rows moved
    in. Days before ``first`` keep their rows in DEFAULT (retention deletes them there).
    Idempotent: a day made by another worker meanwhile is skipped."""
    changes = PartitionChanges(created=[], rows_moved=0, postponed=[])
    if not is_partitioned():
        return changes
    existing = _partition_days()
    waiting = _days_in_default(first, last + FURTHEST_DAY_AHEAD) or []
    for day in sorted(set(days_between(first, last)) | set(waiting)):
        if day in existing:
            continue
        # The locks one day could not get, the next would wait for just the same: a run
        # lasts a few seconds at most, even on a worker that serves nothing else meanwhile.
        moved = None if changes.postponed else _with_lock_attempts(_create_day_partition, day)
        if moved is None:
            changes.postponed.append(day)
            continue
        changes.created.append(day)
        changes.rows_moved += moved
    if changes.created or changes.postponed:
        logger.info(
            "sample partitions: %s created (%s rows moved from DEFAULT), %s postponed",
            len(changes.created),
            changes.rows_moved,
            len(changes.postponed),
        )
    return changes


def _count_rows(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {name}")  # noqa: S608 - a partition we named
        return cursor.fetchone()[0]


def _truncate(partition: Partition) -> bool:
    with transaction.atomic(), connection.cursor() as cursor:
        _set_lock_timeout(cursor)
        # Rows written earlier in the same transaction still owe their deferred foreign
        # key check, which TRUNCATE and DROP refuse to leave pending: check them now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"TRUNCATE {partition.name}")
    return True


def _drop_table(partition: Partition) -> bool:
    with transaction.atomic(), connection.cursor() as cursor:
        _set_lock_timeout(cursor)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"DROP TABLE IF EXISTS {partition.name}")
    return True


def drop_day_partitions_before(horizon: datetime) -> DroppedPartitions:
    """Drop the day partitions that end at or before ``horizon``: days whose every hour is
    past the retention.

    Each day in two short transactions. TRUNCATE first: the commit that unlinks a day's
    files takes seconds for gigabytes, and TRUNCATE holds a lock on that partition alone
    meanwhile, which only reads of every day at once (a device's whole history) wait for.
    Then DROP TABLE, whose ACCESS EXCLUSIVE lock on the parent, which every import and read
    of the samples waits for, lasts a catalog change. A day whose TRUNCATE lock is not
    granted in LOCK_ATTEMPTS tries is left whole for the DELETE after (``postponed``); one
    emptied but not dropped is dropped by the next run (``emptied``).

    The rows of each emptied partition are given as its planner estimate
    (``pg_class.reltuples``), or counted when it was never analysed."""
    result = DroppedPartitions(dropped=[], emptied=[], postponed=[])
    for partition in partitions():
        if partition.is_default or day_start(partition.day + timedelta(days=1)) > horizon:
            continue
        if partition.rows_estimate < 0:
            partition = Partition(
                partition.name, partition.day, _count_rows(partition.name), partition.size_bytes
            )
        if not _with_lock_attempts(_truncate, partition):
            result.postponed.append(partition)
        elif _with_lock_attempts(_drop_table, partition):
            result.dropped.append(partition)
        else:
            result.emptied.append(partition)
    return result
