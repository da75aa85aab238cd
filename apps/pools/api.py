from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.outbox import enqueue
from apps.pools.estimate_serializers import (
    MemoryEstimateRequestSerializer,
    MemoryEstimateResponseSerializer,
)
from apps.pools.estimates import EstimateError, run_memory_estimate
from apps.pools.models import Pool, Workload
from apps.pools.serializers import PoolSerializer, WorkloadSerializer
from apps.telemetry.tasks import rollup_pool_history_task


class PoolViewSet(viewsets.ModelViewSet):
    """GPU pools, addressed by slug. Writes need the Technical lead role."""

    queryset = Pool.objects.select_related("owner", "gpu_model").order_by("name")
    filterset_fields = ["purpose", "deployment", "region", "compliance_zone"]
    serializer_class = PoolSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def perform_update(self, serializer):
        service_period = serializer.instance.service_period
        pool = serializer.save()
        if pool.service_period != service_period:
            enqueue(rollup_pool_history_task, pool.pk)


class WorkloadViewSet(viewsets.ModelViewSet):
    """Workloads, addressed by slug; ``pool`` is the pool's slug."""

    queryset = Workload.objects.with_pool().order_by("name")
    filterset_fields = ["kind", "status"]
    serializer_class = WorkloadSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"


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
