"""The built-in rule kinds: what breaches each, from the figures the pages already show.

- idle cost and utilisation: the report's own sums over the rule's window
  (``reports.cost.pool_usage.pool_usage_totals``: daily rows for whole days, hourly rows
  at the edges, aggregated in SQL) and ``reports.cost.costmodel``'s formulas, so an alert
  quotes the figure the Reports page and the pool list show for the same hours;
- restore drills overdue or failed: the policies' stored schedule, as the Overview's
  "needs a person" list counts them (``drill_due_at`` before now, ``last_drill_passed``
  false);
- telemetry stale: the newest sample of a pool's GPUs (``GpuDevice.last_seen_at``, kept
  by every import and pull) — pools that never reported are the Overview's "pools
  without telemetry", not stale;
- flagged pool-hours: ``PoolHourFlag`` rows in the window, per pool;
- failed jobs: imports, exports and recomputes that ended failed in the window. A pull
  that fails every 15 s is one alert per pool and kind of pull, not one per run;
- dollars at risk: ``backups.at_risk``'s figure for each unfinished training workload,
  as the workload's card and the Overview show it.

A team's rule reads what the team sees (its pools and workloads and the shared ones,
``Scope(everything=False, team_ids={team})``); a fleet-wide rule reads everything.
Exports and recomputes belong to no team yet: only fleet-wide rules watch them.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import Count, Max, Q
from django.urls import reverse
from django.utils import translation

from apps.accounts.scope import EVERYTHING, Scope
from apps.alerts import registry
from apps.alerts.registry import Subject, register
from apps.backups.at_risk import at_risk_by_workload, watched_workloads
from apps.backups.models import BackupPolicy
from apps.core.money import as_decimal, to_cents
from apps.core.sentences import Sentence, from_data, gettext_noop, sentence
from apps.currencies.codes import USD, reporting_currency
from apps.currencies.rates import month_of
from apps.currencies.templatetags.currency import money_in
from apps.pools.models import Pool, Workload
from apps.pools.querysets import workload_scope_filter
from apps.procurement.models import ComparisonExport
from apps.reports.cost import costmodel
from apps.reports.cost.pool_usage import UsageTotals, pool_usage_totals
from apps.reports.cost.rates import conversion_for
from apps.reports.models import RecomputeJob
from apps.reports.span import Span
from apps.telemetry.models import ImportRun, PoolHourFlag

PULLED_SOURCES = (
    ImportRun.Source.SCRAPE,
    ImportRun.Source.PROMETHEUS,
    ImportRun.Source.TSDB_HOURLY,
)


def rule_scope(rule) -> Scope:
    """What the rule looks at: its team's scope, or everything for a fleet-wide rule."""
    if rule.team_id is None:
        return EVERYTHING
    return Scope(everything=False, team_ids=frozenset({rule.team_id}))


def rule_pools(rule, now, *, in_service=True):
    """The active pools (in service at ``now`` unless told otherwise) the rule looks at."""
    pools = Pool.objects.active().in_scope(rule_scope(rule))
    if in_service:
        pools = pools.in_service(now)
    if rule.pool_id:
        pools = pools.filter(pk=rule.pool_id)
    if rule.workload_id:
        pools = pools.filter(workloads=rule.workload_id)
    return pools.order_by("name")


def rule_workloads(rule, prefix: str = ""):
    """``Q`` keeping rows whose workload (at ``prefix``) the rule looks at."""
    condition = workload_scope_filter(rule_scope(rule), prefix) & Q(
        **{f"{prefix}archived_at__isnull": True}
    )
    if rule.pool_id:
        condition &= Q(**{f"{prefix}pool_id": rule.pool_id})
    if rule.workload_id:
        condition &= Q(**{f"{prefix}pk": rule.workload_id})
    return condition


def money(usd) -> str:
    """Dollars to the cent, rounded as the pages round them (apps/core/money.py)."""
    return f"${to_cents(usd):,.2f}"


def money_in_reporting(amount) -> str:
    """An amount in the reporting currency with its sign or code, to the cent, as the
    pages write it ("€276.30", "$300.00", "1,000.00 CHF")."""
    return money_in(amount, reporting_currency())


def usd_to_reporting(now) -> Decimal:
    """Units of the reporting currency one US dollar buys in ``now``'s month: what a
    threshold stated in USD (``threshold_usd``) is multiplied by to compare it with costs
    in the reporting currency. 1 for a reporting currency of USD. A missing rate is an
    error the rule's page names (the evaluation fails, its alerts kept as they were),
    never a rate of 1."""
    currency = reporting_currency()
    if currency == USD:
        return Decimal(1)
    month = month_of(now)
    start = datetime(month.year, month.month, 1, tzinfo=UTC)
    conversion = conversion_for(Span(start, start + timedelta(days=1)), {USD})
    rate = conversion.units_per_usd(currency, month) if conversion else None
    if rate is None:
        # In English, as every rule error is kept (with the sentence around it).
        raise MissingRateError(
            f"no {currency} exchange rate for {month:%Y-%m}: the threshold in USD cannot be "
            f"compared with costs in {currency}; add the rate on the exchange rates page"
        )
    return rate


class MissingRateError(Exception):
    """The exchange rate a rule needs to compare its threshold is missing."""


def _pool_subject(pool, summary: Sentence, description: Sentence, url: str = "") -> Subject:
    return Subject(
        labels={"pool": pool.slug},
        summary=summary,
        description=description,
        team_id=pool.team_id,
        url=url or reverse("pools:pool_detail", kwargs={"slug": pool.slug}),
    )


def window_usage(rule, now) -> list[tuple[Pool, UsageTotals]]:
    """Each pool of the rule with its sums over the rule's window (two queries)."""
    span = Span.last_hours(now, rule.window_hours)
    pools = list(rule_pools(rule, now))
    totals = pool_usage_totals(span, [pool.pk for pool in pools])
    return [(pool, totals.get(pool.pk, UsageTotals())) for pool in pools]


@register(registry.IDLE_COST, thresholds=("threshold_usd", "window_hours"))
def idle_cost(rule, now) -> list[Subject]:
    """The idle cost in the reporting currency (the cost engine's ``measured_cost``)
    against the rule's threshold, stated in USD, at the month's rate."""
    threshold = rule.threshold_usd * usd_to_reporting(now)
    subjects = []
    for pool, usage in window_usage(rule, now):
        idle = costmodel.idle_cost_usd(
            usage.measured_cost, usage.busy_gpu_hours, usage.measured_capacity_gpu_hours
        )
        if idle <= threshold:
            continue
        values = {
            "pool": pool.name,
            "idle": money_in_reporting(idle),
            "hours": rule.window_hours,
            "threshold": money_in_reporting(threshold),
        }
        subjects.append(
            _pool_subject(
                pool,
                sentence(
                    gettext_noop("%(pool)s: idle cost %(idle)s over the last %(hours)s h"),
                    **values,
                ),
                sentence(
                    gettext_noop(
                        "The pool %(pool)s cost %(idle)s idle over the last %(hours)s h, above "
                        "the rule's %(threshold)s: measured cost %(cost)s × (1 − %(busy)s busy "
                        "÷ %(capacity)s measured GPU-h)."
                    ),
                    **values,
                    cost=money_in_reporting(usage.measured_cost),
                    busy=f"{usage.busy_gpu_hours:,.1f}",
                    capacity=f"{usage.measured_capacity_gpu_hours:,.1f}",
                ),
            )
        )
    return subjects


@register(registry.LOW_UTILISATION, thresholds=("threshold_pct", "window_hours"))
def low_utilisation(rule, now) -> list[Subject]:
    """Pools without telemetry in the window are not judged: their use is unknown (a
    telemetry-stale rule watches them)."""
    threshold = float(rule.threshold_pct)
    subjects = []
    for pool, usage in window_usage(rule, now):
        capacity = usage.measured_capacity_gpu_hours
        if capacity <= 0:
            continue
        utilisation_pct = usage.busy_gpu_hours / capacity * 100
        if utilisation_pct >= threshold:
            continue
        values = {
            "pool": pool.name,
            "utilisation": f"{utilisation_pct:.1f}",
            "hours": rule.window_hours,
            "threshold": f"{threshold:g}",
        }
        subjects.append(
            _pool_subject(
                pool,
                sentence(
                    gettext_noop(
                        "%(pool)s: utilisation %(utilisation)s %% over the last %(hours)s h"
                    ),
                    **values,
                ),
                sentence(
                    gettext_noop(
                        "The pool %(pool)s was %(utilisation)s %% busy over the last %(hours)s h "
                        "(%(busy)s busy ÷ %(capacity)s measured GPU-h), below the rule's "
                        "%(threshold)s %%."
                    ),
                    **values,
                    busy=f"{usage.busy_gpu_hours:,.1f}",
                    capacity=f"{capacity:,.1f}",
                ),
            )
        )
    return subjects


def _policy_subjects(rule, policies, summary_msgid, description_msgid, when) -> list[Subject]:
    subjects = []
    for policy in policies.select_related("workload__pool").order_by("workload__name"):
        workload = policy.workload
        values = {"workload": workload.name, "pool": workload.pool.name, **when(policy)}
        subjects.append(
            Subject(
                labels={"workload": workload.slug, "pool": workload.pool.slug},
                summary=sentence(summary_msgid, **values),
                description=sentence(description_msgid, **values),
                team_id=workload.effective_team_id,
                url=reverse("backups:policy_detail", kwargs={"slug": workload.slug}),
            )
        )
    return subjects


def _day(moment) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


@register(registry.DRILL_OVERDUE)
def drill_overdue(rule, now) -> list[Subject]:
    policies = BackupPolicy.objects.filter(drill_due_at__lt=now).filter(
        rule_workloads(rule, "workload__")
    )
    return _policy_subjects(
        rule,
        policies,
        gettext_noop("%(workload)s: restore drill overdue since %(due)s"),
        gettext_noop(
            "The restore drill of %(workload)s (pool %(pool)s) was due on %(due)s and has not "
            "been recorded: a backup is not known to restore until a drill proves it."
        ),
        lambda policy: {"due": _day(policy.drill_due_at)},
    )


@register(registry.DRILL_FAILED, severity="critical")
def drill_failed(rule, now) -> list[Subject]:
    policies = BackupPolicy.objects.filter(last_drill_passed=False).filter(
        rule_workloads(rule, "workload__")
    )
    return _policy_subjects(
        rule,
        policies,
        gettext_noop("%(workload)s: the latest restore drill failed"),
        gettext_noop(
            "The latest restore drill of %(workload)s (pool %(pool)s), on %(drilled)s, failed: "
            "fix what it found and record another drill."
        ),
        lambda policy: {"drilled": _day(policy.last_drill_at)},
    )


@register(registry.TELEMETRY_STALE, thresholds=("stale_minutes",))
def telemetry_stale(rule, now) -> list[Subject]:
    cutoff = now - timedelta(minutes=rule.stale_minutes)
    pools = (
        rule_pools(rule, now)
        .annotate(last_sample_at=Max("devices__last_seen_at"))
        .filter(last_sample_at__lt=cutoff)
    )
    subjects = []
    for pool in pools:
        silent_minutes = int((now - pool.last_sample_at).total_seconds() // 60)
        values = {
            "pool": pool.name,
            "minutes": f"{silent_minutes:,}",
            "last": _day(pool.last_sample_at),
            "allowed": rule.stale_minutes,
        }
        subjects.append(
            _pool_subject(
                pool,
                sentence(gettext_noop("%(pool)s: no telemetry for %(minutes)s min"), **values),
                sentence(
                    gettext_noop(
                        "No sample has come from the pool %(pool)s for %(minutes)s min (the "
                        "newest at %(last)s); the rule allows %(allowed)s min. Check its "
                        "exporters and pull sources."
                    ),
                    **values,
                ),
            )
        )
    return subjects


@register(registry.FLAGGED_HOURS, thresholds=("window_hours",))
def flagged_hours(rule, now) -> list[Subject]:
    window = Span.last_hours(now, rule.window_hours)
    in_window = {"hour__gte": window.start, "hour__lt": window.end}
    pools = {pool.pk: pool for pool in rule_pools(rule, now)}
    rows = (
        PoolHourFlag.objects.filter(pool_id__in=list(pools), **in_window)
        .values("pool_id", "kind")
        .annotate(hours=Count("hour"))
        .order_by("pool_id", "kind")
    )
    kinds_by_pool: dict[int, list[tuple[str, int]]] = {}
    for row in rows:
        kinds_by_pool.setdefault(row["pool_id"], []).append((row["kind"], row["hours"]))
    hours_by_pool = dict(
        PoolHourFlag.objects.filter(pool_id__in=list(kinds_by_pool), **in_window)
        .values("pool_id")
        .annotate(hours=Count("hour", distinct=True))
        .values_list("pool_id", "hours")
    )
    labels = dict(PoolHourFlag.Kind.choices)
    subjects = []
    for pool_id, kinds in kinds_by_pool.items():
        pool = pools[pool_id]
        # Each kind's label is its own msgid: said in the reader's language with the rest.
        parts = {
            f"kind{index}": Sentence(_english(labels[kind]))
            for index, (kind, _hours) in enumerate(kinds)
        }
        listing = Sentence(", ".join(f"%({name})s" for name in parts), **parts)
        values = {
            "pool": pool.name,
            "hours": hours_by_pool[pool_id],
            "window": rule.window_hours,
            "kinds": listing,
        }
        subjects.append(
            _pool_subject(
                pool,
                sentence(
                    gettext_noop("%(pool)s: %(hours)s pool-hours flagged in the last %(window)s h"),
                    **values,
                ),
                sentence(
                    gettext_noop(
                        "%(hours)s pool-hours of %(pool)s were flagged in the last %(window)s h "
                        "(%(kinds)s): their figures need a look before they are trusted."
                    ),
                    **values,
                ),
                url=reverse("telemetry:reconciliation") + f"?pool={pool.slug}",
            )
        )
    return subjects


def _english(label) -> str:
    """A lazily translated choice label's msgid (its English text)."""
    with translation.override(None):
        return str(label)


@register(registry.JOB_FAILED, thresholds=("window_hours",))
def job_failed(rule, now) -> list[Subject]:
    since = now - timedelta(hours=rule.window_hours)
    imports = ImportRun.objects.filter(
        status__in=(ImportRun.Status.FAILED, ImportRun.Status.REJECTED), finished_at__gte=since
    )
    fleet_wide = rule.team_id is None and not rule.pool_id and not rule.workload_id
    if not fleet_wide:
        imports = imports.filter(
            Q(pool__in=rule_pools(rule, now, in_service=False).values("pk"))
            | Q(workload__in=Workload.objects.filter(rule_workloads(rule)).values("pk"))
        )
    subjects = _uploaded_import_subjects(imports.exclude(source__in=PULLED_SOURCES))
    subjects += _pulled_import_subjects(imports.filter(source__in=PULLED_SOURCES))
    if fleet_wide:
        subjects += _run_subjects(
            ComparisonExport.objects.filter(status=ComparisonExport.Status.FAILED)
            .filter(finished_at__gte=since)
            .select_related("scenario"),
            "export",
            gettext_noop("Export #%(run)s of %(scenario)s failed"),
            "procurement:export_detail",
            lambda export: {"scenario": export.scenario.name},
        )
        subjects += _run_subjects(
            RecomputeJob.objects.filter(status=RecomputeJob.Status.FAILED).filter(
                finished_at__gte=since
            ),
            "recompute",
            gettext_noop("Recompute #%(run)s of %(first)s to %(last)s failed"),
            "reports:recompute_detail",
            lambda job: {"first": f"{job.start_day:%Y-%m-%d}", "last": f"{job.end_day:%Y-%m-%d}"},
        )
    return subjects


def _run_message(run) -> Sentence:
    """The run's stored message as a sentence, so it is said in the reader's language."""
    parts = from_data(run.message_parts or [])
    if len(parts) == 1:
        return parts[0]
    return Sentence(run.message or "")


def _run_subjects(runs, job: str, summary_msgid: str, url_name: str, values_of) -> list[Subject]:
    subjects = []
    for run in runs.order_by("finished_at", "pk"):
        values = {"run": run.pk, **values_of(run)}
        subjects.append(
            Subject(
                labels={"job": job, "run": str(run.pk)},
                summary=sentence(summary_msgid, **values),
                description=sentence(
                    gettext_noop("%(what)s at %(when)s: %(message)s"),
                    what=sentence(summary_msgid, **values),
                    when=_day(run.finished_at),
                    message=_run_message(run),
                ),
                url=reverse(url_name, kwargs={"pk": run.pk}),
            )
        )
    return subjects


def _import_team(run) -> int | None:
    if run.workload_id:
        return run.workload.effective_team_id
    return run.pool.team_id if run.pool_id else None


def _uploaded_import_subjects(imports) -> list[Subject]:
    subjects = []
    runs = imports.select_related("pool", "workload__pool").order_by("finished_at", "pk")
    for run in runs:
        values = {"run": run.pk, "name": run.filename or run.get_source_display()}
        summary = sentence(gettext_noop("Import #%(run)s (%(name)s) failed"), **values)
        subjects.append(
            Subject(
                labels={"job": "import", "run": str(run.pk)},
                summary=summary,
                description=sentence(
                    gettext_noop("%(what)s at %(when)s: %(message)s"),
                    what=summary,
                    when=_day(run.finished_at),
                    message=_run_message(run),
                ),
                team_id=_import_team(run),
                url=reverse("telemetry:import_detail", kwargs={"pk": run.pk}),
            )
        )
    return subjects


def _pulled_import_subjects(imports) -> list[Subject]:
    """One subject per pool and kind of pull, however many of its runs failed: the
    newest run's message says why."""
    groups = (
        imports.values("source", "pool_id")
        .annotate(failures=Count("pk"), latest=Max("pk"))
        .order_by("source", "pool_id")
    )
    latest_runs = ImportRun.objects.select_related("pool").in_bulk(
        [group["latest"] for group in groups]
    )
    source_labels = dict(ImportRun.Source.choices)
    subjects = []
    for group in groups:
        run = latest_runs[group["latest"]]
        pool = run.pool
        values = {
            "source": Sentence(_english(source_labels[group["source"]])),
            "pool": pool.name if pool else "—",
            "failures": group["failures"],
        }
        summary = sentence(
            gettext_noop("%(source)s into %(pool)s failed %(failures)s times"), **values
        )
        labels = {"job": "pull", "source": group["source"]}
        if pool:
            labels["pool"] = pool.slug
        subjects.append(
            Subject(
                labels=labels,
                summary=summary,
                description=sentence(
                    gettext_noop("%(what)s; the latest, at %(when)s: %(message)s"),
                    what=summary,
                    when=_day(run.finished_at),
                    message=_run_message(run),
                ),
                team_id=pool.team_id if pool else None,
                url=reverse("telemetry:import_detail", kwargs={"pk": run.pk}),
            )
        )
    return subjects


@register(registry.DOLLARS_AT_RISK, thresholds=("threshold_usd",))
def dollars_at_risk(rule, now) -> list[Subject]:
    """The workloads' dollars at risk, in the reporting currency at the month's rate,
    against the rule's threshold, stated in USD, at the same rate."""
    rate = usd_to_reporting(now)
    threshold = rule.threshold_usd * rate
    workloads = watched_workloads(rule_scope(rule)).filter(rule_workloads(rule))
    subjects = []
    for item in at_risk_by_workload(workloads, now).values():
        if item.usd_at_risk is None:
            continue
        at_risk = as_decimal(item.usd_at_risk) * rate
        if at_risk <= threshold:
            continue
        workload = item.workload
        values = {
            "workload": workload.name,
            "usd": money_in_reporting(at_risk),
            "hours": f"{item.hours_at_risk:,.1f}",
            "gpus": workload.gpu_count,
            "price": money_in_reporting(as_decimal(item.price_per_gpu_hour_usd) * rate),
            "threshold": money_in_reporting(threshold),
        }
        if item.proven_step is not None:
            description = sentence(
                gettext_noop(
                    "A failure of %(workload)s now would redo %(hours)s h of %(gpus)s GPUs at "
                    "%(price)s per GPU-hour, %(usd)s, above the rule's %(threshold)s: the "
                    "newest checkpoint a restore drill proved is step %(step)s of %(saved)s."
                ),
                **values,
                step=f"{item.proven_step:,}",
                saved=_day(item.proven_at),
            )
        else:
            description = sentence(
                gettext_noop(
                    "A failure of %(workload)s now would redo %(hours)s h of %(gpus)s GPUs at "
                    "%(price)s per GPU-hour, %(usd)s, above the rule's %(threshold)s: no "
                    "checkpoint is proven restorable, so everything since the first training "
                    "event is at risk."
                ),
                **values,
            )
        subjects.append(
            Subject(
                labels={"workload": workload.slug, "pool": workload.pool.slug},
                summary=sentence(gettext_noop("%(workload)s: %(usd)s at risk"), **values),
                description=description,
                team_id=workload.effective_team_id,
                url=reverse("pools:workload_detail", kwargs={"slug": workload.slug}),
            )
        )
    return sorted(subjects, key=lambda subject: subject.labels["workload"])
