"""The Overview: the fleet at a glance, the first page after sign-in. It sits above the
apps whose figures it shows (reports' cost and use, backups' overdue drills), so none of
them imports another to draw it."""

from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from apps.backups.services import overdue_and_failing_summary
from apps.core.htmx import render_page
from apps.dashboard.attention import attention_items
from apps.pools.models import Pool
from apps.reports import explain, selectors
from apps.reports.cache import remember_view
from apps.reports.views import explain_page


@require_GET
def overview(request):
    remember_view("overview")
    context = selectors.overview_figures(timezone.now())
    context["pool_count"] = Pool.objects.count()
    context["drills"] = overdue_and_failing_summary()
    now = timezone.now()
    context["attention"] = attention_items(now)
    context["idle_ranking"] = selectors.idle_ranking(now)
    return render_page(request, "dashboard/overview.html", context)


# Overview KPI → (title, figures of the month-to-date total row).
OVERVIEW_MONTH_KPIS = {
    "cost": ("Cost, month to date", ("cost_usd", "unmeasured_cost_usd")),
    "idle": ("Idle cost, month to date", ("idle_cost_usd",)),
    "per-request": (
        "Inference cost per 1k requests, month to date",
        ("cost_per_1k_requests_usd", "cost_per_1m_tokens_usd"),
    ),
    "training": (
        "Per effective training GPU-hour, month to date",
        ("cost_per_effective_training_gpu_hour_usd", "lost_gpu_hours", "interruption_cost_usd"),
    ),
    "unmeasured": ("Unmeasured, month to date", ("unmeasured_gpu_hours",)),
}
OVERVIEW_KPIS = ("gpus", "utilization", *OVERVIEW_MONTH_KPIS, "drills")


@require_GET
def overview_explain(request):
    """How one Overview KPI (``?kpi=``) was computed, from the Overview's own cached
    figures."""
    kpi = request.GET.get("kpi") or "cost"
    if kpi not in OVERVIEW_KPIS:
        return explain_page(request, {"error": f"No figure “{kpi}” on the Overview."}, 404)
    now = timezone.now()
    figures = selectors.overview_figures(now)
    period = f"Month to date: since {figures['month_start']:%-d %b %Y} 00:00 UTC"
    if kpi in OVERVIEW_MONTH_KPIS:
        title, names = OVERVIEW_MONTH_KPIS[kpi]
        month = figures["month"]
        sections = [
            (explain.FIGURES[name][0], explain.explain_figure(month, name)) for name in names
        ]
    elif kpi == "utilization":
        title, period = "Utilisation", "Pool-hours with telemetry, every pool"
        sections = [
            (
                f"Utilisation, {label}",
                explain.explain_utilization(
                    *figures[f"usage_{key}"], figures[f"utilization_{key}_pct"], period=label
                ),
            )
            for key, label in (("24h", "last 24 h"), ("7d", "last 7 days"))
        ]
    elif kpi == "gpus":
        title, period = "GPUs", "Every pool in service now"
        by_purpose = [(label, gpus) for label, _, gpus in figures["gpus_by_purpose"]]
        sections = [("GPUs", explain.explain_gpu_total(by_purpose, figures["gpu_total"]))]
    else:
        title, period = "Restore drills overdue", f"Backup policies at {now:%-d %b %Y %H:%M} UTC"
        sections = [("Drills", explain.explain_drills(overdue_and_failing_summary(now)))]
    context = {
        "title": title,
        "period": period,
        "sections": sections,
        "back_url": reverse("dashboard:overview"),
    }
    return explain_page(request, context)
