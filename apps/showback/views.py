"""Teams, showback and budgets. Everyone signed in reads what their scope holds: the
fleet-wide (superusers, Finance) every team, the others their own teams (another team's
page answers 404). Teams and budgets are changed by superusers only."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts.models import Team
from apps.accounts.scope import scope_of
from apps.clusters.models import Cluster
from apps.core.crud import ObjectViews
from apps.core.guard import superuser_only
from apps.core.history import history_rows
from apps.core.htmx import render_page
from apps.pools.models import Pool
from apps.reports.models import ClosedMonth
from apps.showback import audit, audit_exports, exports, periods, selectors
from apps.showback.charts import build_burndown_figure
from apps.showback.forms import BudgetForm, TeamForm
from apps.showback.models import Budget
from apps.showback.months import (
    last_complete_month,
    month_span,
    not_a_month_sentence,
    parse_month,
)

# Teams and budgets are read within the reader's scope (another team's answers 404, before
# any 403: its existence is not disclosed) and changed by superusers only.
ADMINISTRATORS_ONLY = superuser_only(_("Only administrators change teams and budgets."))


class TeamViews(ObjectViews):
    model = Team
    noun = _("Team")
    form = TeamForm
    template = "showback/team_form.html"
    list_url = "showback:team_list"
    pretitle = _("Teams")
    permissions = dict.fromkeys(("add", "change", "delete"), ADMINISTRATORS_ONLY)

    def objects(self, request):
        return selectors.teams_in_scope(scope_of(request.user))

    def delete_options(self, request, team):
        return {
            "blocking": team_blockers(team),
            "blocking_label": gettext(
                "pools, workloads, budgets or other objects it owns; give them to another team "
                "or make them shared first, so their history keeps an owner"
            ),
        }


class BudgetViews(ObjectViews):
    model = Budget
    noun = _("Budget")
    lookup = {"pk": "pk"}
    form = BudgetForm
    template = "showback/budget_form.html"
    list_url = "showback:budget_list"
    pretitle = _("Budgets")
    permissions = TeamViews.permissions

    def objects(self, request):
        return selectors.budgets_in_scope(scope_of(request.user))

    def initial(self, request, parent):
        team = Team.objects.filter(slug=request.GET.get("team") or "").first()
        return {"team": team.pk} if team else {}


team_views = TeamViews()
budget_views = BudgetViews()


def showback_rows(figures: selectors.Showback, scope) -> list[dict]:
    """Rows of the page and the exports: the scope's teams and, for the fleet-wide,
    the unattributed rest; each followed by its adjustments to closed months (their
    figures moved since they closed), which the total includes."""
    rows = []
    for team_id, spend in figures.teams.items():
        if scope.everything or team_id in scope.team_ids:
            rows.append(
                {
                    "name": spend.team.name,
                    "slug": spend.team.slug,
                    "cost_usd": spend.cost_usd,
                    "cost": spend.cost,
                }
            )
            rows.extend(_adjustment_rows(spend, spend.team.name, spend.team.slug))
    if scope.everything:
        name = gettext("Unattributed (shared pools' rest)")
        unattributed = figures.unattributed
        rows.append(
            {
                "name": name,
                "slug": None,
                "cost_usd": unattributed.cost_usd,
                "cost": unattributed.cost,
            }
        )
        rows.extend(_adjustment_rows(unattributed, name, None))
    return rows


def _adjustment_rows(spend, name: str, slug) -> list[dict]:
    return [
        {
            "name": gettext("Adjustment to %(month)s · %(row)s") % {"month": month, "row": name},
            "slug": slug,
            "cost_usd": usd,
            "cost": spend.adjustments.get(month, 0 * usd),
            "adjusts_month": month,
        }
        for month, usd in sorted(spend.adjustments_usd.items())
    ]


# --- Teams ------------------------------------------------------------------------------


@require_GET
def team_list(request):
    scope = scope_of(request.user)
    now = timezone.now()
    start, end = month_span(parse_month(None, now), now)
    figures = selectors.showback(start, end)
    teams = list(selectors.team_list_rows(scope))
    for team in teams:
        team.month_cost = figures.teams[team.pk].charged
    return render_page(
        request,
        "showback/team_list.html",
        {"teams": teams, "month_start": start, "total": figures},
        fragments={"teams": "teams"},
    )


@team_views.object_view()
@require_GET
def team_detail(request, team):
    return _team_page(request, team)


def _team_page(request, team, *, audit_month: str = "", audit_error: str = "", status=200):
    scope = scope_of(request.user)
    now = timezone.now()
    start, end = month_span(parse_month(None, now), now)
    figures = selectors.showback(start, end)
    spend = figures.teams[team.pk]
    visible_pools = set(Pool.objects.in_scope(scope).values_list("pk", flat=True))
    by_pool = sorted(
        (
            {
                "pool": figures.pools[pool_id] if pool_id in visible_pools else None,
                "cost_usd": usd,
                "cost": spend.by_pool.get(pool_id, 0 * usd),
            }
            for pool_id, usd in spend.by_pool_usd.items()
        ),
        key=lambda row: -row["cost"],
    )
    burndowns = selectors.budget_burndowns(selectors.budgets_in_scope(scope).filter(team=team), now)
    return render_page(
        request,
        "showback/team_detail.html",
        {
            "team": team,
            "members": team.members.order_by("username"),
            "pools": team.pools.order_by("name"),
            "workloads": audit.team_workloads(team).select_related("pool").order_by("name"),
            "month_start": start,
            "spend": spend,
            "by_pool": by_pool,
            "total": figures,
            "burndowns": burndowns,
            "burndown_figure": build_burndown_figure(burndowns),
            "history": history_rows(burndowns[0].budget) if burndowns else [],
            "audit_month": audit_month or f"{last_complete_month(now):%Y-%m}",
            "audit_latest_month": f"{now:%Y-%m}",
            "audit_error": audit_error,
        },
        status=status,
    )


@team_views.object_view()
@require_GET
def team_audit(request, team):
    """The team's audit bundle for ``?month=YYYY-MM`` (default: the last complete month)
    as ``?format=xlsx`` or ``pdf``; a month that is not one, or has not started, answers
    the team page with the error beside the month picker (400)."""
    extension = request.GET.get("format", "xlsx")
    if extension not in audit_exports.FORMATS:
        raise Http404
    now = timezone.now()
    start, error = audit.requested_month(request.GET.get("month"), now)
    if start is None:
        return _team_page(
            request,
            team,
            audit_month=request.GET.get("month", ""),
            audit_error=error,
            status=400,
        )
    begin, end = month_span(start, now)
    bundle = audit.audit_bundle(team, begin, end, scope=scope_of(request.user))
    return audit_exports.audit_response(bundle, extension)


team_create = team_views.create_view()
team_edit = team_views.edit_view()
team_delete = team_views.delete_view()


def team_blockers(team) -> list:
    """What the team still owns that keeps it from being deleted: every object whose
    foreign key to it protects it (pools, workloads, budgets, channels, and scenarios
    once they have a team), so no history loses its owner."""
    blockers = []
    for relation in Team._meta.related_objects:
        if relation.on_delete is models.PROTECT:
            blockers.extend(getattr(team, relation.get_accessor_name()).all()[:20])
    return blockers


# --- Showback ---------------------------------------------------------------------------


def _cluster_of(request) -> Cluster | None:
    """The cluster ``?cluster=`` names (None: every cluster); an unknown slug is a 404."""
    slug = request.GET.get("cluster")
    return get_object_or_404(Cluster, slug=slug) if slug else None


def _month_figures(request):
    cluster = _cluster_of(request)
    now = timezone.now()
    start = parse_month(request.GET.get("month"), now)
    error = ""
    if start is None:
        error = not_a_month_sentence(request.GET.get("month"))
        start = parse_month(None, now)
    if start > now:
        error = gettext("%(month)s has not started yet: showing this month.") % {
            "month": f"{start:%Y-%m}"
        }
        start = parse_month(None, now)
    begin, end = month_span(start, now)
    slug = cluster.slug if cluster is not None else None
    return start, error, selectors.showback(begin, end, cluster=slug)


@require_GET
def showback_page(request):
    scope = scope_of(request.user)
    start, error, figures = _month_figures(request)
    rows = showback_rows(figures, scope)
    return render_page(
        request,
        "showback/showback.html",
        {
            "rows": rows,
            "month": f"{start:%Y-%m}",
            "error": error,
            "clusters": Cluster.objects.order_by("name"),
            "cluster": _cluster_of(request),
            # The fleet's total in the reporting currency, for the fleet-wide only.
            "fleet_total": figures.total if scope.everything else None,
            "total_usd": figures.total_usd if scope.everything else None,
            # A missing exchange rate leaves amounts out: the page says which.
            "total": figures,
            "closed_month": ClosedMonth.objects.filter(month=start.date(), is_closed=True).first(),
        },
        fragments={"showback": "showback"},
    )


@require_GET
def showback_export(request):
    extension = request.GET.get("format", "csv")
    if extension not in exports.FORMATS:
        raise Http404
    start, _error, figures = _month_figures(request)
    scope = scope_of(request.user)
    rows = showback_rows(figures, scope)
    return exports.showback_response(
        rows,
        month=f"{start:%Y-%m}",
        extension=extension,
        total_usd=figures.total_usd if scope.everything else None,
        total=figures.total if scope.everything else None,
        missing_rates=figures.missing_rates,
    )


# --- Budgets ----------------------------------------------------------------------------


@require_GET
def budget_list(request):
    """Every budget in scope with its burn-down; the Overview loads its card fragment."""
    burndowns = selectors.scope_burndowns(scope_of(request.user), timezone.now())
    return render_page(
        request,
        "showback/budget_list.html",
        {"burndowns": burndowns, "burndown_figure": build_burndown_figure(burndowns)},
        fragments={"budgets-panel": "card"},
    )


budget_create = budget_views.create_view()
budget_edit = budget_views.edit_view()
budget_delete = budget_views.delete_view()


# --- Closed months ----------------------------------------------------------------------


def _check_can_close(request):
    if not periods.can_close(request.user):
        raise PermissionDenied(_("Only Finance and administrators close months."))


def _period_or_404(month: str):
    day = periods.parse_period(month)
    if day is None:
        raise Http404(not_a_month_sentence(month))
    return day


@require_GET
def period_list(request):
    """The last twelve months: open or closed, who closed one and when, their cost."""
    _check_can_close(request)
    return render_page(
        request,
        "showback/period_list.html",
        {
            "periods": periods.period_list(timezone.now()),
            "can_reopen": periods.can_reopen(request.user),
        },
        fragments={"periods": "periods"},
    )


@require_http_methods(["GET", "POST"])
def period_close(request, month):
    """Close a month, once confirmed (GET asks, POST closes)."""
    day = _period_or_404(month)
    _check_can_close(request)
    period = periods.period_of(day, timezone.now())
    error = ""
    if request.method == "POST":
        try:
            periods.close_month(day, request.user)
        except periods.PeriodError as refusal:
            error = str(refusal)
        else:
            messages.success(request, gettext("%(month)s is closed.") % {"month": month})
            return redirect("showback:period_list")
    return render_page(
        request,
        "showback/period_close.html",
        {"period": period, "error": error},
        status=400 if error else 200,
    )


@require_http_methods(["GET", "POST"])
def period_reopen(request, month):
    """Reopen a closed month: superusers only, with a reason."""
    day = _period_or_404(month)
    if not periods.can_reopen(request.user):
        raise PermissionDenied(_("Only an administrator reopens a closed month."))
    period = periods.period_of(day, timezone.now())
    error = ""
    reason = request.POST.get("reason", "")
    if request.method == "POST":
        try:
            periods.reopen_month(day, request.user, reason)
        except periods.PeriodError as refusal:
            error = str(refusal)
        else:
            messages.success(request, gettext("%(month)s is open again.") % {"month": month})
            return redirect("showback:period_list")
    return render_page(
        request,
        "showback/period_reopen.html",
        {"period": period, "error": error, "reason": reason},
        status=400 if error else 200,
    )
