"""The lendable capacity the pages and the API read, cached until the data changes
(apps/reports/cache.py), per scope and safety margin."""

from django.conf import settings

from apps.accounts.scope import EVERYTHING, Scope
from apps.reports.cache import cached
from apps.reports.lending.capacity import FleetLendable, Lendable, fleet_lendable, pool_lendable


def lendable_figures(now, scope: Scope = EVERYTHING) -> FleetLendable:
    """Every inference pool in ``scope`` with its lendable off-peak capacity
    (``capacity``); cached until the data changes."""
    return cached(
        "lendable",
        {"scope": scope.cache_key, "margin_pct": settings.LENDING_SAFETY_MARGIN_PCT},
        lambda: fleet_lendable(now, scope),
    )


def pool_lendable_figures(pool, now, scope: Scope = EVERYTHING) -> Lendable:
    """One inference pool's lendable off-peak capacity, for a viewer whose ``scope``
    holds it; cached until the data changes."""
    return cached(
        "lendable-pool",
        {
            "pool": pool.pk,
            "scope": scope.cache_key,
            "margin_pct": settings.LENDING_SAFETY_MARGIN_PCT,
        },
        lambda: pool_lendable(pool, now),
    )
