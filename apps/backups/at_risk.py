"""Dollars at risk: what a training workload would have to pay again if it failed now.

Work is safe only up to the newest checkpoint that a restore drill *proved* restorable:
a backup that exists is not a backup that restores (PRODUCT.md). A training event log's
``checkpoint_saved`` events carry their step; the version registry's training
checkpoints carry theirs. A ``BackupVersion`` of step S, still kept, whose latest restore
drill passed proves the ``checkpoint_saved`` event of step S restorable, and so every
step saved up to that event's timestamp. Then

    hours at risk   = (now − that checkpoint's timestamp) ÷ 3600 s
    dollars at risk = GPUs × the pool's effective price per GPU-hour × hours at risk

the cost of the GPU-hours a restart from the proven checkpoint would recompute (the same
GPUs × price per GPU-hour the goodput panel prices its badput at). When no checkpoint is
proven, everything since the workload's first training event is at risk; with no events
there is no figure, and the reason says so.

The price is converted from the pool's currency to US dollars at the rate of ``now``'s
month (apps/currencies/rates.py); with that rate missing there is no figure either, and
the missing rate is named.

Reads: a handful of queries for any number of workloads (``at_risk_by_workload``), so
the Overview and the alert rules can ask for every workload they see.
"""

from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from functools import cached_property

from django.db.models import Max, Min, OuterRef, Subquery
from django.utils.translation import gettext

from apps.backups.models import BackupVersion, RestoreDrill, VersionKind
from apps.currencies.rates import (
    UsdPrice,
    UsdRates,
    missing_rate_data,
    usd_price,
    usd_rates_at,
)
from apps.pools.models import TRAINING_KINDS, Workload, WorkloadStatus
from apps.training.models import EventType, TrainingEvent

PROVEN = "proven"
NOTHING_PROVEN = "nothing_proven"
NO_EVENTS = "no_events"
NOT_TRAINING = "not_training"
BASES = (PROVEN, NOTHING_PROVEN, NO_EVENTS, NOT_TRAINING)

CENT = Decimal("0.01")


def dollars_at_risk_usd(
    *, gpu_count: int, price_per_gpu_hour_usd: Decimal, seconds_at_risk: float
) -> Decimal:
    """GPUs × price per GPU-hour × hours at risk, rounded to the cent (half up)."""
    hours = Decimal(str(max(0.0, seconds_at_risk))) / Decimal(3600)
    return (Decimal(gpu_count) * Decimal(price_per_gpu_hour_usd) * hours).quantize(
        CENT, rounding=ROUND_HALF_UP
    )


@dataclass(frozen=True)
class AtRisk:
    """A workload's dollars at risk at ``now`` and what they rest on.

    ``basis``: ``proven`` (a checkpoint a passing drill proved), ``nothing_proven``
    (counted from the first training event), ``no_events`` or ``not_training`` (no
    figure: ``usd_at_risk`` and ``hours_at_risk`` are None)."""

    workload: Workload
    now: datetime
    basis: str
    since: datetime | None = None
    proven_step: int | None = None
    version: BackupVersion | None = None
    drill: RestoreDrill | None = None
    # The month's rates, read once for every workload (``at_risk_by_workload``).
    rates: UsdRates | None = None

    @cached_property
    def price(self) -> UsdPrice:
        """The pool's price per GPU-hour in US dollars at ``now``'s month's rate."""
        return usd_price(self.workload.pool, self.now, self.rates)

    @property
    def missing_rate(self) -> tuple | None:
        """The (currency, month) of the rate the figure needs but no one recorded."""
        return self.price.missing if self.since is not None else None

    @property
    def seconds_at_risk(self) -> float | None:
        if self.since is None:
            return None
        return max(0.0, (self.now - self.since).total_seconds())

    @property
    def hours_at_risk(self) -> float | None:
        seconds = self.seconds_at_risk
        return None if seconds is None else seconds / 3600

    @property
    def gpu_count(self) -> int:
        return self.workload.gpu_count

    @property
    def price_per_gpu_hour_usd(self) -> Decimal | None:
        return self.price.usd

    @property
    def usd_at_risk(self) -> Decimal | None:
        """None without a figure, and when the pool's exchange rate is missing (a price
        in another currency is never read as dollars)."""
        seconds = self.seconds_at_risk
        if seconds is None or self.price_per_gpu_hour_usd is None:
            return None
        return dollars_at_risk_usd(
            gpu_count=self.gpu_count,
            price_per_gpu_hour_usd=self.price_per_gpu_hour_usd,
            seconds_at_risk=seconds,
        )

    @property
    def proven_at(self) -> datetime | None:
        return self.since if self.basis == PROVEN else None

    @property
    def explanation(self) -> str:
        """Why the figure is what it is, in the reader's language."""
        if self.basis == NOT_TRAINING:
            return gettext("Only training workloads have work at risk between checkpoints.")
        if self.basis == NO_EVENTS:
            return gettext(
                "No training events yet: import the job's event log to know what a failure "
                "now would cost."
            )
        if self.basis == NOTHING_PROVEN:
            return gettext(
                "No checkpoint proven restorable: no kept checkpoint whose step matches a "
                "checkpoint_saved event has a passing latest restore drill, so everything "
                "since the first training event is at risk."
            )
        return gettext(
            "Everything after step %(step)s, saved at %(saved)s UTC, is at risk: the latest "
            "restore drill of that checkpoint passed."
        ) % {"step": f"{self.proven_step:,}", "saved": f"{self.since:%Y-%m-%d %H:%M}"}

    def as_data(self) -> dict:
        usd, hours = self.usd_at_risk, self.hours_at_risk
        drill, version = self.drill, self.version
        price, missing = self.price_per_gpu_hour_usd, self.missing_rate
        return {
            "workload": self.workload.slug,
            "basis": self.basis,
            "usd_at_risk": None if usd is None else float(usd),
            "hours_at_risk": None if hours is None else round(hours, 6),
            "gpu_count": self.gpu_count,
            "price_per_gpu_hour_usd": None if price is None else float(price),
            "missing_exchange_rate": missing_rate_data(missing),
            "since": self.since,
            "proven_step": self.proven_step,
            "proven_at": self.proven_at,
            "version": None if version is None else {"id": version.pk, "name": version.name},
            "drill": None
            if drill is None
            else {"id": drill.pk, "finished_at": drill.finished_at, "verdict": drill.verdict},
            "explanation": self.explanation,
            "computed_at": self.now,
        }


def _proven_checkpoints(workload_ids) -> dict[int, list[tuple[int, int, int]]]:
    """Per workload: (step, version id, drill id) of each kept training checkpoint whose
    latest drill passed. One query."""
    latest_drills = RestoreDrill.objects.filter(version=OuterRef("pk")).order_by(
        "-finished_at", "-id"
    )
    rows = (
        BackupVersion.objects.filter(
            workload_id__in=workload_ids,
            kind=VersionKind.TRAINING_CHECKPOINT,
            step__isnull=False,
            purged_at__isnull=True,
        )
        .annotate(
            latest_drill_id=Subquery(latest_drills.values("pk")[:1]),
            latest_drill_passed=Subquery(latest_drills.values("passed")[:1]),
        )
        .filter(latest_drill_passed=True)
        .values_list("workload_id", "step", "pk", "latest_drill_id")
    )
    proven: dict[int, list[tuple[int, int, int]]] = {}
    for workload_id, step, version_id, drill_id in rows:
        proven.setdefault(workload_id, []).append((step, version_id, drill_id))
    return proven


def at_risk_by_workload(workloads, now: datetime) -> dict[int, AtRisk]:
    """Each workload's dollars at risk at ``now`` (workloads with their pool selected).
    Five queries whatever the number of workloads (one reads the month's exchange rates)."""
    workloads = list(workloads)
    rates = usd_rates_at({workload.pool.currency for workload in workloads}, now)
    training_ids = [workload.pk for workload in workloads if workload.is_training]
    proven = _proven_checkpoints(training_ids)
    proven_steps = {step for rows in proven.values() for step, _v, _d in rows}
    # The newest save of each proven step: a multi-node save ends with its last node.
    saved_at = {
        (row["workload_id"], row["step"]): row["saved_at"]
        for row in TrainingEvent.objects.filter(
            workload_id__in=list(proven),
            event_type=EventType.CHECKPOINT_SAVED,
            step__in=proven_steps,
            timestamp__lte=now,
        )
        .values("workload_id", "step")
        .annotate(saved_at=Max("timestamp"))
        .order_by()
    }
    first_event_at = dict(
        TrainingEvent.objects.filter(workload_id__in=training_ids, timestamp__lte=now)
        .values("workload_id")
        .annotate(first=Min("timestamp"))
        .order_by()
        .values_list("workload_id", "first")
    )
    chosen: dict[int, tuple[datetime, int, int, int]] = {}
    for workload_id, rows in proven.items():
        for step, version_id, drill_id in rows:
            at = saved_at.get((workload_id, step))
            if at is not None and (workload_id not in chosen or at > chosen[workload_id][0]):
                chosen[workload_id] = (at, step, version_id, drill_id)
    versions = BackupVersion.objects.in_bulk([row[2] for row in chosen.values()])
    drills = RestoreDrill.objects.in_bulk([row[3] for row in chosen.values()])

    results = {}
    for workload in workloads:
        if not workload.is_training:
            results[workload.pk] = AtRisk(workload, now, NOT_TRAINING, rates=rates)
        elif workload.pk in chosen:
            at, step, version_id, drill_id = chosen[workload.pk]
            results[workload.pk] = AtRisk(
                workload,
                now,
                PROVEN,
                since=at,
                proven_step=step,
                version=versions[version_id],
                drill=drills[drill_id],
                rates=rates,
            )
        elif workload.pk in first_event_at:
            results[workload.pk] = AtRisk(
                workload, now, NOTHING_PROVEN, since=first_event_at[workload.pk], rates=rates
            )
        else:
            results[workload.pk] = AtRisk(workload, now, NO_EVENTS, rates=rates)
    return results


def workload_at_risk(workload: Workload, now: datetime) -> AtRisk:
    return at_risk_by_workload([workload], now)[workload.pk]


def watched_workloads(scope):
    """The workloads whose dollars at risk the Overview and the alert rules watch: the
    active training workloads of ``scope`` that have not finished (a finished job has no
    work left to lose)."""
    return (
        Workload.objects.in_scope(scope)
        .filter(archived_at__isnull=True, kind__in=TRAINING_KINDS)
        .exclude(status=WorkloadStatus.FINISHED)
        .select_related("pool")
        .order_by("name")
    )
