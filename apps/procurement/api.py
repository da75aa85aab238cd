from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.scope import scope_of
from apps.procurement.comparison import maths
from apps.procurement.comparison.services import scenario_queryset
from apps.procurement.comparison.what_if import apply_what_if
from apps.procurement.models import Scenario
from apps.procurement.serializers import (
    CapacityMixRequestSerializer,
    CapacityMixResponseSerializer,
    ScenarioDetailSerializer,
    ScenarioSerializer,
    WhatIfQuerySerializer,
)


class ScenarioViewSet(viewsets.ReadOnlyModelViewSet):
    """Procurement scenarios, addressed by slug: those of the caller's teams and the
    shared ones (a fleet-wide caller's: all); ``team`` is the team's slug (null: shared).
    The detail adds the computed comparison (every option's total cost, breakdown, unit
    costs and the recommendation)."""

    queryset = Scenario.objects.none()
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"
    filterset_fields = ["demand_source"]

    def get_queryset(self):
        queryset = (
            scenario_queryset()
            .select_related("team")
            .prefetch_related("user_regions")
            .order_by("name")
        )
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the schema
            return queryset
        return queryset.filter(scope_of(self.request.user).team_filter("team"))

    def get_serializer_class(self):
        return ScenarioDetailSerializer if self.action == "retrieve" else ScenarioSerializer

    @extend_schema(parameters=[WhatIfQuerySerializer])
    def retrieve(self, request, *args, **kwargs):
        """The comparison as the scenario page shows it, what-if inputs included: the
        query takes the page's "What if…" fields and nothing is saved."""
        query = WhatIfQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        scenario = self.get_object()
        scenario.what_if_saved = apply_what_if(scenario, query.validated_data)
        return Response(self.get_serializer(scenario).data)


class CapacityMixEstimateView(APIView):
    """How many GPUs to reserve (or own) and how many to rent on demand, from an hourly
    demand curve: the newsvendor optimum with the cost at every baseline size.

    Cost(R) = R·r·H + o·Σ_h max(0, d_h − R); the optimum is the (1 − r/o) quantile of
    hourly demand; break-even utilisation = r ÷ o. Nothing is stored, so read-only tokens
    and every role may call it.
    """

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=CapacityMixRequestSerializer,
        responses={200: CapacityMixResponseSerializer},
    )
    def post(self, request):
        request_serializer = CapacityMixRequestSerializer(data=request.data)
        request_serializer.is_valid(raise_exception=True)
        data = request_serializer.validated_data
        mix = maths.capacity_mix(
            data["hourly_demand_gpus"],
            data["reserved_price_per_gpu_hour"],
            data["on_demand_price_per_gpu_hour"],
        )
        return Response(
            CapacityMixResponseSerializer(
                {
                    "optimal_reserved_gpus": mix.optimal_reserved_gpus,
                    "total_cost": mix.total_cost,
                    "cost_by_reserved_gpus": list(mix.cost_by_reserved_gpus),
                    "break_even_utilization": mix.break_even_utilization,
                    "hours": mix.hours,
                }
            ).data
        )
