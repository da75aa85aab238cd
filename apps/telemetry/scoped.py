"""Telemetry objects in a user's scope (apps/accounts/scope.py), through their pool or
workload; anything else answers 404 and is not offered.

- Hostname rules and pull sources are their pool's. A pull source without a pool is
  shared: its GPUs join pools by the hostname rules or wait unassigned, like any GPU.
- An import run is its pool's (GPU telemetry) or its workload's (requests). A run that
  names neither (its GPUs placed by hostname rules, or left unassigned) and that a person
  started (an upload, an API push) is seen by that person and the fleet-wide: what it
  stored belongs to no team in particular, and its page is its uploader's receipt. One
  that no person started (a pull of a source without a pool, the command line) is
  shared, as that source is.
- GPU devices are their pool's. Unassigned GPUs belong to no team: they are fleet data,
  listed for everyone as before, but a GPU goes only to a pool in the assigner's scope,
  and a GPU already in another team's pool cannot be moved by them.
"""

from django.db.models import Q

from apps.accounts.scope import scope_of
from apps.pools.querysets import pool_scope_filter, workload_scope_filter
from apps.telemetry.models import GpuDevice, HostnameRule, ImportRun, PullSource


def import_runs_of(user):
    """The import runs ``user`` may see (any other is a 404)."""
    scope = scope_of(user)
    if scope.everything:
        return ImportRun.objects.all()
    return ImportRun.objects.filter(
        (Q(pool__isnull=False) & pool_scope_filter(scope, "pool__"))
        | (Q(workload__isnull=False) & workload_scope_filter(scope, "workload__"))
        | (
            Q(pool__isnull=True, workload__isnull=True)
            & (Q(created_by=user.pk) | Q(created_by__isnull=True))
        )
    )


def hostname_rules_in(scope):
    return HostnameRule.objects.filter(pool_scope_filter(scope, "pool__"))


def pull_sources_in(scope):
    """Sources of the pools in ``scope``, and those of no pool (shared)."""
    return PullSource.objects.filter(pool_scope_filter(scope, "pool__"))


def assignable_devices(scope):
    """The GPUs a user with ``scope`` may put in a pool: unassigned ones, and those of
    the pools in their scope (moved from one of their pools to another)."""
    return GpuDevice.objects.filter(Q(pool__isnull=True) | pool_scope_filter(scope, "pool__"))
