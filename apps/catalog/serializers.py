from rest_framework import serializers

from apps.catalog.models import GpuModel, ModelArchitecture
from apps.core.serializers import StrictModelSerializer


class GpuModelSerializer(StrictModelSerializer):
    memory_bytes = serializers.IntegerField(read_only=True, help_text="memory_gb × 10⁹.")

    class Meta:
        model = GpuModel
        fields = [
            "slug",
            "name",
            "vendor",
            "memory_gb",
            "memory_bytes",
            "memory_type",
            "memory_bandwidth_gb_per_second",
            "bf16_dense_tflops",
            "fp16_dense_tflops",
            "fp8_dense_tflops",
            "int8_dense_tops",
            "tdp_watts",
            "interconnect",
            "interconnect_gb_per_second",
            "mig_support",
            "mig_compute_slices",
            "reference_price_per_gpu_hour_usd",
            "source_note",
        ]


class ModelArchitectureSerializer(StrictModelSerializer):
    total_params = serializers.IntegerField(read_only=True, help_text="Counted from the shape.")
    active_params = serializers.IntegerField(
        read_only=True, help_text="Used per token (below total for mixture-of-experts)."
    )

    class Meta:
        model = ModelArchitecture
        fields = [
            "slug",
            "name",
            "family",
            "layers",
            "hidden_size",
            "intermediate_size",
            "attention_heads",
            "kv_heads",
            "head_dim",
            "vocab_size",
            "max_context",
            "experts",
            "experts_per_token",
            "tied_embeddings",
            "qkv_bias",
            "total_params",
            "active_params",
            "published_params",
            "source_note",
        ]

    def validate(self, attrs):
        def current(name):
            return attrs.get(name, getattr(self.instance, name, None))

        errors = {}
        heads, kv_heads = current("attention_heads"), current("kv_heads")
        if heads and kv_heads and heads % kv_heads:
            errors["kv_heads"] = f"{kv_heads} KV heads must divide {heads} attention heads."
        experts, per_token = current("experts") or 1, current("experts_per_token") or 1
        if per_token > experts:
            errors["experts_per_token"] = f"Cannot route to {per_token} of {experts} experts."
        if errors:
            raise serializers.ValidationError(errors)
        return attrs
