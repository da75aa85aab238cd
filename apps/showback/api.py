from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Team
from apps.accounts.scope import scope_of
from apps.core.schema import ErrorSerializer
from apps.showback import audit, selectors
from apps.showback.models import Budget
from apps.showback.months import month_span, parse_month
from apps.showback.serializers import (
    AuditBundleSerializer,
    AuditQuerySerializer,
    BudgetSerializer,
    ShowbackQuerySerializer,
    ShowbackSerializer,
    TeamSerializer,
)

SLUG_PATTERN = "[-a-zA-Z0-9_]+"


class TeamViewSet(viewsets.ModelViewSet):
    """Teams, addressed by slug, with their members' usernames. Everyone signed in reads
    their own teams (the fleet-wide: every team); only superusers write. A team that
    still owns pools, workloads or budgets answers 409 to a DELETE."""

    queryset = Team.objects.prefetch_related("members").order_by("name")
    serializer_class = TeamSerializer
    lookup_field = "slug"
    lookup_value_regex = SLUG_PATTERN

    def get_queryset(self):
        scope = scope_of(self.request.user)
        queryset = super().get_queryset()
        return queryset if scope.everything else queryset.filter(pk__in=sorted(scope.team_ids))


class BudgetViewSet(viewsets.ModelViewSet):
    """Monthly budgets of a team or a pool (``team``/``pool`` as slugs, exactly one), with
    this month's burn-down: ``spent_usd``, ``used_pct``, ``forecast_usd`` and ``state``
    (ok, 50, 75, 90, over). Read as the budget's team or pool is; only superusers write."""

    queryset = Budget.objects.select_related("team", "pool__team").order_by("pk")
    serializer_class = BudgetSerializer

    def get_queryset(self):
        return super().get_queryset().in_scope(scope_of(self.request.user))

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if self.request.method == "GET":
            context["burndowns"] = {
                item.budget.pk: item.figures
                for item in selectors.budget_burndowns(
                    self.filter_queryset(self.get_queryset()), timezone.now()
                )
            }
        return context


class ShowbackView(APIView):
    """Each team's spend for a month (``?month=YYYY-MM``, UTC; default this month so far; a
    month yet to come spends nothing),
    split as the showback page splits it, from the cost report. A caller who is not
    fleet-wide gets their teams' rows only and no total."""

    @extend_schema(parameters=[ShowbackQuerySerializer], responses=ShowbackSerializer)
    def get(self, request):
        query = ShowbackQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        now = timezone.now()
        start = parse_month(query.validated_data.get("month"), now)
        if start is None:
            raise ValidationError({"month": ["A month from 2000-01 on, as YYYY-MM."]})
        begin, end = month_span(start, now)
        figures = selectors.showback(begin, end)
        scope = scope_of(request.user)
        rows = [
            {
                "team": spend.team.slug,
                "name": spend.team.name,
                "cost_usd": spend.cost_usd,
                "unallocated_usd": spend.unallocated_usd,
            }
            for team_id, spend in figures.teams.items()
            if scope.everything or team_id in scope.team_ids
        ]
        if scope.everything:
            rows.append(
                {
                    "team": None,
                    "name": "Unattributed",
                    "cost_usd": figures.unattributed.cost_usd,
                    "unallocated_usd": figures.unattributed.unallocated_usd,
                }
            )
        data = {
            "month": f"{start:%Y-%m}",
            "start": begin,
            "end": end,
            "rows": rows,
            "total_usd": figures.total_usd if scope.everything else None,
        }
        return Response(ShowbackSerializer(data).data)


class TeamAuditView(APIView):
    """A team's audit bundle for a month (``?month=YYYY-MM``, UTC; default: the last
    complete month): its showback cost per pool, each workload's cost report figures and
    goodput, and the restore drills finished in the month with RTO and RPO against their
    targets; the same figures as the team page's XLSX and PDF. A team outside the
    caller's scope answers 404."""

    @extend_schema(
        parameters=[AuditQuerySerializer],
        responses={200: AuditBundleSerializer, 404: ErrorSerializer},
    )
    def get(self, request, slug):
        query = AuditQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        team = selectors.teams_in_scope(scope_of(request.user)).filter(slug=slug).first()
        if team is None:
            raise NotFound(f"No team with slug “{slug}”.")
        now = timezone.now()
        start, error = audit.requested_month(query.validated_data.get("month"), now)
        if start is None:
            raise ValidationError({"month": [error]})
        begin, end = month_span(start, now)
        bundle = audit.audit_bundle(team, begin, end, scope=scope_of(request.user))
        return Response(AuditBundleSerializer(bundle).data)
