"""Writes that change what a report shows, and recomputed usage (telemetry's
``usage_changed``), make the cached figures unreachable (apps/reports/cache.py)."""

from django.db import transaction
from django.db.models.signals import post_delete, post_save

from apps.reports.cache import data_changed


def _bump_after_commit(sender, **kwargs):
    # After the commit, so a page rendered meanwhile cannot cache the old data anew.
    transaction.on_commit(data_changed)


def _usage_changed(sender, **kwargs):
    # Sent after the commit already (apps/telemetry/rollups/days.py).
    data_changed()


def connect():
    from apps.catalog.models import GpuModel
    from apps.currencies.models import ExchangeRate
    from apps.pools.models import Interruption, Pool, Workload
    from apps.slurm.signals import jobs_changed
    from apps.telemetry.models import HostnameRule
    from apps.telemetry.signals import usage_changed

    usage_changed.connect(_usage_changed, dispatch_uid="reports-usage-changed")
    # Sent after the commit already (apps/slurm/signals.py): jobs split pools' costs.
    jobs_changed.connect(_usage_changed, dispatch_uid="reports-slurm-jobs-changed")

    # Hostname rules place Slurm jobs' nodes in pools.
    for model in (Pool, Workload, Interruption, GpuModel, ExchangeRate, HostnameRule):
        post_save.connect(_bump_after_commit, sender=model, dispatch_uid=f"reports-{model}-save")
        post_delete.connect(
            _bump_after_commit, sender=model, dispatch_uid=f"reports-{model}-delete"
        )
