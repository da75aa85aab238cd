from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import viewsets
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Team
from apps.accounts.scope import scope_of
from apps.clusters.models import Cluster
from apps.core.money import rounding_difference
from apps.core.schema import ErrorSerializer
from apps.currencies.codes import reporting_currency
from apps.reports.cost.rates import missing_text
from apps.showback import audit, periods, selectors
from apps.showback.models import Budget
from apps.showback.months import month_span, parse_month
from apps.showback.serializers import (
    AuditBundleSerializer,
    AuditQuerySerializer,
    BudgetSerializer,
    ClusterShowbackQuerySerializer,
    PeriodSerializer,
    ReopenSerializer,
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
    """Monthly budgets of a team or a pool (``team``/``pool`` as slugs, exactly one), each
    stated in its ``currency`` (default: the reporting currency), with this month's
    burn-down in the reporting currency (``amount``, ``spent``, ``forecast``,
    ``reporting_currency``) and in USD (``spent_usd``, ``forecast_usd``), ``used_pct`` and
    ``state`` (ok, 50, 75, 90, over; unknown when the amount's exchange rate is missing,
    named in ``missing_rates``). Read as the budget's team or pool is; only superusers
    write."""

    queryset = Budget.objects.select_related("team", "pool__team").order_by("pk")
    serializer_class = BudgetSerializer

    def get_queryset(self):
        return super().get_queryset().in_scope(scope_of(self.request.user))

    def perform_create(self, serializer):
        self._save_with_burndown(serializer)

    def perform_update(self, serializer):
        self._save_with_burndown(serializer)

    def _save_with_burndown(self, serializer):
        """The answer to a write carries the burn-down figures as a read does."""
        budget = serializer.save()
        serializer.context["burndowns"] = {
            item.budget.pk: item for item in selectors.budget_burndowns([budget], timezone.now())
        }

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if self.request.method == "GET":
            context["burndowns"] = {
                item.budget.pk: item
                for item in selectors.budget_burndowns(
                    self.filter_queryset(self.get_queryset()), timezone.now()
                )
            }
        return context


class ShowbackView(APIView):
    """Each team's spend for a month (``?month=YYYY-MM``, UTC; default this month so far; a
    month yet to come spends nothing),
    split as the showback page splits it, from the cost report: in USD (the ``_usd``
    fields) and in the reporting currency (``cost``, ``unallocated``, ``total``, named by
    ``currency``), the exchange rates missing named in ``missing_rates``. A caller who is
    not fleet-wide gets their teams' rows only and no total."""

    @extend_schema(
        parameters=[ClusterShowbackQuerySerializer],
        responses={
            200: ShowbackSerializer,
            404: OpenApiResponse(ErrorSerializer, description="No cluster with that slug."),
        },
    )
    def get(self, request):
        query = ClusterShowbackQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        now = timezone.now()
        start = parse_month(query.validated_data.get("month"), now)
        if start is None:
            raise ValidationError({"month": ["A month from 2000-01 on, as YYYY-MM."]})
        begin, end = month_span(start, now)
        cluster = query.validated_data.get("cluster")
        if cluster and not Cluster.objects.filter(slug=cluster).exists():
            raise NotFound(f"No cluster with slug “{cluster}”.")
        figures = selectors.showback(begin, end, cluster=cluster)
        scope = scope_of(request.user)
        currency = figures.currency
        rows = []
        for team_id, spend in figures.teams.items():
            if scope.everything or team_id in scope.team_ids:
                rows.append(_spend_row(spend, spend.team.slug, spend.team.name, currency))
                rows.extend(_adjustment_rows(spend, spend.team.slug, spend.team.name, currency))
        if scope.everything:
            rows.append(_spend_row(figures.unattributed, None, "Unattributed", currency))
            rows.extend(_adjustment_rows(figures.unattributed, None, "Unattributed", currency))
        data = {
            "month": f"{start:%Y-%m}",
            "start": begin,
            "end": end,
            "rows": rows,
            "total_usd": figures.total_usd if scope.everything else None,
            "rounding_usd": (
                rounding_difference((row["cost_usd"] for row in rows), figures.total_usd)
                if scope.everything
                else None
            ),
            "total": figures.total if scope.everything else None,
            "rounding": (
                rounding_difference((row["cost"] for row in rows), figures.total)
                if scope.everything
                else None
            ),
            "currency": currency,
            "missing_rates": missing_text(figures.missing_rates),
        }
        return Response(ShowbackSerializer(data).data)


def _spend_row(spend, slug, name, currency) -> dict:
    return {
        "team": slug,
        "name": name,
        "cost_usd": spend.cost_usd,
        "unallocated_usd": spend.unallocated_usd,
        "cost": spend.cost,
        "unallocated": spend.unallocated,
        "currency": currency,
    }


def _adjustment_rows(spend, slug, name, currency) -> list[dict]:
    return [
        {
            "team": slug,
            "name": f"Adjustment to {month} · {name}",
            "cost_usd": usd,
            "cost": spend.adjustments.get(month, 0 * usd),
            "currency": currency,
            "adjusts_month": month,
        }
        for month, usd in sorted(spend.adjustments_usd.items())
    ]


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


# --- closed months ----------------------------------------------------------------------


def _period_data(period) -> dict:
    return {
        "month": period.label,
        "state": period.state,
        "closed_at": period.closed_at,
        "closed_by": period.closed_by or None,
        "cost_usd": period.cost_usd,
        "cost": period.cost,
        "currency": reporting_currency(),
        "missing_rates": missing_text(period.missing_rates),
    }


def _month_or_404(month: str):
    day = periods.parse_period(month)
    if day is None:
        raise NotFound(f"“{month}” is not a month: write it as 2026-10.")
    return day


class PeriodListView(APIView):
    """The last twelve months, this one first: ``state`` open or closed, who closed a
    closed one and when, and its cost (as frozen when closed). Read by the fleet-wide
    (Finance, superusers); others get 403."""

    @extend_schema(responses={200: PeriodSerializer(many=True), 403: ErrorSerializer})
    def get(self, request):
        if not scope_of(request.user).everything:
            raise PermissionDenied("Only Finance and administrators read the closed months.")
        data = [_period_data(period) for period in periods.period_list(timezone.now())]
        return Response(PeriodSerializer(data, many=True).data)


def _refused(error) -> Response:
    """A close or reopen refused: 409 when the month's state refuses it, else 400."""
    return Response({"detail": str(error)}, status=409 if error.conflict else 400)


class PeriodCloseView(APIView):
    """Close a month that has ended (Finance or a superuser): its cost report, showback,
    budgets and audit bundle are frozen and served as they were. 409 when it is closed
    already, 400 when it has not ended."""

    @extend_schema(
        request=None,
        responses={
            200: PeriodSerializer,
            400: ErrorSerializer,
            403: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    def post(self, request, month):
        day = _month_or_404(month)
        if not periods.can_close(request.user):
            raise PermissionDenied("Only Finance and administrators close a month.")
        try:
            periods.close_month(day, request.user)
        except periods.PeriodError as error:
            return _refused(error)
        return Response(PeriodSerializer(_period_data(_period_of(day))).data)


class PeriodReopenView(APIView):
    """Reopen a closed month (superusers only, with a ``reason``): it is computed live
    again, and the reopening is kept with the reason in the audit log. 409 when the
    month is not closed."""

    @extend_schema(
        request=ReopenSerializer,
        responses={
            200: PeriodSerializer,
            400: ErrorSerializer,
            403: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    def post(self, request, month):
        day = _month_or_404(month)
        if not periods.can_reopen(request.user):
            raise PermissionDenied("Only an administrator reopens a closed month.")
        body = ReopenSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            periods.reopen_month(day, request.user, body.validated_data["reason"])
        except periods.PeriodError as error:
            return _refused(error)
        return Response(PeriodSerializer(_period_data(_period_of(day))).data)


def _period_of(day):
    return periods.period_of(day, timezone.now())
