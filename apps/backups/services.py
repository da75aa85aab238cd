"""Writes that touch several models, and the readings the pages and the Overview share."""

from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, ngettext

from apps.accounts.scope import EVERYTHING
from apps.backups import checkpointing, consistency
from apps.backups.models import (
    KEPT_TIERS,
    BackupPolicy,
    BackupVersion,
    DrillVerdict,
    RestoreDrill,
    Tier,
    VersionChecksum,
    VersionKind,
)
from apps.backups.validators import checksum_error
from apps.core.history import QUIET_FIELDS, HistoryEntry, combined_history
from apps.currencies.rates import usd_price
from apps.pools.models import Interruption, Workload
from apps.pools.querysets import workload_scope_filter

# How far back the pool's interruptions count towards its per-GPU MTBF.
MTBF_WINDOW = timedelta(days=90)


# --- Drill schedule -------------------------------------------------------------------


# The latest drill's verdict as the policy stores it: null is "not verified".
_PASSED_BY_VERDICT = {
    DrillVerdict.PASSED: True,
    DrillVerdict.FAILED: False,
    DrillVerdict.NOT_VERIFIED: None,
    None: None,
}


def _schedule(policy, last_drill_at, last_verdict, now):
    """From the latest drill (else the policy's creation): a failed drill is retried after
    the policy's retry interval, any other after its drill frequency."""
    start = last_drill_at or policy.created_at
    due = start + timedelta(days=policy.drill_interval_days_after(last_verdict))
    return {
        "last_drill_at": last_drill_at,
        "last_drill_passed": _PASSED_BY_VERDICT[last_verdict],
        "drill_due_at": due,
        "overdue_since": due if due < now else None,
    }


def refresh_drill_schedules(policies=None, *, now=None) -> int:
    """Recompute every (or the given) policy's last drill, due date and overdue flag from
    its drills; returns how many are overdue. Idempotent: the daily beat task runs it, and
    recording or deleting a drill runs it for that policy."""
    now = now or timezone.now()
    latest = RestoreDrill.objects.filter(policy=OuterRef("pk")).order_by("-finished_at", "-id")
    queryset = policies if policies is not None else BackupPolicy.objects.all()
    rows = list(
        queryset.annotate(
            latest_finished_at=Subquery(latest.values("finished_at")[:1]),
            latest_verdict=Subquery(latest.values("verdict")[:1]),
        )
    )
    changed = []
    overdue = 0
    fields = ["last_drill_at", "last_drill_passed", "drill_due_at", "overdue_since"]
    for policy in rows:
        values = _schedule(policy, policy.latest_finished_at, policy.latest_verdict, now)
        if values["overdue_since"] is not None:
            overdue += 1
        if any(getattr(policy, name) != value for name, value in values.items()):
            for name, value in values.items():
                setattr(policy, name, value)
            changed.append(policy)
    # bulk_update: no history rows, the schedule is derived from the drills' own history.
    BackupPolicy.objects.bulk_update(changed, fields)
    return overdue


def overdue_and_failing_summary(now=None, *, scope=EVERYTHING) -> dict:
    """What the Overview's "drills overdue" card shows: the policy counts in one query,
    the workloads without a policy in another; of the workloads in ``scope`` only."""
    now = now or timezone.now()
    policies = BackupPolicy.objects.filter(workload_scope_filter(scope, "workload__"))
    summary = policies.order_by().aggregate(
        policies=Count("pk"),
        overdue=Count("pk", filter=Q(drill_due_at__lt=now)),
        failing=Count("pk", filter=Q(last_drill_passed=False)),
        not_verified=Count(
            "pk", filter=Q(last_drill_at__isnull=False, last_drill_passed__isnull=True)
        ),
        never_drilled=Count("pk", filter=Q(last_drill_at__isnull=True)),
    )
    summary["workloads_without_policy"] = (
        Workload.objects.in_scope(scope).filter(backup_policy__isnull=True).count()
    )
    return summary


# --- Policies -------------------------------------------------------------------------


@transaction.atomic
def save_policy(policy: BackupPolicy) -> BackupPolicy:
    """Score the checklist, store the policy and move its drill schedule to the (maybe
    changed) frequency."""
    policy.refresh_coverage()
    policy.save()
    refresh_drill_schedules(BackupPolicy.objects.filter(pk=policy.pk))
    policy.refresh_from_db()
    return policy


# --- Versions and checksums -----------------------------------------------------------


def parse_checksum_lines(text: str, algorithm: str) -> tuple[list[tuple[str, str]], list[str]]:
    """ "node checksum" lines → (pairs, errors naming the line)."""
    pairs, errors, seen = [], [], set()
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            errors.append(
                gettext("Line %(line)s: expected a node name, a space and a checksum.")
                % {"line": number}
            )
            continue
        node, checksum = parts[0], parts[1].lower()
        problem = checksum_error(checksum, algorithm)
        if problem:
            errors.append(
                gettext("Line %(line)s (%(node)s): %(problem)s")
                % {"line": number, "node": node, "problem": problem}
            )
        elif node in seen:
            errors.append(
                gettext("Line %(line)s: %(node)s is listed twice.") % {"line": number, "node": node}
            )
        else:
            seen.add(node)
            pairs.append((node, checksum))
    return pairs, errors


@transaction.atomic
def save_version(version: BackupVersion, *, checksums=None, user=None) -> BackupVersion:
    """Name it from its parts and store it; ``checksums`` (node, hex) pairs, when given,
    replace the stored ones."""
    version.refresh_name()
    if version.pk is None and user is not None and user.is_authenticated:
        version.registered_by = user
    version.save()
    if checksums is not None:
        set_checksums(version, checksums, replace=True)
    return version


def set_checksums(version: BackupVersion, pairs, *, replace=False) -> list[VersionChecksum]:
    """Add (or with ``replace`` replace) per-node checksums; a node's checksum is updated."""
    if replace:
        version.checksums.exclude(node__in=[node for node, _ in pairs]).delete()
    stored = []
    for node, checksum in pairs:
        row, created = VersionChecksum.objects.get_or_create(
            version=version, node=node, defaults={"checksum": checksum}
        )
        if not created and row.checksum != checksum:
            row.checksum = checksum
            row.save()
        stored.append(row)
    return stored


def previous_stable(version: BackupVersion):
    """The release that is stable now, of the same line (full precision and quantized
    variants are kept apart)."""
    return (
        BackupVersion.objects.stable()
        .filter(workload_id=version.workload_id, kind=version.kind)
        .exclude(pk=version.pk)
        .first()
    )


@transaction.atomic
def mark_stable(version: BackupVersion, *, now=None) -> BackupVersion:
    """Make a release the stable one. The previous stable release is its rollback target:
    it must still be kept in the hot or warm tier, or the new release has none."""
    version = BackupVersion.objects.select_for_update().get(pk=version.pk)
    if not version.is_release:
        raise ValidationError(
            gettext("Only inference releases and quantized variants become stable.")
        )
    if not version.is_kept:
        raise ValidationError(
            gettext("%(version)s was purged; a purged version cannot become stable.")
            % {"version": version}
        )
    if version.stable_since is not None:
        raise ValidationError(
            gettext("%(version)s is already the stable release.") % {"version": version}
        )
    current = previous_stable(version)
    if current is not None and (not current.is_kept or current.tier not in KEPT_TIERS):
        values = {"current": current, "version": version, "tier": current.tier}
        raise ValidationError(
            gettext(
                "The stable release %(current)s was purged: keep it in the hot or warm tier "
                "before marking %(version)s stable, or there is nothing to roll back to."
            )
            % values
            if not current.is_kept
            else gettext(
                "The stable release %(current)s is only in the %(tier)s tier: keep it in the "
                "hot or warm tier before marking %(version)s stable, or there is nothing to "
                "roll back to."
            )
            % values
        )
    version.stable_since = now or timezone.now()
    version.save()
    return version


@dataclass
class ReleaseLine:
    kind: str
    label: str
    stable: BackupVersion | None
    rollback_target: BackupVersion | None
    problem: str = ""


def release_lines(workload) -> list[ReleaseLine]:
    """For each release line (full precision, quantized): the stable release and the one
    to roll back to — the previous stable release, if it is still kept hot or warm."""
    lines = []
    for kind in (VersionKind.INFERENCE_RELEASE, VersionKind.QUANTIZED_VARIANT):
        stables = list(BackupVersion.objects.stable().filter(workload=workload, kind=kind)[:2])
        if not stables:
            continue
        current = stables[0]
        previous = stables[1] if len(stables) > 1 else None
        line = ReleaseLine(kind, kind.label, current, None)
        if previous is None:
            line.problem = gettext(
                "No earlier stable release: the first release has nothing to roll back to."
            )
        elif not previous.is_kept or previous.tier not in KEPT_TIERS:
            line.problem = (
                gettext(
                    "The rollback target %(version)s was purged: a rollback would have to come "
                    "from cold storage, or cannot happen."
                )
                if not previous.is_kept
                else gettext(
                    "The rollback target %(version)s is only in the cold tier: a rollback would "
                    "have to come from cold storage, or cannot happen."
                )
            ) % {"version": previous}
        else:
            line.rollback_target = previous
        lines.append(line)
    return lines


# --- Drills ---------------------------------------------------------------------------


def compare_checksums(version: BackupVersion, observed_pairs) -> consistency.ChecksumComparison:
    """Registered checksums against those seen after the restore, node by node; a node
    blank on either side is not verified (``apps/backups/consistency.py``)."""
    expected = dict(version.checksums.values_list("node", "checksum"))
    return consistency.compare_checksums(expected, dict(observed_pairs))


def drill_blocker(policy: BackupPolicy) -> str | None:
    """Why no drill can be recorded on ``policy`` yet, or None: a drill restores a
    registered version that is still kept."""
    versions = BackupVersion.objects.filter(workload_id=policy.workload_id)
    if not versions.exists():
        return gettext("Register a version of this policy's software before recording a drill")
    if not versions.kept().exists():
        return gettext(
            "Every registered version of this policy's software was purged: register one "
            "that is still kept before recording a drill"
        )
    return None


@transaction.atomic
def record_drill(drill: RestoreDrill, *, observed_pairs, user=None) -> RestoreDrill:
    """Evaluate and store a drill, and move the policy's drill schedule on."""
    if not drill.version.is_kept:  # checked by the form too; a purge may have raced it
        raise ValidationError(f"{drill.version} was purged: it cannot have been restored.")
    if user is not None and user.is_authenticated and drill.performed_by_id is None:
        drill.performed_by = user
    drill.evaluate(compare_checksums(drill.version, observed_pairs))
    drill.save()
    refresh_drill_schedules(BackupPolicy.objects.filter(pk=drill.policy_id))
    return drill


@transaction.atomic
def delete_drill(drill: RestoreDrill):
    policy_id = drill.policy_id
    drill.delete()
    refresh_drill_schedules(BackupPolicy.objects.filter(pk=policy_id))


# --- Checkpoint interval --------------------------------------------------------------


@dataclass
class MtbfReading:
    job_mtbf_seconds: float | None
    source: str
    failures: int = 0
    observed_gpu_hours: float = 0.0
    per_gpu_mtbf_seconds: float | None = None
    mean_restart_seconds: float = 0.0


def job_mtbf(policy: BackupPolicy, *, now=None) -> MtbfReading:
    """The entered MTBF, else the pool's: GPU-hours observed (the pool's GPUs over the
    last 90 days, or since the pool or its first interruption when later) ÷ interruptions
    of its workloads, divided by the job's GPU count. The mean recorded restart is R
    either way."""
    now = now or timezone.now()
    workload = policy.workload
    pool = workload.pool
    window_start = now - MTBF_WINDOW
    records = list(
        Interruption.objects.filter(
            workload__pool=pool, occurred_at__gte=window_start, occurred_at__lte=now
        ).values_list("occurred_at", "restart_minutes")
    )
    restarts = [restart for _, restart in records]
    # Observed since the pool existed, or since its first recorded interruption when those
    # were recorded before the pool was (imported history).
    first_seen = min([pool.created_at, *(occurred for occurred, _ in records)])
    window_start = max(window_start, first_seen)
    mean_restart = 60 * sum(restarts) / len(restarts) if restarts else 0.0
    if policy.mtbf_hours:
        return MtbfReading(
            float(policy.mtbf_hours) * 3600,
            gettext("entered on the policy"),
            mean_restart_seconds=mean_restart,
        )
    hours = max((now - window_start).total_seconds() / 3600, 0)
    observed = hours * pool.gpu_count
    per_gpu = checkpointing.per_gpu_mtbf_seconds(observed, len(restarts))
    if per_gpu is None:
        return MtbfReading(
            None,
            gettext(
                "no interruptions recorded in %(pool)s in the last %(days)s days: enter an "
                "MTBF on the policy"
            )
            % {"pool": pool.name, "days": MTBF_WINDOW.days},
            observed_gpu_hours=observed,
        )
    return MtbfReading(
        checkpointing.job_mtbf_seconds(per_gpu, workload.gpu_count),
        ngettext(
            "%(count)s interruption in %(hours)s GPU-hours of %(pool)s, ÷ %(gpus)s GPUs of the job",
            "%(count)s interruptions in %(hours)s GPU-hours of %(pool)s, ÷ %(gpus)s GPUs of the "
            "job",
            len(restarts),
        )
        % {
            "count": len(restarts),
            "hours": f"{observed:,.0f}",
            "pool": pool.name,
            "gpus": workload.gpu_count,
        },
        failures=len(restarts),
        observed_gpu_hours=observed,
        per_gpu_mtbf_seconds=per_gpu,
        mean_restart_seconds=mean_restart,
    )


@dataclass
class CheckpointAdvice:
    mtbf: MtbfReading
    missing: list[str] = field(default_factory=list)
    checkpoint_write_seconds: float | None = None
    young_seconds: float | None = None
    daly_seconds: float | None = None
    current: checkpointing.IntervalCost | None = None
    recommended: checkpointing.IntervalCost | None = None
    job_price_per_hour_usd: float | None = None
    gpu_price_per_hour_usd: Decimal | None = None
    missing_rate_text: str = ""
    checkpoint_size_gb: float | None = None

    @property
    def saving_usd_per_month(self) -> float | None:
        """What moving from the current interval to Daly's saves a month (negative: costs)."""
        if self.current is None or self.recommended is None:
            return None
        if self.current.total_usd_per_month is None:
            return None
        return self.current.total_usd_per_month - self.recommended.total_usd_per_month

    @property
    def extra_usd_per_month_at_recommendation(self) -> float | None:
        saving = self.saving_usd_per_month
        return None if saving is None else -saving


def checkpoint_advice(policy: BackupPolicy, *, now=None) -> CheckpointAdvice | None:
    """Young's and Daly's intervals beside the workload's current one, with the lost time
    and storage each costs a month at the pool's price. None for inference workloads."""
    workload = policy.workload
    if not workload.is_training:
        return None
    advice = CheckpointAdvice(mtbf=job_mtbf(policy, now=now))
    if not workload.checkpoint_write_seconds:
        advice.missing.append(gettext("the workload's checkpoint write time"))
    if advice.mtbf.job_mtbf_seconds is None:
        advice.missing.append(gettext("an MTBF (recorded interruptions in the pool, or entered)"))
    if advice.missing:
        return advice
    write = float(workload.checkpoint_write_seconds)
    mtbf = advice.mtbf.job_mtbf_seconds
    advice.checkpoint_write_seconds = write
    advice.young_seconds = checkpointing.young_interval_seconds(write, mtbf)
    advice.daly_seconds = checkpointing.daly_interval_seconds(write, mtbf)
    # The pool's price in US dollars at the month's rate; unknown (no price) when missing.
    gpu_price = usd_price(workload.pool, now or timezone.now())
    advice.gpu_price_per_hour_usd = gpu_price.usd
    advice.missing_rate_text = gpu_price.missing_text
    price = float(gpu_price.usd or 0) * workload.gpu_count
    advice.job_price_per_hour_usd = price if price > 0 else None
    size = policy.checkpoint_size_gb
    if size is None:
        latest = (
            BackupVersion.objects.kept()
            .filter(workload=workload, kind=VersionKind.TRAINING_CHECKPOINT)
            .only("size_bytes")
            .first()
        )
        size = latest.size_bytes / 1e9 if latest else None
    advice.checkpoint_size_gb = float(size) if size is not None else None
    hot = next(tier for tier in policy.tiers() if tier.tier == Tier.HOT)
    common = {
        "checkpoint_write_seconds": write,
        "mtbf_seconds": mtbf,
        "restart_seconds": advice.mtbf.mean_restart_seconds,
        "job_price_per_hour_usd": advice.job_price_per_hour_usd,
        "checkpoint_size_gb": advice.checkpoint_size_gb,
        "retention_count": hot.retention_count,
        "retention_days": hot.retention_days,
        "storage_price_per_gb_month_usd": (
            float(hot.price_per_gb_month_usd) if hot.price_per_gb_month_usd is not None else None
        ),
    }
    advice.recommended = checkpointing.interval_cost(interval_seconds=advice.daly_seconds, **common)
    if workload.checkpoint_interval_minutes:
        advice.current = checkpointing.interval_cost(
            interval_seconds=workload.checkpoint_interval_minutes * 60.0, **common
        )
    return advice


# --- History --------------------------------------------------------------------------


_QUIET_FIELDS = QUIET_FIELDS | {"registered_at", "recorded_at"}


def policy_history(policy: BackupPolicy, *, limit=30) -> list[HistoryEntry]:
    """Changes to the policy, its workload's versions and checksums and its drills, newest
    first, each diffed against the record before it of the same object."""
    sources = [
        (BackupPolicy.history.filter(id=policy.pk), lambda r: gettext("Policy"), BackupPolicy),
        (
            BackupVersion.history.filter(workload_id=policy.workload_id),
            lambda r: gettext("Version %(name)s") % {"name": r.name},
            BackupVersion,
        ),
        (
            VersionChecksum.history.filter(
                version_id__in=BackupVersion.objects.filter(workload_id=policy.workload_id).values(
                    "pk"
                )
            ),
            lambda r: gettext("Checksum of %(node)s") % {"node": r.node},
            VersionChecksum,
        ),
        (
            RestoreDrill.history.filter(policy_id=policy.pk),
            lambda r: gettext("Drill of %(when)s") % {"when": f"{r.finished_at:%Y-%m-%d %H:%M}"},
            RestoreDrill,
        ),
    ]
    return combined_history(sources, limit=limit, quiet=_QUIET_FIELDS, url_of=_object_url)


def _object_url(model, record) -> str:
    if model is BackupVersion:
        return reverse("backups:version_detail", kwargs={"pk": record.id})
    if model is RestoreDrill:
        return reverse("backups:drill_detail", kwargs={"pk": record.id})
    return ""
