"""Budgets: a monthly amount, in a currency of its own, for one team or one pool.

A budget is stated in the currency it is made in (``currency``: the reporting currency
unless told otherwise) and keeps it: an installation whose reporting currency changes
later does not read a budget of 1,000 USD as 1,000 EUR. Its burn-down converts the
amount to the reporting currency at the month's exchange rate, the spend's
(apps/showback/selectors.py); without that rate the burn-down is unknown and names the
rate, never taken as 1.

A budget belongs to exactly one of a team or a pool (a check constraint says so); its
changes are kept (django-simple-history), so a raised budget still shows what it was.
Spend is never stored: it is read from the cost report (apps/showback/selectors.py).
"""

from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from apps.currencies.codes import reporting_currency, validate_currency


class BudgetQuerySet(models.QuerySet):
    def in_scope(self, scope):
        """Budgets of the scope's teams and of pools in scope (a shared pool's are seen
        by everyone, as the pool is)."""
        if scope.everything:
            return self
        team_ids = sorted(scope.team_ids)
        return self.filter(
            Q(team__in=team_ids)
            | Q(pool__isnull=False, pool__team__isnull=True)
            | Q(pool__team__in=team_ids)
        )


class Budget(models.Model):
    team = models.ForeignKey(
        "accounts.Team",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="budgets",
        verbose_name=_("team"),
    )
    pool = models.ForeignKey(
        "pools.Pool",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="budgets",
        verbose_name=_("pool"),
    )
    amount_per_month = models.DecimalField(
        _("amount per month"),
        max_digits=14,
        decimal_places=2,
        validators=[MinValueValidator(Decimal("0.01"))],
        help_text=_("In the budget's currency."),
    )
    currency = models.CharField(
        _("currency"),
        max_length=3,
        default=reporting_currency,
        validators=[validate_currency],
        help_text=_(
            "ISO 4217 code of the amount; the reporting currency unless the budget was "
            "stated in another. Its burn-down converts it at the month's exchange rate."
        ),
    )
    note = models.CharField(_("note"), max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BudgetQuerySet.as_manager()
    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["team__name", "pool__name"]
        verbose_name = _("budget")
        verbose_name_plural = _("budgets")
        constraints = [
            models.CheckConstraint(
                condition=(Q(team__isnull=False) & Q(pool__isnull=True))
                | (Q(team__isnull=True) & Q(pool__isnull=False)),
                name="budget_of_a_team_or_a_pool",
                violation_error_message=_(
                    "A budget is for one team or one pool: choose one of the two."
                ),
            ),
            models.CheckConstraint(
                condition=Q(amount_per_month__gt=0), name="budget_amount_positive"
            ),
            models.UniqueConstraint(
                fields=["team"], condition=Q(team__isnull=False), name="budget_one_per_team"
            ),
            models.UniqueConstraint(
                fields=["pool"], condition=Q(pool__isnull=False), name="budget_one_per_pool"
            ),
        ]

    def __str__(self):
        return gettext("budget of %(owner)s") % {"owner": self.owner_name}

    def get_absolute_url(self):
        if self.team_id:
            return reverse("showback:team_detail", kwargs={"slug": self.team.slug})
        return reverse("showback:budget_list")

    @property
    def name(self) -> str:
        return str(self)

    @property
    def owner_name(self) -> str:
        if self.team_id:
            return self.team.name
        return self.pool.name if self.pool_id else "—"

    @property
    def owner_slug(self) -> str:
        return self.team.slug if self.team_id else self.pool.slug

    @property
    def team_id_in_charge(self) -> int | None:
        """The team that sees the budget's alerts: its own, or its pool's (None: shared)."""
        return self.team_id if self.team_id else self.pool.team_id
