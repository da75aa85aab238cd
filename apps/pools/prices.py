"""Prices in force: the periods that say what a pool's GPU-hour cost from which hour.

A price edit names the hour it takes effect from; it starts a new period there (or
rewrites the period that starts exactly then), so the hours before keep their price and
the cost reports can sign a past month. The pool's own price fields hold the prices in
force now, which lists, forecasts and forward-looking figures read.
"""

from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from apps.pools.hours import floor_hour
from apps.pools.models import (
    DERIVED_PRICE_FIELDS,
    PRICE_INPUT_FIELDS,
    Pool,
    PoolPricePeriod,
)

PERIOD_FIELDS = (*PRICE_INPUT_FIELDS, *DERIVED_PRICE_FIELDS)


class PriceStartError(ValueError):
    """A start the prices cannot take effect from; the message names the field."""


def current_hour() -> datetime:
    return floor_hour(timezone.now())


def prices_changed(before: Pool, after: Pool) -> bool:
    return any(getattr(before, name) != getattr(after, name) for name in PRICE_INPUT_FIELDS)


def price_start_problem(
    pool: Pool, effective_from: datetime, service_start: datetime | None = None
) -> str | None:
    """Why the pool's prices cannot take effect from ``effective_from``, or None
    (``service_start``: the one being saved, default the pool's).

    A start at or after the service start leaves no hour without a price:
    ``record_prices`` moves the first period back to the service start."""
    if effective_from != floor_hour(effective_from):
        return gettext(
            "Prices in force from must be on a whole hour (minutes and seconds 0), e.g. %(hour)s."
        ) % {"hour": f"{floor_hour(effective_from):%Y-%m-%d %H:00}"}
    service_start = floor_hour(service_start or pool.in_service_from)
    if effective_from < service_start:
        return gettext(
            "Prices in force from cannot be before the pool's service start (%(start)s)."
        ) % {"start": f"{service_start:%Y-%m-%d %H:00} UTC"}
    return None


def _values_of(pool: Pool) -> dict:
    return {name: getattr(pool, name) for name in PERIOD_FIELDS}


@transaction.atomic
def record_prices(pool: Pool, effective_from: datetime | None = None, *, user=None) -> Pool:
    """Save the pool with its edited price fields in force from ``effective_from``
    (default: the current hour; a new pool's prices run from its service start).

    The pool keeps the prices in force now: a future start schedules the change
    (``apply_due_prices`` applies it when its hour comes). Raises PriceStartError for a
    start ``price_start_problem`` refuses."""
    changed_by = user if user is not None and user.is_authenticated else None
    pool.refresh_effective_price()
    if pool.pk is None:
        pool.save()
        ensure_first_period(pool, user=changed_by)
        return pool
    # A pool priced before periods existed keeps its old prices for the hours before.
    ensure_first_period(Pool.objects.get(pk=pool.pk))
    ensure_first_period(pool)
    effective_from = current_hour() if effective_from is None else effective_from
    problem = price_start_problem(pool, effective_from)
    if problem:
        raise PriceStartError(problem)
    PoolPricePeriod.objects.update_or_create(
        pool=pool,
        effective_from=effective_from,
        defaults={**_values_of(pool), "changed_by": changed_by},
    )
    apply_prices_in_force(pool)
    pool.save()
    return pool


def ensure_first_period(pool: Pool, *, user=None) -> None:
    """Give a pool without periods one from its service start with its current prices;
    move the first period back when the service start moved before it."""
    service_start = floor_hour(pool.in_service_from)
    first = pool.price_periods.order_by("effective_from").first()
    if first is None:
        PoolPricePeriod.objects.create(
            pool=pool, effective_from=service_start, changed_by=user, **_values_of(pool)
        )
    elif service_start < first.effective_from:
        first.effective_from = service_start
        first.save(update_fields=["effective_from"])


def period_in_force(pool: Pool, moment: datetime) -> PoolPricePeriod | None:
    return pool.price_periods.filter(effective_from__lte=moment).order_by("-effective_from").first()


def apply_prices_in_force(pool: Pool, moment: datetime | None = None) -> bool:
    """Copy the period in force at ``moment`` (default now) onto the pool's price fields
    (unsaved); True when they changed."""
    period = period_in_force(pool, moment or timezone.now())
    if period is None:
        return False
    changed = False
    for name in PERIOD_FIELDS:
        value = getattr(period, name)
        if getattr(pool, name) != value:
            setattr(pool, name, value)
            changed = True
    return changed


def apply_due_prices() -> int:
    """Bring every pool whose scheduled period has come into force up to date; the
    number of pools changed."""
    changed = 0
    for pool in Pool.objects.filter(price_periods__isnull=False).distinct():
        if apply_prices_in_force(pool):
            pool.save(update_fields=[*PERIOD_FIELDS, "updated_at"])
            changed += 1
    return changed


def price_history(pool: Pool) -> list[dict]:
    """The pool's periods, oldest first, each with the start of the next as its end."""
    periods = list(pool.price_periods.select_related("changed_by").order_by("effective_from"))
    return [
        {
            "period": period,
            "effective_from": period.effective_from,
            "effective_until": periods[index + 1].effective_from
            if index + 1 < len(periods)
            else None,
        }
        for index, period in enumerate(periods)
    ]
