"""Writes of pools that more than one caller makes.

Every write of a pool goes through ``save_pool``: the pages, the API, the admin, the
connect flow, the demo and the tests' factories. So a pool's stored effective price
always follows from its cost inputs, and no caller has to remember to derive it.
"""

from datetime import datetime

from django.db import transaction

from apps.pools.models import PRICE_INPUT_FIELDS, Pool
from apps.pools.prices import prices_changed, record_prices


@transaction.atomic
def save_pool(
    pool: Pool,
    *,
    price_history: bool = False,
    prices_from: datetime | None = None,
    prices_before: Pool | None = None,
    user=None,
) -> Pool:
    """Save ``pool`` with the price fields derived from its cost inputs.

    ``price_history`` is for a person's edit (the pool pages, the API, the admin): a new
    pool's prices are then recorded in force from its service start, and prices changed
    since ``prices_before`` (default: the stored row) in force from ``prices_from``
    (default: the current hour), as made by ``user``; a start the prices cannot take
    effect from raises ``PriceStartError``. Without it (the connect flow, the demo, which
    writes its own history, fixtures) the pool is saved with no period: a pool without
    periods is priced by its own fields."""
    if price_history:
        if pool.pk is None:
            return record_prices(pool, user=user)
        before = prices_before or Pool.objects.only(*PRICE_INPUT_FIELDS).get(pk=pool.pk)
        if prices_changed(before, pool):
            return record_prices(pool, prices_from, user=user)
    pool.refresh_effective_price()
    pool.save()
    return pool
