from django.utils import translation
from rest_framework import status, viewsets
from rest_framework.response import Response

from apps.clusters.models import Cluster
from apps.clusters.serializers import ClusterSerializer
from apps.clusters.views import default_cluster_stays, usage_history


class ClusterViewSet(viewsets.ModelViewSet):
    """Clusters (Kubernetes, Slurm, cloud or other), addressed by slug; each owns pools,
    pull sources and Slurm imports. Every caller reads them; writes need the Technical
    lead role. The default cluster, and a cluster that still owns pools or pull sources
    or has Slurm history (jobs, imports, pulls, mapping rules), cannot be deleted (409)."""

    queryset = Cluster.objects.order_by("name")
    serializer_class = ClusterSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"
    filterset_fields = ["kind"]

    def destroy(self, request, *args, **kwargs):
        cluster = self.get_object()
        with translation.override("en"):
            if cluster.is_default:
                detail = default_cluster_stays()
            else:
                history = usage_history(cluster)
                kept = ", ".join(f"{count:,} {label}" for label, count in history)
                detail = history and f"{cluster.name} has history ({kept}): archive it instead."
        if detail:
            return Response({"detail": detail}, status=status.HTTP_409_CONFLICT)
        return super().destroy(request, *args, **kwargs)
