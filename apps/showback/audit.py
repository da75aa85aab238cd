"""A team's monthly audit bundle: the one set of figures that the XLSX, the PDF and the
API all show, so a chargeback or DR review reads the same numbers wherever it looks.

Every figure is read from the module that owns it, never recomputed here:

- the team's cost per pool is its showback (``selectors.showback``: ``TeamSpend``), in
  US dollars and in the reporting currency;
- each workload's cost, requests, tokens, cost per 1k requests and per 1M tokens and its
  effective training GPU-hours (measured from the event logs, or the interruption
  estimate) are its row of ``cost_report(start, end, "workload")``;
- a training workload's goodput is ``apps.training.services.workloads_goodput`` over the
  month, as the workload goodput API gives it for ``?start=…&end=…``;
- each restore drill finished in the month keeps the RTO and RPO it measured and the
  targets it was held to when it was recorded (``RestoreDrill.evaluate``).
"""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Q
from django.utils.translation import gettext

from apps.accounts.models import Team
from apps.accounts.scope import Scope
from apps.backups.models import RestoreDrill
from apps.pools.models import Workload
from apps.showback.months import last_complete_month, not_a_month_sentence, parse_month
from apps.showback.selectors import showback
from apps.training.services import workloads_goodput

SECONDS_PER_MINUTE = 60


@dataclass
class PoolCost:
    slug: str | None  # None: another team's pool, whose name the reader may not see
    name: str
    cost_usd: Decimal
    cost: Decimal = Decimal(0)  # in the reporting currency


@dataclass
class WorkloadFigures:
    slug: str
    name: str
    pool_name: str
    kind: str
    is_training: bool
    cost_usd: Decimal
    requests: int
    tokens: int
    cost_per_1k_requests_usd: Decimal | None
    cost_per_1m_tokens_usd: float | None
    effective_training_gpu_hours: float | None
    # "measured" (training event logs), "estimate" (busy − lost GPU-hours) or None
    effective_training_source: str | None
    goodput_pct: float | None
    cost: Decimal = Decimal(0)  # in the reporting currency


@dataclass
class DrillFigures:
    id: int
    workload_slug: str
    workload_name: str
    started_at: datetime
    finished_at: datetime
    actual_rto_seconds: int
    rto_target_seconds: int
    actual_rpo_seconds: int
    rpo_target_seconds: int
    rto_met: bool
    rpo_met: bool
    verdict: str
    verdict_label: str
    passed: bool
    notes: str

    @property
    def actual_rto_minutes(self) -> float:
        return self.actual_rto_seconds / SECONDS_PER_MINUTE

    @property
    def rto_target_minutes(self) -> float:
        return self.rto_target_seconds / SECONDS_PER_MINUTE

    @property
    def actual_rpo_minutes(self) -> float:
        return self.actual_rpo_seconds / SECONDS_PER_MINUTE

    @property
    def rpo_target_minutes(self) -> float:
        return self.rpo_target_seconds / SECONDS_PER_MINUTE


@dataclass
class AuditBundle:
    team: Team
    month: str  # YYYY-MM
    start: datetime
    end: datetime
    pools: list[PoolCost]
    workloads: list[WorkloadFigures]
    drills: list[DrillFigures]
    total_usd: Decimal  # the team's showback total for the month
    # The same in the reporting currency (``currency``), and the exchange rates missing
    # to convert some of the month's costs (left out of both totals).
    total: Decimal = Decimal(0)
    currency: str = "USD"
    missing_rates: frozenset = frozenset()

    @property
    def workloads_usd(self) -> Decimal:
        return sum((workload.cost_usd for workload in self.workloads), Decimal(0))

    @property
    def not_in_a_workload_usd(self) -> Decimal:
        """The team's share of its pools that no workload's usage accounts for."""
        return self.total_usd - self.workloads_usd

    @property
    def drills_passed(self) -> int:
        return sum(drill.passed for drill in self.drills)


def requested_month(text: str | None, now: datetime) -> tuple[datetime | None, str]:
    """The first instant of the month an audit covers: ``text`` (YYYY-MM), by default the
    last complete month; (None, why) for text that is not a month or a month yet to
    start."""
    if not text:
        return last_complete_month(now), ""
    start = parse_month(text, now)
    if start is None:
        return None, not_a_month_sentence(text)
    if start > now:
        return None, gettext(
            "%(month)s has not started yet: pick this month or an earlier one."
        ) % {"month": f"{start:%Y-%m}"}
    return start, ""


def team_workloads(team: Team):
    """The workloads whose cost the showback gives ``team``: its own, and those without a
    team on its pools."""
    return Workload.objects.filter(Q(team=team) | Q(team__isnull=True, pool__team=team))


def audit_bundle(team: Team, start: datetime, end: datetime, *, scope: Scope) -> AuditBundle:
    """``team``'s figures over [start, end): the showback's two cost reports (its rows by
    workload are the workloads' figures), one read of the training workloads' events and one
    query for the drills. A pool outside
    ``scope`` that the team's workloads ran on is named only as another team's pool."""
    figures = showback(start, end)
    spend = figures.teams[team.pk]
    pools = sorted(
        (
            PoolCost(
                slug=figures.pools[pool_id].slug,
                name=figures.pools[pool_id].name,
                cost_usd=usd,
                cost=spend.by_pool.get(pool_id, 0 * usd),
            )
            if scope.covers_team(figures.pools[pool_id].team_id)
            else PoolCost(
                slug=None,
                name=gettext("Another team's pool"),
                cost_usd=usd,
                cost=spend.by_pool.get(pool_id, 0 * usd),
            )
            for pool_id, usd in spend.by_pool_usd.items()
        ),
        key=lambda pool: (-pool.cost_usd, pool.name),
    )
    rows = figures.workload_rows
    workloads = []
    members = list(team_workloads(team).select_related("pool").order_by("name"))
    goodput_by_workload = workloads_goodput(
        [workload for workload in members if workload.is_training], start=start, end=end
    )
    for workload in members:
        row = rows.get(workload.slug)
        if row is None:
            continue
        goodput_pct = None
        if workload.is_training:
            goodput_pct = goodput_by_workload[workload.pk].total.as_data()["goodput_pct"]
        workloads.append(
            WorkloadFigures(
                slug=workload.slug,
                name=workload.name,
                pool_name=workload.pool.name,
                kind=workload.get_kind_display(),
                is_training=workload.is_training,
                cost_usd=row.cost_usd,
                requests=row.requests,
                tokens=row.tokens,
                cost_per_1k_requests_usd=row.cost_per_1k_requests_usd,
                cost_per_1m_tokens_usd=row.cost_per_1m_tokens_usd,
                effective_training_gpu_hours=row.effective_training_gpu_hours,
                effective_training_source=row.effective_training_source,
                goodput_pct=goodput_pct,
                cost=row.cost,
            )
        )
    drills = [
        DrillFigures(
            id=drill.pk,
            workload_slug=drill.policy.workload.slug,
            workload_name=drill.policy.workload.name,
            started_at=drill.started_at,
            finished_at=drill.finished_at,
            actual_rto_seconds=drill.actual_rto_seconds,
            rto_target_seconds=drill.rto_target_seconds,
            actual_rpo_seconds=drill.actual_rpo_seconds,
            rpo_target_seconds=drill.rpo_target_seconds,
            rto_met=drill.rto_met,
            rpo_met=drill.rpo_met,
            verdict=drill.verdict,
            verdict_label=drill.get_verdict_display(),
            passed=drill.passed,
            notes=drill.notes,
        )
        for drill in RestoreDrill.objects.filter(
            policy__workload__in=team_workloads(team),
            finished_at__gte=start,
            finished_at__lt=end,
        )
        .select_related("policy__workload")
        .order_by("finished_at", "pk")
    ]
    return AuditBundle(
        team=team,
        month=f"{start:%Y-%m}",
        start=start,
        end=end,
        pools=pools,
        workloads=workloads,
        drills=drills,
        total_usd=spend.cost_usd,
        total=spend.cost,
        currency=figures.currency,
        missing_rates=frozenset(figures.missing_rates),
    )
