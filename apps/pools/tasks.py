from celery import shared_task

from apps.pools.prices import apply_due_prices


@shared_task(name="pools.apply_due_prices", ignore_result=True)
def apply_due_prices_task() -> int:
    """Bring the pools whose scheduled prices came into force up to date
    (apps/pools/prices.py). Idempotent: a pool already at its prices in force is left."""
    return apply_due_prices()
