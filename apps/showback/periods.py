"""Closing and reopening months (finance signs a month off;
apps/reports/cost/periods.py serves it as it was).

Closing freezes the month's cost report rows, each team's showback, the unattributed rest
and the pools' costs, and the budgets' figures of the month (the audit bundle reads the
showback, so it is frozen with it). Only a month that has ended closes; closing one that
is closed already is refused with a sentence. Finance and superusers close; only a
superuser reopens, with a reason. Both are audit events (apps/accounts/audit.py), and both
make every cached report unreachable (apps/reports/cache.py), as the figures they serve
change.
"""

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Min
from django.utils import timezone
from django.utils.translation import gettext

from apps.accounts import audit
from apps.accounts.models import AuditEvent
from apps.core.sentences import gettext_noop, sentence
from apps.pools.models import Pool
from apps.reports.cache import data_changed
from apps.reports.cost import periods
from apps.reports.cost.rates import frozen_rates
from apps.reports.models import ClosedMonth, MonthReopening
from apps.showback.models import Budget
from apps.showback.months import MONTH

CLOSED = "closed"
OPEN = "open"


class PeriodError(Exception):
    """A close or reopen refused: ``str()`` is the sentence; ``conflict`` when the month's
    state is what refuses it (already closed, not closed)."""

    def __init__(self, message: str, *, conflict: bool = False):
        super().__init__(message)
        self.conflict = conflict


def parse_period(text: str) -> date | None:
    """The first day of the month "2026-10" names, or None."""
    match = MONTH.fullmatch(text or "")
    if not match or not 1 <= int(match.group(2)) <= 12 or int(match.group(1)) < 2000:
        return None
    return date(int(match.group(1)), int(match.group(2)), 1)


def can_close(user) -> bool:
    return user.is_authenticated and (user.is_superuser or user.has_perm("reports.close_month"))


def can_reopen(user) -> bool:
    return user.is_authenticated and user.is_superuser


def _frozen_budgets(figures, month_start: datetime) -> list[dict]:
    """Each budget as the month closes: its amount in its own currency, and the amount
    and the spend in the reporting currency (the amount null without the month's rate),
    with the spend in US dollars."""
    from apps.showback.selectors import _spent, _spent_usd, budget_amounts

    budgets = list(Budget.objects.select_related("team", "pool"))
    amounts = budget_amounts(budgets, month_start)
    frozen = []
    for budget in budgets:
        amount, _missing = amounts[budget.pk]
        frozen.append(
            {
                "id": budget.pk,
                "owner": budget.owner_name,
                "team_id": budget.team_id,
                "pool_id": budget.pool_id,
                "amount_per_month": str(budget.amount_per_month),
                "currency": budget.currency,
                "amount": None if amount is None else str(amount),
                "spent": str(_spent(figures, budget)),
                "reporting_currency": figures.currency,
                "spent_usd": str(_spent_usd(figures, budget)),
            }
        )
    return frozen


@transaction.atomic
def close_month(month: date, user, *, now: datetime | None = None) -> ClosedMonth:
    """Close ``month`` (its first day) as ``user``: freeze its figures and record it."""
    from apps.showback.selectors import live_showback, showback_as_data

    now = now or timezone.now()
    start, end = periods.month_bounds(month)
    label = f"{month:%Y-%m}"
    if end > now:
        raise PeriodError(
            gettext("%(month)s has not ended yet: a month closes once it is over.")
            % {"month": label}
        )
    existing = ClosedMonth.objects.select_for_update().filter(month=month).first()
    if existing is not None and existing.is_closed:
        raise PeriodError(
            gettext("%(month)s is closed already (on %(at)s by %(user)s).")
            % {
                "month": label,
                "at": f"{existing.closed_at:%Y-%m-%d %H:%M} UTC",
                "user": existing.closed_by_username,
            },
            conflict=True,
        )
    closed = existing or ClosedMonth(month=month)
    closed.is_closed = True
    closed.closed_at = now
    closed.closed_by = user
    closed.closed_by_username = user.get_username()
    closed.cost_usd = Decimal(0)
    # The month keeps the rates it closes with: its figures recomputed later use these.
    closed.exchange_rates = frozen_rates(month)
    try:
        # A second first close of the month waits on the first's row, then finds it.
        with transaction.atomic():
            closed.save()
    except IntegrityError:
        raise PeriodError(
            gettext("%(month)s was closed by someone else a moment ago: reload the page.")
            % {"month": label},
            conflict=True,
        ) from None
    closed.cost_usd = periods.freeze_cost_rows(closed)
    figures = live_showback(start, end)
    closed.showback = {
        **showback_as_data(figures),
        "budgets": _frozen_budgets(figures, start),
    }
    closed.save()
    audit.record(
        AuditEvent.Kind.MONTH_CLOSED,
        actor=user,
        detail=sentence(
            gettext_noop("%(user)s closed %(month)s."), user=user.get_username(), month=label
        ),
    )
    transaction.on_commit(data_changed)
    return closed


@transaction.atomic
def reopen_month(month: date, user, reason: str, *, now: datetime | None = None) -> ClosedMonth:
    """Reopen a closed month as a superuser, for ``reason``: it is served live again."""
    label = f"{month:%Y-%m}"
    if not user.is_superuser:
        raise PermissionError(gettext("Only an administrator reopens a closed month."))
    reason = (reason or "").strip()
    if not reason:
        raise PeriodError(gettext("Say why the month reopens: the reason is kept with it."))
    closed = ClosedMonth.objects.select_for_update().filter(month=month, is_closed=True).first()
    if closed is None:
        raise PeriodError(
            gettext("%(month)s is not closed: there is nothing to reopen.") % {"month": label},
            conflict=True,
        )
    closed.is_closed = False
    closed.save(update_fields=["is_closed"])
    MonthReopening.objects.create(
        closed_month=closed,
        reopened_at=now or timezone.now(),
        reopened_by=user,
        reopened_by_username=user.get_username(),
        reason=reason,
    )
    audit.record(
        AuditEvent.Kind.MONTH_REOPENED,
        actor=user,
        detail=sentence(
            gettext_noop("%(user)s reopened %(month)s: %(reason)s"),
            user=user.get_username(),
            month=label,
            reason=reason,
        ),
    )
    transaction.on_commit(data_changed)
    return closed


@dataclass
class Period:
    month: date
    state: str  # CLOSED or OPEN
    cost_usd: Decimal
    closed_at: datetime | None = None
    closed_by: str = ""
    reopenings: list = None
    has_ended: bool = True
    # The cost in the reporting currency, and the rates missing to convert some of it.
    cost: Decimal = Decimal(0)
    missing_rates: set = field(default_factory=set)

    @property
    def missing_rates_sorted(self) -> list[tuple]:
        return sorted(self.missing_rates, key=lambda item: (item[1], item[0]))

    @property
    def label(self) -> str:
        return f"{self.month:%Y-%m}"

    @property
    def is_closed(self) -> bool:
        return self.state == CLOSED


def _period(start: datetime, record, now: datetime) -> Period:
    from apps.showback.selectors import cached_showback, frozen_total

    closed = record is not None and record.is_closed
    missing = set()
    if closed:
        cost = record.cost_usd
        reporting_cost, missing = frozen_total(record)
    else:
        end = min(periods.next_month_start(start), now)
        cost, reporting_cost = Decimal(0), Decimal(0)
        if end > start:
            figures = cached_showback(start, end)
            cost = Decimal(str(round(figures.total_usd, 6)))
            reporting_cost, missing = figures.total, set(figures.missing_rates)
    return Period(
        cost=reporting_cost,
        missing_rates=missing,
        month=start.date(),
        state=CLOSED if closed else OPEN,
        cost_usd=Decimal(cost),
        closed_at=record.closed_at if closed else None,
        closed_by=record.closed_by_username if closed else "",
        reopenings=list(record.reopenings.all()) if record else [],
        has_ended=periods.next_month_start(start) <= now,
    )


def period_of(month: date, now: datetime) -> Period:
    record = ClosedMonth.objects.prefetch_related("reopenings").filter(month=month).first()
    return _period(periods.month_start(month), record, now)


def period_list(now: datetime, months: int = 12) -> list[Period]:
    """The last ``months`` months, the current one first: closed ones with their frozen
    cost, open ones with their cost computed (the current one to date). Months before
    the first pool's service start, which have nothing to close, are left out (closed
    ones stay listed)."""
    records = {
        record.month: record for record in ClosedMonth.objects.prefetch_related("reopenings")
    }
    first_service = Pool.objects.aggregate(first=Min("in_service_from"))["first"]
    first_month = periods.month_start(first_service.date()) if first_service else None
    result = []
    start = periods.month_start(now.date())
    for _index in range(months):
        record = records.get(start.date())
        if result and record is None and (first_month is None or start < first_month):
            break
        result.append(_period(start, record, now))
        start = periods.month_start((start - timedelta(days=1)).date())
    return result
