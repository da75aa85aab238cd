"""What telemetry tells the apps above it, and how it answers what pools tell it
(apps/pools/signals.py)."""

from django.dispatch import Signal

from apps.core.outbox import enqueue

# Sent after the commit of recomputed days, with ``start`` and ``end`` (the range) and
# ``pool_ids`` or ``workload_ids`` (None: every one): what the readers of usage (the
# reports) depend on has changed.
usage_changed = Signal()


def recompute_pool_history(sender, pool, **kwargs):
    """A pool's service period decides which of its hours are charged: its raw hours and
    daily sums are recomputed on a worker, queued through the outbox so that a broker
    that is down delays the work rather than losing it."""
    enqueue("telemetry.rollup_pool_history", pool.pk)
