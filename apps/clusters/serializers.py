from apps.clusters.models import Cluster
from apps.core.serializers import StrictModelSerializer


class ClusterSerializer(StrictModelSerializer):
    class Meta:
        model = Cluster
        fields = [
            "slug",
            "name",
            "kind",
            "region",
            "timezone",
            "description",
            "slurm_pull_enabled",
            "slurm_pull_interval_minutes",
            "archived_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["archived_at", "created_at", "updated_at"]
