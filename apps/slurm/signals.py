"""``jobs_changed``: sent after the commit of an import or a re-map that wrote jobs, for
what reads them (the cost report's cache, apps/reports/signals.py)."""

from django.db import transaction
from django.dispatch import Signal

jobs_changed = Signal()


def jobs_changed_on_commit() -> None:
    transaction.on_commit(lambda: jobs_changed.send(sender=None))
