"""Columns that the apps above pools add to the pool list.

pools sits below telemetry and reports (the layers contract in pyproject.toml): it cannot
read a pool's usage or cost, and the list must not import the apps that can. So the app
that owns such figures registers a ``PoolListColumns`` from its ``AppConfig.ready()`` (a
registry, as NetBox lets other apps add to its pages) and the list view applies every
registered one: ``annotate`` gives the list's queryset the values the columns show and sort by, so
sorting, filtering and pagination stay one SQL query, and ``columns`` joins the table.
pools knows nothing of what the columns mean; a project without the registering app
lists its pools without them.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from apps.accounts.scope import EVERYTHING, Scope


@dataclass(frozen=True)
class PoolListColumns:
    # Registering the same name again replaces the entry.
    name: str
    # ``(column name, django-tables2 Column)`` pairs, made anew for each table.
    columns: Callable[[], list[tuple[str, object]]]
    # The pool list's queryset at the instant ``now``, seen by a viewer of ``scope``
    # (apps/accounts/scope.py), with the annotations the columns read and sort by.
    annotate: Callable[[QuerySet, datetime, Scope], QuerySet]
    # A sentence under the table saying what the columns mean ("" for none).
    note: str = ""


_registered: dict[str, PoolListColumns] = {}


def register(entry: PoolListColumns) -> None:
    _registered[entry.name] = entry


def registered() -> list[PoolListColumns]:
    """The registered entries, in the order they registered."""
    return list(_registered.values())


def apply(
    pools: QuerySet, now: datetime, scope: Scope = EVERYTHING
) -> tuple[QuerySet, list[tuple[str, object]], list]:
    """(the annotated pools, the extra columns, the notes) of every registered entry,
    for a viewer of ``scope``."""
    columns, notes = [], []
    for entry in registered():
        pools = entry.annotate(pools, now, scope)
        columns += entry.columns()
        if entry.note:
            notes.append(entry.note)
    return pools, columns, notes
