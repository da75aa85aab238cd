from rest_framework import serializers

from apps.pools.models import Pool, Workload


class PoolSerializer(serializers.ModelSerializer):
    price_per_hour_usd = serializers.DecimalField(max_digits=16, decimal_places=4, read_only=True)
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Pool
        fields = [
            "slug",
            "name",
            "purpose",
            "deployment",
            "provider",
            "region",
            "gpu_model_name",
            "gpu_count",
            "gpus_per_node",
            "price_per_gpu_hour_usd",
            "price_per_hour_usd",
            "owner",
            "description",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]

    def validate(self, attrs):
        gpu_count = attrs.get("gpu_count", getattr(self.instance, "gpu_count", None))
        gpus_per_node = attrs.get("gpus_per_node", getattr(self.instance, "gpus_per_node", 8))
        if gpu_count and gpus_per_node and gpu_count % gpus_per_node:
            raise serializers.ValidationError(
                {"gpu_count": f"{gpu_count} GPUs do not fill whole nodes of {gpus_per_node}."}
            )
        return attrs


class WorkloadSerializer(serializers.ModelSerializer):
    pool = serializers.SlugRelatedField(slug_field="slug", queryset=Pool.objects.all())
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Workload
        fields = [
            "slug",
            "name",
            "kind",
            "pool",
            "gpu_count",
            "status",
            "owner",
            "description",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]
