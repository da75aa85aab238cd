from rest_framework import viewsets

from apps.clusters.models import Cluster
from apps.clusters.serializers import ClusterSerializer


class ClusterViewSet(viewsets.ModelViewSet):
    """Clusters (Kubernetes, Slurm, cloud or other), addressed by slug; each owns pools,
    pull sources and Slurm imports. Every caller reads them; writes need the Technical
    lead role. A cluster that still owns pools, pull sources or Slurm jobs cannot be
    deleted (409)."""

    queryset = Cluster.objects.order_by("name")
    serializer_class = ClusterSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"
    filterset_fields = ["kind"]
