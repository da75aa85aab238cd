from rest_framework import serializers

from apps.clusters.models import Cluster
from apps.core.serializers import StrictModelSerializer


class ClusterSerializer(StrictModelSerializer):
    pool_count = serializers.IntegerField(read_only=True, help_text="Pools in the cluster.")

    class Meta:
        model = Cluster
        fields = [
            "slug",
            "name",
            "kind",
            "region",
            "timezone",
            "description",
            "archived_at",
            "pool_count",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["archived_at", "created_at", "updated_at"]
