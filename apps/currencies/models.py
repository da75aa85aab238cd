"""Exchange rates by month: how many units of a currency one US dollar buys in a month.

A pool's prices are in its own currency (``Pool.currency``); the cost engine converts a
pool-hour's cost to US dollars at the rate of the hour's UTC month, then to the
installation's reporting currency (``REPORTING_CURRENCY``) at that month's rate of the
reporting currency (apps/reports/cost/rates.py). USD needs no rate."""

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from apps.currencies.codes import validate_currency

# Places of a stored rate: a central bank publishes 4 to 6; 10 keeps any it gives.
RATE_PLACES = 10


class ExchangeRate(models.Model):
    month = models.DateField(_("month"), help_text=_("Its first day: the rate holds all month."))
    currency = models.CharField(
        _("currency"),
        max_length=3,
        validators=[validate_currency],
        help_text=_("ISO 4217 code, e.g. CNY."),
    )
    units_per_usd = models.DecimalField(
        _("units per US dollar"),
        max_digits=24,
        decimal_places=RATE_PLACES,
        validators=[MinValueValidator(Decimal("0.0000000001"))],
        help_text=_("How many units of the currency one US dollar buys, e.g. 7.1 CNY."),
    )
    source = models.CharField(
        _("source"),
        max_length=300,
        blank=True,
        help_text=_("Where the rate comes from, e.g. a central bank's monthly average."),
    )
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("changed by"),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["-month", "currency"]
        verbose_name = _("exchange rate")
        verbose_name_plural = _("exchange rates")
        constraints = [
            models.UniqueConstraint(
                fields=["month", "currency"], name="one_exchange_rate_per_month_and_currency"
            ),
            models.CheckConstraint(
                condition=models.Q(units_per_usd__gt=0), name="exchange_rate_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(month__day=1), name="exchange_rate_month_first_day"
            ),
        ]

    def __str__(self):
        return f"{self.currency} {self.month:%Y-%m}"

    def get_absolute_url(self):
        return reverse("currencies:exchangerate_list") + f"?month={self.month:%Y-%m}"

    @property
    def name(self) -> str:
        return str(self)
