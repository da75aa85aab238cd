"""Local hours and weekdays in SQL: a row's hour of the day and ISO weekday in a time
zone, by offset arithmetic on its UTC hour rather than ``AT TIME ZONE`` per row, whose
per-row zone lookup dominates a long range's query."""

from datetime import timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from django.db.models import IntegerField
from django.db.models.expressions import RawSQL

from apps.reports.span import ONE_HOUR, Span


@lru_cache(maxsize=256)
def offset_periods(span: Span, zone_names: tuple[str, ...]) -> tuple[tuple, dict]:
    """Where the span's UTC offsets change: (boundaries, offsets).

    ``boundaries`` are the first whole UTC hours of the span at which any of the zones
    changes its offset (daylight saving); they cut the span into ``len(boundaries) + 1``
    periods in which every zone keeps one offset. ``offsets[zone][period]`` is that offset
    in minutes. A row's local hour is then arithmetic on its UTC hour and its period,
    which PostgreSQL computes without the zone lookup ``AT TIME ZONE`` makes per row; an
    hour is assigned by its start instant, as ``AT TIME ZONE`` does.

    Offsets are sampled every 6 hours and a change is located to the hour: zones change
    at most twice a year, never twice within 6 hours.
    """
    zones = [ZoneInfo(name) for name in zone_names]

    def offsets_at(moment):
        return tuple(
            int(moment.astimezone(zone).utcoffset().total_seconds()) // 60 for zone in zones
        )

    boundaries, periods = [], [offsets_at(span.start)]
    last_hour, sample = span.end - ONE_HOUR, span.start
    while sample < last_hour:
        following = min(sample + timedelta(hours=6), last_hour)
        if offsets_at(following) == periods[-1]:
            sample = following
            continue
        sample += ONE_HOUR
        while offsets_at(sample) == periods[-1]:
            sample += ONE_HOUR
        boundaries.append(sample)
        periods.append(offsets_at(sample))
    offsets = {name: [period[index] for period in periods] for index, name in enumerate(zone_names)}
    return tuple(boundaries), offsets


# The RawSQL below (noqa: S611) interpolates only table names from ``_meta`` and fixed
# SQL; every value is a query parameter.


def _period_sql(column: str, boundaries) -> tuple[str, list]:
    """SQL for a row's period (1-based) among ``offset_periods``' boundaries."""
    if not boundaries:
        return "1", []
    return f"(width_bucket({column}, %s::timestamptz[]) + 1)", [list(boundaries)]


def _local_minutes_sql(column: str, span: Span, zone: ZoneInfo) -> tuple[str, list]:
    """SQL for minutes since UTC midnight of the row's day plus its zone offset: a value
    in (−1440, 2880) whose day part shifts the weekday and whose rest gives the hour."""
    boundaries, offsets = offset_periods(span, (zone.key,))
    period, params = _period_sql(column, boundaries)
    sql = f"(date_part('hour', {column})::int * 60 + (%s::int[])[{period}])"
    return sql, [offsets[zone.key], *params]


def local_hour_expression(table: str, span: Span, zone: ZoneInfo):
    """Each row's hour of the day in ``zone``: ``EXTRACT(HOUR FROM hour AT TIME ZONE
    zone)``, by offset arithmetic (``offset_periods``)."""
    minutes, params = _local_minutes_sql(f'"{table}"."hour"', span, zone)
    return RawSQL(f"((({minutes}) + 1440) %% 1440 / 60)", params, output_field=IntegerField())  # noqa: S611


def local_weekday_expression(table: str, span: Span, zone: ZoneInfo):
    """Each row's ISO weekday (1 = Monday) in ``zone``, as ``local_hour_expression``."""
    column = f'"{table}"."hour"'
    minutes, params = _local_minutes_sql(column, span, zone)
    # (minutes + 1440) / 1440 − 1 is the day shift, −1, 0 or 1 (integer division).
    sql = f"((date_part('isodow', {column})::int - 1 + ({minutes} + 1440) / 1440 - 1 + 7) %% 7 + 1)"
    return RawSQL(sql, params, output_field=IntegerField())  # noqa: S611


def _utc_hour_and_period(table: str, span: Span, zone_names):
    """(UTC hour of day, period) expressions for grouping rows of several zones; Python
    maps each group to its zone's local hour (``offset_periods``)."""
    boundaries, offsets = offset_periods(span, tuple(sorted(set(zone_names))))
    column = f'"{table}"."hour"'
    period, params = _period_sql(column, boundaries)
    utc_hour = RawSQL(f"date_part('hour', {column})::int", [], output_field=IntegerField())  # noqa: S611
    return utc_hour, RawSQL(period, params, output_field=IntegerField()), offsets  # noqa: S611


def _local_hour_of(utc_hour: int, offset_minutes: int) -> int:
    return (utc_hour * 60 + offset_minutes) % 1440 // 60


def sums_by_local_hour(queryset, key: str, zone_of: dict, span: Span, sums: dict):
    """``queryset``'s rows summed by ``key`` and local hour, each key value on the clock of
    its own zone ``zone_of[value]``. Yields (value, local hour, sums).

    One query grouped by UTC hour and daylight-saving period, placed on local hours here
    (``offset_periods``), rather than one query per zone."""
    utc_hour, period, offsets = _utc_hour_and_period(
        queryset.model._meta.db_table, span, tuple(zone_of.values())
    )
    rows = queryset.annotate(utc_hour=utc_hour, period=period).values(key, "utc_hour", "period")
    for row in rows.annotate(**sums):
        offset = offsets[zone_of[row[key]]][row["period"] - 1]
        yield row[key], _local_hour_of(row["utc_hour"], offset), row


@lru_cache(maxsize=256)
def local_hour_counts(span: Span, zone: ZoneInfo) -> list[int]:
    """How many hours of the span fall on each local hour of the day: per daylight-saving
    period (``offset_periods``), whole days give every hour once, the rest hour by hour."""
    boundaries, offsets = offset_periods(span, (zone.key,))
    edges = [span.start, *boundaries, span.end]
    counts = [0] * 24
    for period, (begin, end) in enumerate(zip(edges, edges[1:], strict=False)):
        offset = offsets[zone.key][period]
        whole_days, rest = divmod(int((end - begin) / ONE_HOUR), 24)
        for utc_hour in range(24):
            counts[_local_hour_of(utc_hour, offset)] += whole_days
        for step in range(rest):
            counts[_local_hour_of((begin + step * ONE_HOUR).hour, offset)] += 1
    return counts
