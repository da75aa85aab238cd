from rest_framework import viewsets

from apps.pools.models import Pool, Workload
from apps.pools.serializers import PoolSerializer, WorkloadSerializer


class PoolViewSet(viewsets.ModelViewSet):
    """GPU pools, addressed by slug. Writes need the Technical lead role."""

    queryset = Pool.objects.select_related("owner")
    serializer_class = PoolSerializer
    lookup_field = "slug"


class WorkloadViewSet(viewsets.ModelViewSet):
    """Workloads, addressed by slug; ``pool`` is the pool's slug."""

    queryset = Workload.objects.with_pool()
    serializer_class = WorkloadSerializer
    lookup_field = "slug"
