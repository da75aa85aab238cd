"""What needs a person, for the Overview: each item a sentence with its count and a link
to the page where it is dealt with. Counted in SQL, a query or two per kind of item.

- restore drills overdue, or whose latest drill failed (backups);
- training workloads whose dollars at risk (a failure now, redone from the newest
  checkpoint a drill proved) exceed ``settings.DOLLARS_AT_RISK_ATTENTION_USD``;
- alerts firing (alerts), with the rules that raised them;
- pool-hours flagged in the last 7 days (telemetry: more GPUs than declared, MIG lines
  both reported, slices above 100 %, samples outside the service period, clock skew);
- pools in service that sent no telemetry in the last 7 days (their cost is counted,
  their idle is unknown);
- GPUs that report telemetry but belong to no pool (their samples count nowhere).

Each item counts what is in the viewer's scope (apps/accounts/scope.py) only: the drills
of their workloads, the alerts, flags and silent pools of their pools. GPUs in no pool
belong to no team, so every viewer is told of them. The drills and the unassigned GPUs
are read at each visit; the flags and the silent pools are cached with the Overview's
figures, per scope.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Exists, OuterRef
from django.urls import reverse
from django.utils.translation import gettext, ngettext

from apps.accounts.scope import EVERYTHING, Scope
from apps.alerts.selectors import firing_summary
from apps.backups.at_risk import at_risk_by_workload, watched_workloads
from apps.backups.services import overdue_and_failing_summary
from apps.pools.hours import floor_hour
from apps.pools.models import Pool
from apps.reports.cache import cached
from apps.telemetry.models import GpuDevice, PoolHourFlag, PoolHourlyUsage

RECENT_DAYS = 7
POOLS_NAMED = 3


@dataclass(frozen=True)
class AttentionItem:
    kind: str
    sentence: str
    url: str
    action: str
    severity: str = "warning"  # "danger" for what is already failing


def attention_items(now, drills=None, *, scope: Scope = EVERYTHING) -> list[AttentionItem]:
    """The items of ``scope``, the failing ones first; empty when nothing needs a person.
    ``drills``: ``overdue_and_failing_summary(now, scope=scope)`` when the caller already
    has it."""
    since = floor_hour(now) - timedelta(days=RECENT_DAYS)
    items: list[AttentionItem] = []
    drills = drills if drills is not None else overdue_and_failing_summary(now, scope=scope)
    policies = reverse("backups:policy_list")
    if drills["failing"]:
        items.append(
            AttentionItem(
                "drills-failing",
                ngettext(
                    "%(count)d backup policy's latest restore drill failed.",
                    "%(count)d backup policies' latest restore drills failed.",
                    drills["failing"],
                )
                % {"count": drills["failing"]},
                policies,
                gettext("See the failing drills"),
                "danger",
            )
        )
    if drills["overdue"]:
        items.append(
            AttentionItem(
                "drills-overdue",
                ngettext(
                    "%(count)d restore drill is overdue.",
                    "%(count)d restore drills are overdue.",
                    drills["overdue"],
                )
                % {"count": drills["overdue"]},
                policies,
                gettext("Schedule the drills"),
            )
        )
    items.extend(_at_risk_items(now, scope))
    firing = firing_summary(scope)
    if firing["count"]:
        rules = ", ".join(firing["rules"]) + (", …" if firing["more_rules"] else "")
        items.append(
            AttentionItem(
                "alerts-firing",
                ngettext(
                    "%(count)d alert is firing (%(rules)s).",
                    "%(count)d alerts are firing (%(rules)s).",
                    firing["count"],
                )
                % {"count": firing["count"], "rules": rules},
                reverse("alerts:alert_list") + "?status=firing",
                gettext("See the alerts"),
                "danger",
            )
        )
    items.extend(
        cached(
            "overview-attention",
            {"scope": scope.cache_key},
            lambda: _telemetry_items(since, now, scope),
        )
    )
    unassigned = GpuDevice.objects.filter(pool__isnull=True).count()
    if unassigned:
        items.append(
            AttentionItem(
                "unassigned-gpus",
                ngettext(
                    "%(count)d GPU reports telemetry but belongs to no pool.",
                    "%(count)d GPUs report telemetry but belong to no pool.",
                    unassigned,
                )
                % {"count": unassigned},
                reverse("telemetry:device_unassigned"),
                gettext("Assign them"),
            )
        )
    return items


def _at_risk_items(now, scope: Scope) -> list[AttentionItem]:
    """One item per workload of ``scope`` whose dollars at risk exceed the threshold, the
    largest first: each names its amount and links to its card."""
    threshold_usd = settings.DOLLARS_AT_RISK_ATTENTION_USD
    figures = at_risk_by_workload(watched_workloads(scope), now).values()
    above = sorted(
        (item for item in figures if item.usd_at_risk is not None),
        key=lambda item: -item.usd_at_risk,
    )
    items = []
    for item in above:
        if item.usd_at_risk <= threshold_usd:
            break
        workload = item.workload
        if item.proven_step is not None:
            text = gettext(
                "%(workload)s has %(usd)s at risk: %(hours)s h of %(gpus)s GPUs since step "
                "%(step)s, the newest checkpoint a restore drill proved."
            )
        else:
            text = gettext(
                "%(workload)s has %(usd)s at risk: %(hours)s h of %(gpus)s GPUs, no "
                "checkpoint proven restorable."
            )
        items.append(
            AttentionItem(
                "dollars-at-risk",
                text
                % {
                    "workload": workload.name,
                    "usd": f"${item.usd_at_risk:,.2f}",
                    "hours": f"{item.hours_at_risk:,.1f}",
                    "gpus": workload.gpu_count,
                    "step": f"{item.proven_step or 0:,}",
                },
                workload.get_absolute_url() + "#workload-at-risk-panel",
                gettext("See what is at risk"),
            )
        )
    return items


def _telemetry_items(since, now, scope: Scope) -> list[AttentionItem]:
    """The flagged pool-hours and the pools without telemetry since ``since``: they follow
    the rollups and the pools, whose every change bumps the reports' cache version, so
    they are cached with the Overview's figures (a query over every pool otherwise)."""
    items: list[AttentionItem] = []
    flagged = list(
        PoolHourFlag.objects.filter(scope.team_filter("pool__team"), hour__gte=since)
        .values("pool__slug", "pool__name")
        .annotate(hours=Count("hour", distinct=True))
        .order_by("-hours", "pool__name")
    )
    if flagged:
        hours = sum(row["hours"] for row in flagged)
        names = ", ".join(row["pool__name"] for row in flagged[:POOLS_NAMED])
        items.append(
            AttentionItem(
                "flagged-hours",
                ngettext(
                    "%(hours)d pool-hour flagged in the last %(days)d days (%(pools)s).",
                    "%(hours)d pool-hours flagged in the last %(days)d days (%(pools)s).",
                    hours,
                )
                % {"hours": hours, "days": RECENT_DAYS, "pools": names},
                reverse("telemetry:reconciliation"),
                gettext("Review the flags"),
            )
        )
    silent = list(
        Pool.objects.in_scope(scope)
        .active()
        .in_service(now)
        .filter(in_service_from__lt=since)
        .exclude(Exists(PoolHourlyUsage.objects.filter(pool=OuterRef("pk"), hour__gte=since)))
        .order_by("name")
        .values_list("name", flat=True)
    )
    if silent:
        names = ", ".join(silent[:POOLS_NAMED]) + (", …" if len(silent) > POOLS_NAMED else "")
        items.append(
            AttentionItem(
                "pools-without-telemetry",
                ngettext(
                    "%(count)d pool in service sent no telemetry in the last %(days)d days "
                    "(%(pools)s): its cost counts, its idle time is unknown.",
                    "%(count)d pools in service sent no telemetry in the last %(days)d days "
                    "(%(pools)s): their cost counts, their idle time is unknown.",
                    len(silent),
                )
                % {"count": len(silent), "days": RECENT_DAYS, "pools": names},
                reverse("telemetry:import_create"),
                gettext("Import or pull telemetry"),
            )
        )
    return items
