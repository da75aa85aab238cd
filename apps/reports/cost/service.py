"""The hours of a span a pool is in service, to the second: what it pays for, and the
share of an hourly row that its service period covers.

The hourly rollups count an hour the service period starts or ends inside of whole
(``Pool.service_hours``); the cost counts that hour's fraction in service. Such a day is
read from its hourly rows rather than its daily row (``day_read_hour_by_hour``)."""

from datetime import datetime

from django.db.models import Case, FloatField, Q, Value, When

from apps.pools.hours import floor_hour
from apps.pools.models import Pool
from apps.reports.span import ONE_DAY, ONE_HOUR, Span


def day_read_hour_by_hour(pool_id, moment: datetime) -> tuple[Q, Q]:
    """(the pool's daily row of the UTC day of ``moment``, its hourly rows): a day a
    price change or a service edge falls inside of is summed from its hours."""
    midnight = floor_hour(moment).replace(hour=0)
    return (
        Q(pool_id=pool_id, day=midnight.date()),
        Q(pool_id=pool_id, hour__gte=midnight, hour__lt=midnight + ONE_DAY),
    )


def service_share_of(edges: dict) -> Case:
    """Each hourly row's share of its hour in service: 1, but at the service period's
    edges (``service_edge_hours``) the fraction of the hour in service."""
    return Case(
        *[
            When(pool_id=pool_id, hour=hour, then=Value(fraction))
            for (pool_id, hour), fraction in edges.items()
        ],
        default=Value(1.0),
        output_field=FloatField(),
    )


def service_edge_hours(span: Span, service_periods: dict) -> dict[tuple[int, datetime], float]:
    """(pool id, hour) → the fraction of that hour in the pool's service period, for the
    hours of the span that the period starts or ends inside of (11:30 → the 11:00 hour,
    0.5). Every other hour of the period is in service whole.

    The hourly rollups count such an hour whole (``Pool.service_hours``); what the pool
    pays for it, and the sums measured in it, are that fraction of the hour: the paid
    hours (``pool_paid_hours``) and the measured ones (``pool_usage_totals``) then cover
    the same time. ``service_periods``: pool id → (in service from, until or None)."""
    fractions = {}
    for pool_id, (since, until) in service_periods.items():
        for moment in (since, until):
            if moment is None:
                continue
            hour = floor_hour(moment)
            if hour == moment or not span.start <= hour < span.end:
                continue
            inside_from = max(hour, since)
            inside_until = min(hour + ONE_HOUR, until) if until else hour + ONE_HOUR
            fractions[(pool_id, hour)] = max(0.0, (inside_until - inside_from) / ONE_HOUR)
    return fractions


def service_periods_of(pool_ids) -> dict:
    """Pool id → (in service from, until or None), of ``pool_ids`` (None: every pool's).
    One query."""
    queryset = Pool.objects.all() if pool_ids is None else Pool.objects.filter(pk__in=pool_ids)
    return {
        row[0]: (row[1], row[2])
        for row in queryset.values_list("pk", "in_service_from", "in_service_until")
    }


def paid_range(pool: Pool, span: Span) -> tuple[datetime, datetime]:
    """[begin, finish) of the span inside the pool's service period, to the second: a
    pool in service from 11:30 pays from 11:30."""
    since, until = pool.in_service_from, pool.in_service_until
    begin, finish = max(span.start, since), min(span.end, until) if until else span.end
    return begin, max(begin, finish)


def pool_paid_hours(pool: Pool, span: Span) -> float:
    """Hours of the span inside the pool's service period, fractions of an hour
    included (from 11:30 to 14:15: 2.75 h)."""
    begin, finish = paid_range(pool, span)
    return (finish - begin) / ONE_HOUR
