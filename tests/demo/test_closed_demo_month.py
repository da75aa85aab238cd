"""The demo's closed month: nothing changed since it closed, so no adjustment moves it,
by pool, purpose or workload."""

from decimal import Decimal

import pytest
from django.utils import timezone

from apps.reports.cost import periods
from apps.reports.models import ClosedMonth
from apps.showback.months import last_complete_month
from apps.showback.periods import close_month
from tests.factories import UserFactory


@pytest.mark.django_db
def test_a_month_closed_and_unchanged_has_no_adjustment(demo):
    closed = ClosedMonth.objects.filter(is_closed=True).first()
    if closed is None:
        # The demo closes the previous month only when its history reaches into it.
        closed = close_month(last_complete_month(timezone.now()).date(), UserFactory())
    for group_by in ("pool", "purpose", "workload"):
        moved = [
            (row.key, {name: value for name, value in vars(row).items() if value})
            for row in periods.adjustment_rows(closed, group_by)
        ]
        assert moved == [], (group_by, str(moved))
    # The frozen rows add up to the month's frozen cost, whichever grouping reads them.
    for group_by in ("pool", "workload"):
        rows = periods.frozen_cost_report(closed, group_by)
        total_usd = Decimal(str(sum(row.cost_usd for row in rows)))
        assert abs(total_usd - closed.cost_usd) < Decimal("0.000001"), group_by
