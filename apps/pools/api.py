from django.urls import reverse
from django.utils import timezone, translation
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.pools.estimate_serializers import (
    MemoryEstimateRequestSerializer,
    MemoryEstimateResponseSerializer,
)
from apps.pools.estimates import EstimateError, run_memory_estimate
from apps.pools.filters import PoolApiFilter, WorkloadApiFilter
from apps.pools.models import Pool, Workload
from apps.pools.prices import price_history
from apps.pools.querysets import pool_scope_filter, workload_scope_filter
from apps.pools.scoped import ScopedQuerysetMixin
from apps.pools.serializers import PoolSerializer, PricePeriodSerializer, WorkloadSerializer
from apps.pools.signals import service_period_changed

ARCHIVED_PARAMETER = OpenApiParameter(
    "archived",
    OpenApiTypes.STR,
    enum=["false", "true", "all"],
    description="false (default): the active ones; true: the archived ones; all: both.",
)


class ArchivableViewSet(viewsets.ModelViewSet):
    """Lists hide archived objects unless ``?archived=true|all``; an object with usage
    history is never deleted (409, with the archive action's URL); ``POST …/archive/``
    and ``…/restore/`` need the model's change permission."""

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.action == "list":
            archived = self.request.query_params.get("archived") or "false"
            if archived not in ("false", "true", "all"):
                raise ValidationError({"archived": [f"“{archived}”: expected false, true or all."]})
            queryset = queryset.by_archived(archived)
        return queryset

    def destroy(self, request, *args, **kwargs):
        obj = self.get_object()
        # The answer's sentence is English, so the labels it lists are too.
        with translation.override("en"):
            history = obj.usage_history()
        if history:
            kept = ", ".join(f"{count:,} {label}" for label, count in history)
            return Response(
                {
                    "detail": (
                        f"{obj.name} has usage history ({kept}): it is archived, not "
                        "deleted, so every report keeps it."
                    ),
                    "archive": request.build_absolute_uri(
                        reverse(f"{self.basename}-archive", kwargs={"slug": obj.slug})
                    ),
                },
                status=status.HTTP_409_CONFLICT,
            )
        return super().destroy(request, *args, **kwargs)

    def _set_archived(self, request, archived: bool):
        model = self.queryset.model
        if not request.user.has_perm(f"pools.change_{model._meta.model_name}"):
            raise PermissionDenied()
        obj = self.get_object()
        if archived != obj.is_archived:
            obj.archived_at = timezone.now() if archived else None
            obj.save(update_fields=["archived_at", "updated_at"])
        return Response(self.get_serializer(obj).data)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def archive(self, request, slug=None):
        """Retire it: hidden from lists, kept with its history in every report."""
        return self._set_archived(request, True)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def restore(self, request, slug=None):
        return self._set_archived(request, False)


@extend_schema_view(list=extend_schema(parameters=[ARCHIVED_PARAMETER]))
class PoolViewSet(ScopedQuerysetMixin, ArchivableViewSet):
    """GPU pools, addressed by slug: those of the caller's teams and the shared ones (a
    fleet-wide caller's: all). ``team`` is the owning team's slug (null: shared);
    ``?team=shared`` lists the shared pools. Writes need the Technical lead role."""

    queryset = Pool.objects.select_related("owner", "gpu_model", "team", "cluster").order_by("name")
    filterset_class = PoolApiFilter
    serializer_class = PoolSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def scope_filter(self, scope):
        return pool_scope_filter(scope)

    def perform_update(self, serializer):
        service_period = serializer.instance.service_period
        pool = serializer.save()
        if pool.service_period != service_period:
            service_period_changed.send(sender=Pool, pool=pool)

    @extend_schema(responses={200: PricePeriodSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)
    def prices(self, request, slug=None):
        """The pool's price periods, oldest first: each hour of a report is costed at the
        period in force in it. ``PATCH`` the pool with ``price_effective_from`` to add one."""
        rows = price_history(self.get_object())
        periods = []
        for row in rows:
            period = row["period"]
            period.effective_until = row["effective_until"]
            periods.append(period)
        return Response(PricePeriodSerializer(periods, many=True).data)


@extend_schema_view(list=extend_schema(parameters=[ARCHIVED_PARAMETER]))
class WorkloadViewSet(ScopedQuerysetMixin, ArchivableViewSet):
    """Workloads, addressed by slug; ``pool`` is the pool's slug, ``team`` the running
    team's (null: the pool's team). The caller sees the workloads of their teams and the
    shared ones; ``?team=`` filters by the team the workload runs for (its own or its
    pool's; ``shared``: neither has one)."""

    queryset = Workload.objects.with_pool().select_related("team").order_by("name")
    filterset_class = WorkloadApiFilter
    serializer_class = WorkloadSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def scope_filter(self, scope):
        return workload_scope_filter(scope)


class MemoryEstimateView(APIView):
    """Per-GPU memory of a training or inference setup, line by line, in exact bytes.

    Read-only in effect (nothing is stored), so read-only tokens may call it.
    """

    # An estimate changes nothing: let read-only tokens and every role call it.
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=MemoryEstimateRequestSerializer,
        responses={200: MemoryEstimateResponseSerializer},
    )
    def post(self, request):
        request_serializer = MemoryEstimateRequestSerializer(data=request.data)
        request_serializer.is_valid(raise_exception=True)
        try:
            result = run_memory_estimate(request_serializer.validated_data)
        except EstimateError as error:
            raise ValidationError({error.field or "non_field_errors": [str(error)]}) from error
        return Response(MemoryEstimateResponseSerializer(result).data)
