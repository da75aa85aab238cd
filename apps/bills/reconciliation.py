"""Bills against the cost engine: per pool and month, what the provider billed for the
lines the mapping rules give the pool, against what gpufleet computed for it.

- A line belongs to the month its ChargePeriodStart falls in (UTC), and to the pool of
  the first rule that matches it (``MappingRule.matches``: lowest priority number, then
  oldest).
- Computed is the cost report's figure for the pool and month (apps/reports/cost/
  periods.py): a closed month's as it froze, an open month's as the data says now,
  without the adjustments other months book into it.
- Difference = billed − computed; its share = difference ÷ computed × 100. A row is
  flagged when the share's size exceeds the installation's tolerance, or when nothing was
  computed but something billed.
- Costs compare only in one currency (``comparable_currency``): a pool whose lines are
  billed in anything but the computed figures' USD is flagged "currency differs" and not
  compared.
- Lines that match no rule but look like GPUs (``GPU_PATTERN`` on their SKU, SKU price,
  description, resource type and name) are listed as GPUs gpufleet does not know.
"""

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from django.db import transaction
from django.utils.translation import gettext_lazy as _

from apps.bills.models import BillLine, MappingRule, PriceReplacement, ReconciliationSettings
from apps.core.money import as_decimal, to_unit_price
from apps.pools import prices
from apps.pools.choices import Deployment
from apps.pools.hours import floor_hour
from apps.pools.models import Pool, PoolPricePeriod
from apps.reports.cache import data_changed
from apps.reports.cost import periods

COMPUTED_CURRENCY = "USD"
# What makes an unmatched line look like a GPU: the word, NVIDIA data-centre GPU names,
# AWS's GPU instance families (p4d, p4de, p5, p5e, p5en), Azure's N-series sizes
# (Standard_NC…, ND…, NV…) and Google's accelerator-optimised machine types (a2-, a3-).
GPU_PATTERN = re.compile(
    r"gpu|a100|h100|h200|b200|v100|l40s|\bp4de?\b|\bp5(e|en)?\b|standard_n[cdv]\d|"
    r"\bnd\d|nd-series|\ba[23]-(high|mega|ultra|edge)",
    re.IGNORECASE,
)
GPU_FIELDS = ("sku_id", "sku_price_id", "charge_description", "resource_type", "resource_name")
UNKNOWN_LINES_LISTED = 200

CURRENCY_DIFFERS = "currency_differs"
OVER_TOLERANCE = "over_tolerance"
WITHIN = "within"
NOTHING_COMPUTED = "nothing_computed"
STATUS_LABELS = {
    CURRENCY_DIFFERS: _("currency differs"),
    OVER_TOLERANCE: _("beyond tolerance"),
    NOTHING_COMPUTED: _("billed, nothing computed"),
    WITHIN: _("within tolerance"),
}

LINE_FIELDS = (
    "pk",
    "bill_id",
    "line_number",
    "provider",
    "resource_id",
    "resource_name",
    "resource_type",
    "sub_account_id",
    "sku_id",
    "sku_price_id",
    "charge_description",
    "tags",
    "billed_cost",
    "billing_currency",
    "charge_period_start",
)


# A month as the pages and the API take it: YYYY-MM, years 1900–2099.
MONTH_PATTERN = r"^(19|20)[0-9]{2}-(0[1-9]|1[0-2])$"


def parse_month(text: str) -> date | None:
    """The first day of the month ``text`` names (YYYY-MM), or None."""
    if not re.match(MONTH_PATTERN, text or ""):
        return None
    year, month = text.split("-")
    return date(int(year), int(month), 1)


class ReconciliationError(ValueError):
    """A replacement that cannot be made; the message says why."""


@dataclass
class _Line:
    pk: int
    bill_id: int
    line_number: int
    provider: str
    resource_id: str
    resource_name: str
    resource_type: str
    sub_account_id: str
    sku_id: str
    sku_price_id: str
    charge_description: str
    tags: dict
    billed_cost: Decimal
    billing_currency: str
    charge_period_start: datetime


@dataclass
class PoolMonth:
    pool: Pool
    month: date
    billed: Decimal = Decimal(0)
    billed_by_currency: dict = field(default_factory=dict)
    lines: int = 0
    computed: Decimal | None = None
    gpu_hours: Decimal = Decimal(0)
    status: str = WITHIN
    replacement: PriceReplacement | None = None

    @property
    def currency(self) -> str:
        currencies = sorted(self.billed_by_currency) or [COMPUTED_CURRENCY]
        return ", ".join(currencies)

    @property
    def compared(self) -> bool:
        return self.status != CURRENCY_DIFFERS

    @property
    def difference(self) -> Decimal | None:
        if not self.compared or self.computed is None:
            return None
        return self.billed - self.computed

    @property
    def difference_share(self) -> Decimal | None:
        """Difference ÷ computed × 100; None with nothing computed to divide by."""
        if self.difference is None or not self.computed:
            return None
        return self.difference / self.computed * 100

    @property
    def flagged(self) -> bool:
        return self.status != WITHIN

    @property
    def status_label(self):
        return STATUS_LABELS[self.status]


@dataclass
class Reconciliation:
    month: date
    tolerance_pct: Decimal
    rows: list[PoolMonth]
    unknown_lines: list[_Line]
    unknown_count: int
    unknown_by_currency: dict


def comparable_currency(currencies) -> bool:
    """Whether lines billed in ``currencies`` compare with the computed figures (USD)
    as they stand: the one place that decides, so exchange rates plug in here."""
    return set(currencies) <= {COMPUTED_CURRENCY}


def month_bounds(month: date) -> tuple[datetime, datetime]:
    return periods.month_bounds(month)


def looks_like_gpu(line) -> bool:
    return any(GPU_PATTERN.search(getattr(line, name) or "") for name in GPU_FIELDS)


def rule_for(line, rules) -> MappingRule | None:
    return next((rule for rule in rules if rule.matches(line)), None)


def _computed(month: date, pools) -> dict[str, object]:
    """Pool slug → its cost row for the month: frozen for a closed month, live otherwise,
    without adjustment rows."""
    start, end = month_bounds(month)
    return {
        row.key: row
        for row in periods.cost_report(start, end, "pool")
        if not periods.is_adjustment(row) and row.key in pools
    }


def reconcile(month: date) -> Reconciliation:
    """The month's reconciliation: a row per pool some rule maps lines to (in name
    order), and the unmatched lines that look like GPUs."""
    settings = ReconciliationSettings.current()
    rules = list(MappingRule.objects.select_related("pool").order_by("priority", "pk"))
    pools = {rule.pool.slug: rule.pool for rule in rules}
    rows = {slug: PoolMonth(pool, month) for slug, pool in pools.items()}
    unknown: list[_Line] = []
    unknown_count, unknown_by_currency = 0, {}
    start, end = month_bounds(month)
    lines = (
        BillLine.objects.filter(charge_period_start__gte=start, charge_period_start__lt=end)
        .order_by("bill_id", "line_number")
        .values_list(*LINE_FIELDS)
    )
    for values in lines.iterator(chunk_size=2000):
        line = _Line(*values)
        rule = rule_for(line, rules)
        if rule is not None:
            row = rows[rule.pool.slug]
            row.lines += 1
            row.billed_by_currency[line.billing_currency] = (
                row.billed_by_currency.get(line.billing_currency, Decimal(0)) + line.billed_cost
            )
        elif looks_like_gpu(line):
            unknown_count += 1
            unknown_by_currency[line.billing_currency] = (
                unknown_by_currency.get(line.billing_currency, Decimal(0)) + line.billed_cost
            )
            if len(unknown) < UNKNOWN_LINES_LISTED:
                unknown.append(line)
    computed = _computed(month, rows)
    replacements = {
        replacement.pool_id: replacement
        for replacement in PriceReplacement.objects.filter(month=month).order_by("chosen_at")
    }
    for slug, row in rows.items():
        cost_row = computed.get(slug)
        row.computed = cost_row.cost_usd if cost_row else Decimal(0)
        row.gpu_hours = as_decimal(cost_row.capacity_gpu_hours) if cost_row else Decimal(0)
        row.billed = sum(row.billed_by_currency.values(), Decimal(0))
        row.replacement = replacements.get(row.pool.pk)
        row.status = _status(row, settings.tolerance_pct)
    return Reconciliation(
        month,
        settings.tolerance_pct,
        sorted(rows.values(), key=lambda row: row.pool.name.lower()),
        unknown,
        unknown_count,
        unknown_by_currency,
    )


def _status(row: PoolMonth, tolerance_pct: Decimal) -> str:
    if not comparable_currency(row.billed_by_currency):
        return CURRENCY_DIFFERS
    if not row.computed:
        return NOTHING_COMPUTED if row.billed else WITHIN
    return OVER_TOLERANCE if abs(row.difference_share) > tolerance_pct else WITHIN


def pool_month(pool: Pool, month: date) -> PoolMonth:
    """The reconciliation row of ``pool`` in ``month``."""
    found = next((row for row in reconcile(month).rows if row.pool.pk == pool.pk), None)
    if found is None:
        raise ReconciliationError(str(_("No mapping rule gives this pool any bill lines.")))
    return found


# --- replacing the typed price with the billed cost --------------------------------------

PRICE_FIELD = {
    Deployment.CLOUD_ON_DEMAND: "on_demand_price_per_gpu_hour_usd",
    Deployment.CLOUD_RESERVED: "reserved_price_per_gpu_hour_usd",
}


def _period_values(pool: Pool, period: PoolPricePeriod | None) -> dict:
    source = period if period is not None else pool
    return {name: getattr(source, name) for name in prices.PERIOD_FIELDS}


def _priced(pool: Pool, values: dict, price_field: str, price: Decimal) -> dict:
    """``values`` (a period's) with ``price_field`` set to ``price`` and the derived
    prices recomputed as the pool model derives them."""
    draft = Pool(gpu_model=pool.gpu_model, gpu_count=pool.gpu_count, **values)
    setattr(draft, price_field, price)
    draft.refresh_effective_price()
    return {name: getattr(draft, name) for name in prices.PERIOD_FIELDS}


@transaction.atomic
def replace_price(pool: Pool, month: date, *, user) -> PriceReplacement:
    """Make the billed cost the pool's cost for ``month``: the price per GPU-hour in
    force over the month becomes billed ÷ the month's GPU-hours (the GPU-hours the
    computed figure prices), set through the pool's price periods so the hours before and
    after keep theirs. An open month's figures change at once; a closed month's frozen
    figures stay, and the change shows as an adjustment in the first open month, as any
    change to a closed month's data does (apps/reports/cost/periods.py). Recorded with
    who, when and the figures before."""
    pool = Pool.objects.select_for_update().select_related("gpu_model").get(pk=pool.pk)
    price_field = PRICE_FIELD.get(pool.deployment)
    if price_field is None:
        raise ReconciliationError(
            str(_("Only a cloud pool's price comes from a bill; this pool is owned."))
        )
    row = pool_month(pool, month)
    if not row.compared:
        raise ReconciliationError(
            str(_("The bill is in %(currency)s: only USD bills replace a price today."))
            % {"currency": row.currency}
        )
    if not row.gpu_hours:
        raise ReconciliationError(
            str(_("The pool has no GPU-hours in the month: a price cannot be derived."))
        )
    price = to_unit_price(row.billed / row.gpu_hours)
    start, end = month_bounds(month)
    start = max(start, floor_hour(pool.in_service_from))
    prices.ensure_first_period(pool, user=user)
    after = prices.period_in_force(pool, end)
    after_values = _period_values(pool, after)
    at_start = _period_values(pool, prices.period_in_force(pool, start))
    PoolPricePeriod.objects.update_or_create(
        pool=pool,
        effective_from=start,
        defaults={**_priced(pool, at_start, price_field, price), "changed_by": user},
    )
    for period in pool.price_periods.filter(effective_from__gt=start, effective_from__lt=end):
        for name, value in _priced(pool, _period_values(pool, period), price_field, price).items():
            setattr(period, name, value)
        period.changed_by = user
        period.save()
    # The month after keeps the prices it had.
    if not pool.price_periods.filter(effective_from=end).exists():
        PoolPricePeriod.objects.create(
            pool=pool, effective_from=end, changed_by=user, **after_values
        )
    if prices.apply_prices_in_force(pool):
        pool.save()
    closed = any(closed_month.month == month for closed_month in periods.closed_months())
    replacement = PriceReplacement.objects.create(
        pool=pool,
        month=month,
        billed_usd=row.billed,
        computed_usd=row.computed,
        gpu_hours=row.gpu_hours,
        price_per_gpu_hour_usd=price,
        month_was_closed=closed,
        chosen_by=user if user is not None and user.is_authenticated else None,
        chosen_by_username=getattr(user, "username", "") or "",
    )
    transaction.on_commit(data_changed)
    return replacement
