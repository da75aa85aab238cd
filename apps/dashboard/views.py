"""The Overview: the fleet at a glance, the first page after sign-in. It sits above the
apps whose figures it shows (reports' cost and use, backups' overdue drills), so none of
them imports another to draw it."""

from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import dateformat, timezone
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET

from apps.accounts.scope import EVERYTHING, Scope, scope_of
from apps.backups.services import overdue_and_failing_summary
from apps.clusters.models import Cluster
from apps.core.htmx import render_page
from apps.dashboard import explain as overview_explanations
from apps.dashboard import selectors
from apps.dashboard.attention import attention_items
from apps.pools.models import Pool
from apps.reports.cache import cached, remember_view
from apps.reports.cost import explain
from apps.reports.models import ClosedMonth
from apps.reports.views import explain_page

CLOSED_MONTHS_SHOWN = 6

# Where the live "Needs a person" list goes in the cached figures.
ATTENTION_PLACEHOLDER = mark_safe("<!-- gpufleet:attention -->")  # noqa: S308 - a constant


def _cluster_of(request) -> Cluster | None:
    """The cluster ``?cluster=`` names (None: the whole fleet); an unknown slug is a
    404, not the fleet's figures under a cluster's name."""
    slug = request.GET.get("cluster")
    if not slug:
        return None
    return get_object_or_404(Cluster, slug=slug)


@require_GET
def overview(request):
    scope = scope_of(request.user)
    cluster = _cluster_of(request)
    if cluster is None:
        remember_view("overview", scope_key=scope.cache_key)
    now = timezone.now()
    context = _live_context(now, scope, cluster)
    context["clusters"] = Cluster.objects.filter(
        pk__in=Pool.objects.in_scope(scope).values("cluster")
    ).order_by("name")
    if context["pool_count"]:
        context["overview_html"] = overview_html(now, context, scope)
    return render_page(request, "dashboard/overview.html", context)


def _live_context(now, scope: Scope, cluster: Cluster | None = None) -> dict:
    """What the Overview reads at each visit, of the pools and workloads in ``scope``
    (of ``cluster``'s pools when given): the pool count and, with pools, the drills and
    what needs a person."""
    pools = Pool.objects.in_scope(scope)
    if cluster is not None:
        pools = pools.filter(cluster=cluster)
    context = {"pool_count": pools.count(), "cluster": cluster}
    if context["pool_count"]:
        # The months finance has closed, the latest first: served as they were frozen.
        context["closed_months"] = list(
            ClosedMonth.objects.filter(is_closed=True).order_by("-month")[:CLOSED_MONTHS_SHOWN]
        )
        context["drills"] = overdue_and_failing_summary(now, scope=scope)
        context["attention"] = attention_items(now, context["drills"], scope=scope)
    return context


def warm_overview_html(now, scope: Scope = EVERYTHING) -> None:
    """What a reports warm-up adds for the Overview (apps/reports/warming.py): its rendered
    figures for ``scope``, under the key the next visit of that scope computes."""
    context = _live_context(now, scope)
    if context["pool_count"]:
        overview_html(now, context, scope)


def overview_html(now, live: dict, scope: Scope = EVERYTHING) -> str:
    """The Overview's figures, rendered, cached with them: a visit then reads one string
    back, not the figures, whose unpickling grows with the fleet. What the view reads at
    each visit and the figures show (the pool count, the drills) is part of the cache key,
    so a drill recorded shows at once. The "Needs a person" list is rendered at each visit
    into its place in the cached string: its sentences carry amounts that grow by the
    minute (dollars at risk), which in the key would make every visit a miss."""
    cluster = live.get("cluster")
    slug = cluster.slug if cluster is not None else None
    parameters = {
        **selectors.cache_parameters(scope, slug),
        "pool_count": live["pool_count"],
        "drills": live["drills"],
    }
    figures = cached(
        "overview-html",
        parameters,
        lambda: render_to_string(
            "dashboard/overview.html#figures",
            {
                **selectors.overview_figures(now, scope, cluster=slug),
                **{name: value for name, value in live.items() if name != "clusters"},
                "attention_list_html": ATTENTION_PLACEHOLDER,
            },
        ),
    )
    attention = render_to_string("dashboard/_attention_list.html", {"attention": live["attention"]})
    return mark_safe(figures.replace(ATTENTION_PLACEHOLDER, attention))  # noqa: S308 - both rendered by templates


# Overview KPI → (title, figures of the month-to-date total row).
OVERVIEW_MONTH_KPIS = {
    "cost": (_("Cost, month to date"), ("cost_usd", "unmeasured_cost_usd")),
    "idle": (_("Idle cost, month to date"), ("idle_cost_usd",)),
    "per-request": (
        _("Inference cost per 1k requests, month to date"),
        ("cost_per_1k_requests_usd", "cost_per_1m_tokens_usd"),
    ),
    "training": (
        _("Per effective training GPU-hour, month to date"),
        ("cost_per_effective_training_gpu_hour_usd", "lost_gpu_hours", "interruption_cost_usd"),
    ),
    "unmeasured": (_("Unmeasured, month to date"), ("unmeasured_gpu_hours",)),
}
OVERVIEW_KPIS = ("gpus", "utilization", *OVERVIEW_MONTH_KPIS, "drills")


@require_GET
def overview_explain(request):
    """How one Overview KPI (``?kpi=``) was computed, from the Overview's own cached
    figures."""
    kpi = request.GET.get("kpi") or "cost"
    if kpi not in OVERVIEW_KPIS:
        error = gettext("No figure “%(kpi)s” on the Overview.") % {"kpi": kpi}
        return explain_page(request, {"error": error}, 404)
    now = timezone.now()
    scope = scope_of(request.user)
    cluster = _cluster_of(request)
    slug = cluster.slug if cluster is not None else None
    figures = selectors.overview_figures(now, scope, cluster=slug)
    # "1 Dec 2026" in English; the format is translated with the month's name.
    day_month_year = gettext("j M Y")
    period = gettext("Month to date: since %(date)s 00:00 UTC") % {
        "date": dateformat.format(figures["month_start"], day_month_year)
    }
    if kpi in OVERVIEW_MONTH_KPIS:
        title, names = OVERVIEW_MONTH_KPIS[kpi]
        # The page's figures keep no per-pool parts; the explanation reads them.
        month = selectors.overview_month(now, scope, cluster=slug)["total"]
        sections = [
            (explain.FIGURES[name][0], explain.explain_figure(month, name)) for name in names
        ]
    elif kpi == "utilization":
        title, period = gettext("Utilisation"), gettext("Pool-hours with telemetry, every pool")
        sections = [
            (
                gettext("Utilisation, %(period)s") % {"period": label},
                overview_explanations.explain_utilization(
                    *figures[f"usage_{key}"], figures[f"utilization_{key}_pct"], period=label
                ),
            )
            for key, label in (("24h", gettext("last 24 h")), ("7d", gettext("last 7 days")))
        ]
    elif kpi == "gpus":
        title, period = gettext("GPUs"), gettext("Every pool in service now")
        by_purpose = [(label, gpus) for label, _, gpus in figures["gpus_by_purpose"]]
        sections = [
            (
                gettext("GPUs"),
                overview_explanations.explain_gpu_total(by_purpose, figures["gpu_total"]),
            )
        ]
    else:
        title = gettext("Restore drills overdue")
        period = gettext("Backup policies at %(moment)s UTC") % {
            "moment": dateformat.format(now, gettext("j M Y H:i"))
        }
        drills = overdue_and_failing_summary(now, scope=scope)
        sections = [(gettext("Drills"), overview_explanations.explain_drills(drills))]
    context = {
        "title": title,
        "period": period,
        "sections": sections,
        "back_url": reverse("dashboard:overview"),
    }
    return explain_page(request, context)
