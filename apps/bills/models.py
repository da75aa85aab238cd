"""Cloud bills imported from a provider's FOCUS dataset, the rules that map their lines to
pools, and what finance chose when a bill replaced a pool's typed price.

Costs are kept exactly as the file writes them: ``DecimalField`` with 24 decimal places
(a file with more is refused, never rounded), and each bill remembers the most decimal
places its BilledCost column used, so its totals read back at the file's precision.
"""

import fnmatch

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

# Exports written from binary floats carry their shortest round-trip text, e.g.
# 227.28753400000005 (14 places) or 0.00012345678901234567 (20): up to 17 significant
# digits after up to 6 zeros, so 24 places keep every such value exactly, and 18 digits
# before the point any bill's amount.
COST_PLACES = 24
COST_DIGITS = 18 + COST_PLACES


def _cost(label, **kwargs):
    return models.DecimalField(
        label, max_digits=COST_DIGITS, decimal_places=COST_PLACES, null=True, blank=True, **kwargs
    )


class Bill(models.Model):
    """One imported FOCUS file: its lines, and the totals read from them once."""

    class Source(models.TextChoices):
        UPLOAD = "upload", _("upload")
        API = "api", _("API")
        COMMAND = "command", _("command line")

    filename = models.CharField(_("file name"), max_length=255, blank=True)
    # SHA-256 of the file's text (a .csv.gz's uncompressed text): the same file twice is
    # the same bill.
    content_sha256 = models.CharField(max_length=64, unique=True)
    focus_version = models.CharField(_("FOCUS version"), max_length=20, blank=True)
    source = models.CharField(_("source"), max_length=10, choices=Source.choices)
    rows = models.PositiveIntegerField(_("lines"), default=0)
    billed_cost = models.DecimalField(
        _("billed cost"), max_digits=COST_DIGITS, decimal_places=COST_PLACES, default=0
    )
    # The most decimal places of the file's BilledCost values: totals are shown with them.
    cost_places = models.PositiveSmallIntegerField(default=2)
    # ServiceProviderName (ProviderName before FOCUS 1.3) → its BilledCost, decimal strings.
    by_provider = models.JSONField(default=dict, blank=True)
    currencies = models.JSONField(default=list, blank=True)
    charge_period_start = models.DateTimeField(_("charge period start"), null=True, blank=True)
    charge_period_end = models.DateTimeField(_("charge period end"), null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(_("imported at"), auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("bill")
        verbose_name_plural = _("bills")

    def __str__(self):
        return self.filename or f"#{self.pk}"

    def get_absolute_url(self):
        return reverse("bills:bill_detail", args=[self.pk])

    @property
    def name(self) -> str:
        return str(self)


class BillPeriod(models.Model):
    """A provider's billing period a bill covers. One bill per provider and period, so a
    second file with the same charges cannot count them twice."""

    bill = models.ForeignKey(Bill, on_delete=models.CASCADE, related_name="periods")
    provider = models.CharField(max_length=200)
    billing_period_start = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "billing_period_start"], name="one_bill_per_provider_period"
            )
        ]
        verbose_name = _("billing period")
        verbose_name_plural = _("billing periods")

    def __str__(self):
        return f"{self.provider} {self.billing_period_start:%Y-%m-%d}"


class BillLine(models.Model):
    """One charge of a bill, with the FOCUS columns gpufleet reads."""

    bill = models.ForeignKey(Bill, on_delete=models.CASCADE, related_name="lines")
    line_number = models.PositiveIntegerField(_("line"))
    provider = models.CharField(_("provider"), max_length=200)
    invoice_issuer = models.CharField(_("invoice issuer"), max_length=200, blank=True)
    publisher = models.CharField(_("publisher"), max_length=200, blank=True)
    billing_account_id = models.CharField(_("billing account"), max_length=300, blank=True)
    sub_account_id = models.CharField(_("sub-account"), max_length=300, blank=True)
    sub_account_name = models.CharField(_("sub-account name"), max_length=300, blank=True)
    resource_id = models.TextField(_("resource id"), blank=True)
    resource_name = models.CharField(_("resource name"), max_length=500, blank=True)
    resource_type = models.CharField(_("resource type"), max_length=300, blank=True)
    sku_id = models.CharField(_("SKU"), max_length=300, blank=True)
    sku_price_id = models.CharField(_("SKU price"), max_length=300, blank=True)
    charge_category = models.CharField(_("charge category"), max_length=50, blank=True)
    charge_description = models.TextField(_("charge description"), blank=True)
    service_name = models.CharField(_("service"), max_length=300, blank=True)
    service_category = models.CharField(_("service category"), max_length=100, blank=True)
    region_id = models.CharField(_("region"), max_length=100, blank=True)
    billing_currency = models.CharField(_("currency"), max_length=3)
    billed_cost = models.DecimalField(
        _("billed cost"), max_digits=COST_DIGITS, decimal_places=COST_PLACES
    )
    effective_cost = _cost(_("effective cost"))
    list_cost = _cost(_("list cost"))
    contracted_cost = _cost(_("contracted cost"))
    consumed_quantity = _cost(_("consumed quantity"))
    consumed_unit = models.CharField(_("consumed unit"), max_length=100, blank=True)
    pricing_quantity = _cost(_("pricing quantity"))
    pricing_unit = models.CharField(_("pricing unit"), max_length=100, blank=True)
    charge_period_start = models.DateTimeField(_("charge period start"))
    charge_period_end = models.DateTimeField(_("charge period end"))
    billing_period_start = models.DateTimeField(_("billing period start"))
    billing_period_end = models.DateTimeField(_("billing period end"))
    tags = models.JSONField(_("tags"), default=dict, blank=True)

    class Meta:
        ordering = ["bill", "line_number"]
        indexes = [models.Index(fields=["charge_period_start"], name="bill_line_charge_start")]
        verbose_name = _("bill line")
        verbose_name_plural = _("bill lines")

    def __str__(self):
        return f"{self.bill} line {self.line_number}"


class MappingRule(models.Model):
    """Maps the bill lines it matches to a pool; the lowest priority number that matches
    a line wins."""

    class Kind(models.TextChoices):
        RESOURCE_ID = "resource_id", _("ResourceId matches a glob pattern")
        TAG = "tag", _("Tag key=value")
        SUB_ACCOUNT = "sub_account", _("SubAccountId equals")
        SKU = "sku", _("SkuId equals")

    priority = models.PositiveIntegerField(_("priority"), default=100)
    kind = models.CharField(_("matches by"), max_length=20, choices=Kind.choices)
    value = models.CharField(
        _("value"),
        max_length=500,
        help_text=_(
            "A glob for ResourceId (* any text, ? one character, e.g. "
            "arn:aws:ec2:*:instance/i-0abc*); key=value for a tag; the exact SubAccountId "
            "or SkuId otherwise."
        ),
    )
    pool = models.ForeignKey(
        "pools.Pool", on_delete=models.CASCADE, related_name="bill_rules", verbose_name=_("pool")
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["priority", "pk"]
        verbose_name = _("bill mapping rule")
        verbose_name_plural = _("bill mapping rules")

    def __str__(self):
        return f"{self.get_kind_display()}: {self.value} → {self.pool}"

    def get_absolute_url(self):
        return reverse("bills:rule_list")

    @property
    def name(self) -> str:
        return str(self)

    def matches(self, line) -> bool:
        """Whether ``line`` (a BillLine or anything with its attributes) is this rule's."""
        if self.kind == self.Kind.RESOURCE_ID:
            # Case-sensitive, as resource ids are.
            return bool(line.resource_id) and fnmatch.fnmatchcase(line.resource_id, self.value)
        if self.kind == self.Kind.TAG:
            key, _sep, value = self.value.partition("=")
            tags = line.tags or {}
            return key in tags and str(tags[key]) == value
        if self.kind == self.Kind.SUB_ACCOUNT:
            return line.sub_account_id == self.value
        return line.sku_id == self.value


class ReconciliationSettings(models.Model):
    """The installation's reconciliation settings: one row."""

    tolerance_pct = models.DecimalField(
        _("tolerance (%)"),
        max_digits=6,
        decimal_places=2,
        default=2,
        help_text=_("A pool-month whose billed cost differs from the computed by more is flagged."),
    )

    class Meta:
        verbose_name = _("reconciliation settings")
        verbose_name_plural = _("reconciliation settings")

    def __str__(self):
        return f"tolerance {self.tolerance_pct} %"

    @classmethod
    def current(cls) -> "ReconciliationSettings":
        return cls.objects.order_by("pk").first() or cls.objects.create()


class PriceReplacement(models.Model):
    """Finance chose a pool-month's billed cost over the typed price: who, when, and the
    figures then. An open month's price periods were set from it; a closed month keeps
    its frozen figures and the change shows as an adjustment in the first open month."""

    pool = models.ForeignKey(
        "pools.Pool", on_delete=models.CASCADE, related_name="bill_replacements"
    )
    month = models.DateField(_("month"), help_text=_("Its first day."))
    billed_usd = models.DecimalField(
        _("billed (USD)"), max_digits=COST_DIGITS, decimal_places=COST_PLACES
    )
    computed_usd = models.DecimalField(
        _("computed (USD)"), max_digits=COST_DIGITS, decimal_places=COST_PLACES
    )
    gpu_hours = models.DecimalField(_("GPU-hours"), max_digits=20, decimal_places=6)
    price_per_gpu_hour_usd = models.DecimalField(
        _("price per GPU-hour (USD)"), max_digits=12, decimal_places=4
    )
    month_was_closed = models.BooleanField(_("month closed"), default=False)
    chosen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    chosen_by_username = models.CharField(max_length=150)
    chosen_at = models.DateTimeField(_("chosen at"), auto_now_add=True)

    class Meta:
        ordering = ["-chosen_at", "-pk"]
        verbose_name = _("billed price replacement")
        verbose_name_plural = _("billed price replacements")

    def __str__(self):
        return f"{self.pool} {self.month:%Y-%m}"
