"""The cost report's rows (``CostRow``): sums of the pools' figures over a span
(``PoolFigures``), each recording what it adds up for its explanations
(apps/reports/cost/explain.py)."""

from collections import defaultdict
from dataclasses import dataclass, field, replace
from decimal import Decimal

from django.utils.translation import gettext

from apps.core.money import as_decimal, times
from apps.pools.models import Pool, Purpose, Workload
from apps.reports.cost import costmodel, explain
from apps.reports.cost.pool_usage import UsageTotals, pool_usage_totals
from apps.reports.cost.prices import (
    PaidPrices,
    paid_hours_full_price_usd,
    pool_full_price,
    price_periods_of,
    price_split,
)
from apps.reports.cost.rates import conversion_for, currencies_of, missing_text, reporting_currency
from apps.reports.cost.service import pool_paid_hours
from apps.reports.cost.workloads import EffectiveHours, RequestTotals
from apps.reports.span import Span

UNATTRIBUTED = "unattributed"
# The row that sums, without naming them, the workloads of teams outside the viewer's
# scope that run on a pool in it (a shared pool): the pool's total stays whole.
OTHER_TEAMS = "other-teams"
# How a row's effective training GPU-hours are known.
MEASURED = "measured"
ESTIMATE = "estimate"


# --- the cost report ---------------------------------------------------------------------


@dataclass
class CostRow:
    key: str
    label: str
    purpose: str = ""
    pool_count: int = 0
    gpus: int = 0
    capacity_gpu_hours: float = 0.0
    measured_capacity_gpu_hours: float = 0.0
    unmeasured_gpu_hours: float = 0.0
    busy_gpu_hours: float = 0.0
    cost_usd: Decimal = Decimal(0)
    measured_cost_usd: Decimal = Decimal(0)
    unmeasured_cost_usd: Decimal = Decimal(0)
    idle_cost_usd: Decimal = Decimal(0)
    requests: int = 0
    tokens: int = 0
    errors: int = 0
    training_busy_gpu_hours: float = 0.0
    # Every interruption recorded on the row's pools or workloads: the same total in
    # every grouping (by pool, purpose or workload).
    lost_gpu_hours: float = 0.0
    # The part of them lost by the training the row's busy training GPU-hours count: what
    # the estimate of effective training GPU-hours subtracts.
    training_lost_gpu_hours: float = 0.0
    interruption_cost_usd: Decimal = Decimal(0)
    # The row's cost in the reporting currency (``REPORTING_CURRENCY``), each month's
    # hours at that month's rates (apps/reports/cost/rates.py).
    cost: Decimal = Decimal(0)
    training_cost_usd: Decimal = Decimal(0)
    inference_cost_usd: Decimal = Decimal(0)
    # The row's training workloads (and unattributed rest) whose effective GPU-hours the
    # event logs measure, and those estimated from the interruptions: the row is
    # measured only when nothing in it is estimated.
    measured_effective_gpu_hours: float = 0.0
    measured_parts: int = 0
    estimated_parts: int = 0
    members: list = field(default_factory=list, repr=False)
    # The slugs of the clusters whose pools the row adds up: a row of one cluster names
    # it (``cluster``), a row across clusters (a purpose's, the unallocated rest) none.
    clusters: set = field(default_factory=set, repr=False)
    # Grouped by workload, the rule that gave the row its share of its pool
    # (apps/reports/cost/split.py), the sentence that names it, and whether the running
    # workloads declared more GPUs than the pool has.
    split_rule: str = ""
    split_rule_text: str = ""
    split_scaled_down: bool = False
    # What the row adds up, in order, for its explanations (apps/reports/cost/explain.py).
    parts: list = field(default_factory=list, repr=False)
    # (currency, month) of the exchange rates missing to convert the row's amounts: the
    # amounts they would convert are left out, so the row's money is incomplete.
    missing_rates: set = field(default_factory=set)

    @property
    def currency(self) -> str:
        return reporting_currency()

    @property
    def cluster(self) -> str:
        """The slug of the one cluster the row's pools are in; empty across clusters."""
        known = self.clusters - {""}
        return next(iter(known)) if len(known) == 1 else ""

    @property
    def incomplete(self) -> bool:
        return bool(self.missing_rates)

    @property
    def missing_rates_sorted(self) -> list[tuple]:
        return sorted(self.missing_rates, key=lambda item: (item[1], item[0]))

    @property
    def utilization_pct(self) -> float | None:
        return costmodel.ratio_or_none(self.busy_gpu_hours, self.measured_capacity_gpu_hours, 100)

    @property
    def cost_per_busy_gpu_hour_usd(self) -> Decimal | None:
        return costmodel.ratio_or_none(self.measured_cost_usd, self.busy_gpu_hours)

    @property
    def cost_per_1k_requests_usd(self) -> Decimal | None:
        cost = self.inference_cost_usd if self.requests else None
        return costmodel.cost_per_thousand_requests_usd(cost, self.requests) if cost else None

    @property
    def cost_per_1m_tokens_usd(self) -> Decimal | None:
        cost = self.inference_cost_usd if self.tokens else None
        return costmodel.cost_per_million_tokens_usd(cost, self.tokens) if cost else None

    @property
    def effective_training_source(self) -> str | None:
        """``measured`` when the event logs measure every training workload of the row,
        ``estimate`` (busy − lost GPU-hours) otherwise; None without training."""
        if self.measured_parts and not self.estimated_parts:
            return MEASURED
        return ESTIMATE if self.training_busy_gpu_hours else None

    @property
    def effective_training_gpu_hours(self) -> float | None:
        if self.effective_training_source == MEASURED:
            return self.measured_effective_gpu_hours
        if not self.training_busy_gpu_hours:
            return None
        return costmodel.effective_training_gpu_hours(
            self.training_busy_gpu_hours, self.training_lost_gpu_hours
        )

    @property
    def effective_training_above_busy(self) -> bool:
        """Measured effective GPU-hours above the busy training GPU-hours the telemetry
        measured: the event log's GPUs or reference step time cannot both be right. Rows
        without training telemetry have nothing to compare with."""
        return (
            self.effective_training_source == MEASURED
            and self.training_busy_gpu_hours > 0
            and self.measured_effective_gpu_hours > self.training_busy_gpu_hours + 1e-9
        )

    def count_effective_training(
        self, workload_id: int, measured: dict[int, "EffectiveHours"], label: str = ""
    ) -> None:
        """Count one training workload of the row as measured (its GPU-hours added: those
        its event log measures and the estimate of the hours it does not cover) or
        estimated."""
        if workload_id in measured:
            effective = measured[workload_id]
            self.measured_parts += 1
            self.measured_effective_gpu_hours += effective.gpu_hours
            self.parts.append(explain.EffectivePart(label, effective))
        else:
            self.estimated_parts += 1

    @property
    def cost_per_effective_training_gpu_hour_usd(self) -> Decimal | None:
        return costmodel.ratio_or_none(self.training_cost_usd, self.effective_training_gpu_hours)

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "label": self.label,
            "cluster": self.cluster or None,
            "capacity_gpu_hours": self.capacity_gpu_hours,
            "measured_capacity_gpu_hours": self.measured_capacity_gpu_hours,
            "unmeasured_gpu_hours": self.unmeasured_gpu_hours,
            "busy_gpu_hours": self.busy_gpu_hours,
            "utilization_pct": self.utilization_pct,
            "cost_usd": self.cost_usd,
            "unmeasured_cost_usd": self.unmeasured_cost_usd,
            "idle_cost_usd": self.idle_cost_usd,
            "cost_per_busy_gpu_hour_usd": self.cost_per_busy_gpu_hour_usd,
            "requests": self.requests,
            "cost_per_1k_requests_usd": self.cost_per_1k_requests_usd,
            "tokens": self.tokens,
            "cost_per_1m_tokens_usd": self.cost_per_1m_tokens_usd,
            "lost_gpu_hours": self.lost_gpu_hours,
            "effective_training_gpu_hours": self.effective_training_gpu_hours,
            "effective_training_source": self.effective_training_source,
            "effective_training_above_busy": self.effective_training_above_busy,
            "cost_per_effective_training_gpu_hour_usd": (
                self.cost_per_effective_training_gpu_hour_usd
            ),
            "interruption_cost_usd": self.interruption_cost_usd,
            "cost": self.cost,
            "currency": self.currency,
            "missing_rates": missing_text(self.missing_rates),
            "missing_exchange_rates": ", ".join(
                f"{item['currency']} {item['month']}" for item in missing_text(self.missing_rates)
            )
            or None,
            "split_rule": self.split_rule,
            "split_rule_text": self.split_rule_text,
            "split_scaled_down": self.split_scaled_down,
        }


@dataclass
class PoolFigures:
    """One pool's figures over a span: the rows of every grouping are sums of these."""

    pool: Pool
    paid_hours: float
    usage: UsageTotals
    requests: RequestTotals
    lost_gpu_hours: float
    # The full prices in force over the paid hours (paid_hours_full_price_usd); None:
    # the pool's current price throughout.
    paid_prices: PaidPrices | None = None

    @property
    def prices_changed(self) -> bool:
        """Whether the span's paid hours were at more than one price."""
        paid = self.paid_prices
        return paid is not None and paid.total_usd > 0 and paid.single_split is None

    @property
    def price_split(self) -> tuple[Decimal, Decimal]:
        """(fixed USD per GPU-hour, USD per GPU kWh) in force over the span: the pool's
        current ones when none other was (with ``prices_changed``: the current ones, which
        an explanation does not multiply out)."""
        paid = self.paid_prices
        if paid is not None and paid.single_split is not None:
            return paid.single_split
        return price_split(self.pool)

    @property
    def unmeasured_usd_per_gpu_hour(self) -> Decimal:
        """The full price per GPU-hour of the unmeasured hours: the one in force, or
        their mean when the span crosses a price change."""
        paid = self.paid_prices
        # Nothing paid converted for want of a rate is not "no price": the hours are left
        # out (their rate is named), never priced in another currency as if it were USD.
        if paid is None or not (paid.total_usd or paid.missing_rates):
            return pool_full_price(self.pool, self.pool.gpu_model.tdp_watts)
        single = paid.single_usd_per_gpu_hour(self.pool.gpu_model.tdp_watts)
        if single is not None:
            return single
        if not self.unmeasured_hours:
            return paid.total_usd / as_decimal(self.paid_hours)
        unmeasured_usd = paid.total_usd - self.usage.measured_hours_full_price_usd
        return max(Decimal(0), unmeasured_usd) / as_decimal(self.unmeasured_hours)

    @property
    def unmeasured_hours(self) -> float:
        # Rounded: fractions of an edge hour are summed in two ways (paid, measured).
        return max(0.0, round(self.paid_hours - self.usage.measured_hours, 9))

    @property
    def unmeasured_cost_usd(self) -> Decimal:
        return times(self.unmeasured_hours, self.unmeasured_usd_per_gpu_hour) * self.pool.gpu_count

    @property
    def cost_usd(self) -> Decimal:
        return self.usage.measured_cost_usd + self.unmeasured_cost_usd

    @property
    def idle_cost_usd(self) -> Decimal:
        return costmodel.idle_cost_usd(
            self.usage.measured_cost_usd,
            self.usage.busy_gpu_hours,
            self.usage.measured_capacity_gpu_hours,
        )

    @property
    def interruption_cost_usd(self) -> Decimal:
        return times(self.lost_gpu_hours, self.unmeasured_usd_per_gpu_hour)

    def in_reporting(self) -> "PoolFigures":
        """These figures with their amounts in the reporting currency (in the ``_usd``
        properties, so one set of formulas serves both)."""
        return replace(
            self,
            usage=self.usage.in_reporting(),
            paid_prices=None if self.paid_prices is None else self.paid_prices.in_reporting(),
        )

    @property
    def cost(self) -> Decimal:
        """The cost in the reporting currency."""
        return self.in_reporting().cost_usd

    @property
    def missing_rates(self) -> frozenset:
        paid = self.paid_prices.missing_rates if self.paid_prices is not None else frozenset()
        return self.usage.missing_rates | paid


def pool_figures(
    span: Span,
    pools: list[Pool],
    workloads: list[Workload],
    requests: dict[int, RequestTotals],
    lost: dict[int, float],
) -> list[PoolFigures]:
    """Every pool's figures from its workloads' request totals and lost GPU-hours: three
    queries, whatever the number of pools."""
    pool_ids = [pool.id for pool in pools]
    periods = price_periods_of(pool_ids)
    service_periods = {pool.id: (pool.in_service_from, pool.in_service_until) for pool in pools}
    conversion = conversion_for(span, currencies_of(periods) | {pool.currency for pool in pools})
    usage = pool_usage_totals(span, pool_ids, periods, service_periods, conversion=conversion)
    paid_prices = paid_hours_full_price_usd(span, pools, periods, conversion)
    workloads_by_pool = defaultdict(list)
    for workload in workloads:
        workloads_by_pool[workload.pool_id].append(workload.id)
    figures = []
    for pool in pools:
        pool_requests = RequestTotals()
        for workload_id in workloads_by_pool[pool.id]:
            pool_requests.merge(requests.get(workload_id, RequestTotals()))
        figures.append(
            PoolFigures(
                pool=pool,
                paid_hours=pool_paid_hours(pool, span),
                usage=usage.get(pool.id, UsageTotals()),
                requests=pool_requests,
                lost_gpu_hours=sum(lost.get(w, 0.0) for w in workloads_by_pool[pool.id]),
                paid_prices=paid_prices[pool.id],
            )
        )
    return figures


def add_pool(row: CostRow, figures: PoolFigures, share: float = 1.0):
    pool = figures.pool
    money_share = as_decimal(share)
    row.pool_count += 1
    row.gpus += pool.gpu_count
    row.capacity_gpu_hours += pool.gpu_count * figures.paid_hours * share
    row.measured_capacity_gpu_hours += figures.usage.measured_capacity_gpu_hours * share
    row.unmeasured_gpu_hours += figures.unmeasured_hours * pool.gpu_count * share
    row.busy_gpu_hours += figures.usage.busy_gpu_hours * share
    row.cost_usd += figures.cost_usd * money_share
    row.cost += figures.cost * money_share
    row.missing_rates |= figures.missing_rates
    row.measured_cost_usd += figures.usage.measured_cost_usd * money_share
    row.unmeasured_cost_usd += figures.unmeasured_cost_usd * money_share
    row.idle_cost_usd += figures.idle_cost_usd * money_share
    # Every workload's interruptions count, whatever the pool's purpose, so the total is
    # the one the workloads' rows add up to.
    row.lost_gpu_hours += figures.lost_gpu_hours * share
    row.interruption_cost_usd += figures.interruption_cost_usd * money_share
    if pool.purpose == Purpose.TRAINING:
        row.training_busy_gpu_hours += figures.usage.busy_gpu_hours * share
        row.training_cost_usd += figures.cost_usd * money_share
        row.training_lost_gpu_hours += figures.lost_gpu_hours * share
    elif pool.purpose == Purpose.INFERENCE:
        row.inference_cost_usd += figures.cost_usd * money_share
    row.members.append(pool.slug)
    row.clusters.add(cluster_slug_of(pool))
    row.parts.append(explain.PoolPart(figures, counts_as=pool.purpose, share=share))


def add_requests(row: CostRow, requests: RequestTotals, label: str):
    row.parts.append(explain.RequestsPart(label, requests.requests, requests.tokens))
    row.requests += requests.requests
    row.tokens += requests.tokens
    row.errors += requests.errors


def total_row(rows: list[CostRow], *, key: str = "total", label: str | None = None) -> CostRow:
    """The sum of ``rows``: the report's total row, or the rows it stands for (the other
    teams' workloads)."""
    total = CostRow(key=key, label=gettext("Total") if label is None else label)
    for row in rows:
        for name in (
            "pool_count",
            "gpus",
            "capacity_gpu_hours",
            "measured_capacity_gpu_hours",
            "unmeasured_gpu_hours",
            "busy_gpu_hours",
            "cost_usd",
            "cost",
            "measured_cost_usd",
            "unmeasured_cost_usd",
            "idle_cost_usd",
            "requests",
            "tokens",
            "errors",
            "training_busy_gpu_hours",
            "lost_gpu_hours",
            "training_lost_gpu_hours",
            "interruption_cost_usd",
            "training_cost_usd",
            "inference_cost_usd",
            "measured_effective_gpu_hours",
            "measured_parts",
            "estimated_parts",
        ):
            setattr(total, name, getattr(total, name) + getattr(row, name))
        total.parts.extend(row.parts)
        total.missing_rates |= row.missing_rates
        total.clusters |= row.clusters
    return total


def cluster_slug_of(pool: Pool) -> str:
    """The slug of the pool's cluster; a pool that stands in for a deleted one (no
    cluster loaded) is of none."""
    cluster = pool.cluster if pool.cluster_id else None
    return cluster.slug if cluster is not None else ""
