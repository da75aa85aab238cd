from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.catalog.models import GpuModel, ModelArchitecture
from apps.clusters.models import Cluster
from apps.core.money import UNIT_PRICE_PLACES, money_text
from apps.core.serializers import SlugReferenceField, StrictModelSerializer, UnitPriceField
from apps.currencies.rates import UsdPrice, missing_rate_data, usd_price, usd_rates_at
from apps.currencies.serializers import MissingRateSerializer
from apps.pools.forms import (
    REQUIRED_COST_FIELDS,
    archived_pool_error,
    pool_team_problem,
    workload_consistency_errors,
)
from apps.pools.models import (
    PRICE_INPUT_FIELDS,
    Deployment,
    Pool,
    PoolPricePeriod,
    Workload,
    service_period_problem,
    workload_team_problem,
)
from apps.pools.prices import PriceStartError, price_start_problem
from apps.pools.scoped import ScopedReferencesMixin, TeamSlugField
from apps.pools.services import save_pool


class PriceLineSerializer(serializers.Serializer):
    label = serializers.CharField()
    usd_per_gpu_hour = UnitPriceField()
    formula = serializers.CharField()


class PoolSerializer(StrictModelSerializer):
    gpu_model = SlugReferenceField(slug_field="slug", queryset=GpuModel.objects.all())
    cluster = SlugReferenceField(
        slug_field="slug",
        queryset=Cluster.objects.all(),
        required=False,
        help_text="The cluster's slug; left out of a create: the `default` cluster.",
    )
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    team = TeamSlugField(help_text="The owning team's slug; null: shared by every team.")
    price_per_hour_usd = serializers.DecimalField(
        max_digits=16,
        decimal_places=4,
        read_only=True,
        help_text="Whole pool, per hour, in the pool's currency (the field keeps its name).",
    )
    price_breakdown = serializers.SerializerMethodField()
    usd_per_gpu_hour = serializers.SerializerMethodField(
        help_text="The effective price (in the pool's currency) converted to USD at this "
        "month's exchange rate; null when that rate is missing (missing_exchange_rate)."
    )
    missing_exchange_rate = serializers.SerializerMethodField(
        help_text="The exchange rate usd_per_gpu_hour needs and no one recorded, or null."
    )
    needs_icp_filing = serializers.BooleanField(read_only=True)
    archived = serializers.BooleanField(
        source="is_archived", read_only=True, help_text="Retired: POST …/restore/ to undo."
    )
    price_effective_from = serializers.DateTimeField(
        write_only=True,
        required=False,
        help_text=(
            "On an update: the whole UTC hour the edited prices take effect from (ISO "
            "8601); default the current hour. The hours before keep their price; a future "
            "hour schedules the change. GET …/prices/ lists the periods."
        ),
    )

    class Meta:
        model = Pool
        fields = [
            "slug",
            "name",
            "purpose",
            "deployment",
            "provider",
            "region",
            "cluster",
            "compliance_zone",
            "needs_icp_filing",
            "gpu_model",
            "gpu_count",
            "gpus_per_node",
            "interconnect",
            "driver_version",
            "cuda_version",
            "framework_versions",
            "owner",
            "team",
            "description",
            "currency",
            "on_demand_price_per_gpu_hour_usd",
            "reserved_price_per_gpu_hour_usd",
            "reserved_term_months",
            "purchase_price_per_gpu_usd",
            "amortisation_months",
            "power_price_per_kwh_usd",
            "pue",
            "operations_per_month_usd",
            "colocation_per_month_usd",
            "timezone",
            "peak_hours",
            "in_service_from",
            "in_service_until",
            "price_effective_from",
            "effective_price_per_gpu_hour_usd",
            "price_per_hour_usd",
            "price_breakdown",
            "usd_per_gpu_hour",
            "missing_exchange_rate",
            "archived",
            "archived_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = [
            "effective_price_per_gpu_hour_usd",
            "archived_at",
            "created_at",
            "updated_at",
        ]

    def _usd_price(self, pool) -> UsdPrice:
        """This month's rates, read once per currency for a whole list."""
        now = timezone.now()
        rates = self.context.setdefault("usd_rates", {})
        if pool.currency not in rates:
            rates[pool.currency] = usd_rates_at({pool.currency}, now)
        return usd_price(pool, now, rates[pool.currency])

    @extend_schema_field(UnitPriceField(allow_null=True))
    def get_usd_per_gpu_hour(self, pool) -> str | None:
        return money_text(self._usd_price(pool).usd, UNIT_PRICE_PLACES)

    @extend_schema_field(MissingRateSerializer(allow_null=True))
    def get_missing_exchange_rate(self, pool) -> dict | None:
        return missing_rate_data(self._usd_price(pool).missing)

    def get_price_breakdown(self, pool) -> list[dict]:
        breakdown = pool.price_breakdown()
        return PriceLineSerializer(breakdown.lines if breakdown else [], many=True).data

    def validate(self, attrs):
        def current(name):
            return attrs.get(name, getattr(self.instance, name, None))

        errors = {}
        gpu_count, gpus_per_node = current("gpu_count"), current("gpus_per_node") or 8
        if gpu_count and gpu_count % gpus_per_node:
            errors["gpu_count"] = f"{gpu_count} GPUs do not fill whole nodes of {gpus_per_node}."
        service_problem = service_period_problem(
            current("in_service_from"), current("in_service_until")
        )
        if service_problem:
            errors["in_service_until"] = service_problem
        if self.instance is not None and "team" in attrs:
            team_problem = pool_team_problem(self.instance, attrs["team"])
            if team_problem:
                errors["team"] = team_problem
        start = attrs.get("price_effective_from")
        if self.instance is not None and start is not None:
            price_problem = price_start_problem(self.instance, start, current("in_service_from"))
            if price_problem:
                errors["price_effective_from"] = price_problem
        deployment = current("deployment")
        for name in REQUIRED_COST_FIELDS.get(deployment, []):
            if current(name) is None:
                errors[name] = (
                    f"Required for a {Deployment(deployment).label.lower()} pool to have an "
                    "effective price."
                )
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def create(self, validated_data):
        validated_data.pop("price_effective_from", None)
        return save_pool(Pool(**validated_data), price_history=True, user=self._user())

    def update(self, instance, validated_data):
        start = validated_data.pop("price_effective_from", None)
        before = Pool(**{name: getattr(instance, name) for name in PRICE_INPUT_FIELDS})
        for name, value in validated_data.items():
            setattr(instance, name, value)
        try:
            return save_pool(
                instance,
                price_history=True,
                prices_from=start,
                prices_before=before,
                user=self._user(),
            )
        except PriceStartError as error:
            raise serializers.ValidationError({"price_effective_from": [str(error)]}) from error

    def _user(self):
        request = self.context.get("request")
        return request.user if request is not None else None


class PricePeriodSerializer(serializers.ModelSerializer):
    """One period of a pool's prices: in force from ``effective_from`` until
    ``effective_until`` (null: the last, in force from then on)."""

    effective_until = serializers.DateTimeField(allow_null=True, read_only=True)
    effective_price_per_gpu_hour_usd = serializers.DecimalField(
        max_digits=12, decimal_places=4, read_only=True, help_text="USD per GPU-hour."
    )
    changed_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = PoolPricePeriod
        fields = [
            "effective_from",
            "effective_until",
            *PRICE_INPUT_FIELDS,
            "effective_price_per_gpu_hour_usd",
            "changed_by",
        ]
        read_only_fields = fields


class WorkloadSerializer(ScopedReferencesMixin, StrictModelSerializer):
    # Pools out of the requesting user's scope are refused as unknown slugs.
    scoped_references = {"pool": Pool.objects.in_scope}

    pool = SlugReferenceField(slug_field="slug", queryset=Pool.objects.all())
    team = TeamSlugField(help_text="The running team's slug; null: the pool's team.")
    model_architecture = SlugReferenceField(
        slug_field="slug",
        queryset=ModelArchitecture.objects.all(),
        allow_null=True,
        required=False,
    )
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    archived = serializers.BooleanField(
        source="is_archived", read_only=True, help_text="Retired: POST …/restore/ to undo."
    )

    class Meta:
        model = Workload
        fields = [
            "slug",
            "name",
            "kind",
            "model_architecture",
            "pool",
            "gpu_count",
            "status",
            "owner",
            "team",
            "description",
            "precision",
            "optimizer",
            "zero_stage",
            "data_parallel",
            "tensor_parallel",
            "pipeline_parallel",
            "sequence_parallel",
            "recompute",
            "micro_batch_size",
            "seq_len",
            "tokens_to_train",
            "expected_mfu",
            "checkpoint_interval_minutes",
            "checkpoint_write_seconds",
            "reference_step_seconds",
            "weight_precision",
            "kv_cache_precision",
            "context_length",
            "concurrent_sequences",
            "inference_tensor_parallel",
            "target_ttft_ms",
            "target_p95_latency_ms",
            "expected_peak_requests_per_second",
            "quantization_validated",
            "k8s_namespace",
            "pod_name_prefix",
            "archived",
            "archived_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["archived_at", "created_at", "updated_at"]

    def validate_pool(self, pool):
        current_pool_id = self.instance.pool_id if self.instance is not None else None
        problem = archived_pool_error(pool, current_pool_id)
        if problem:
            raise serializers.ValidationError(problem)
        return pool

    def validate(self, attrs):
        values = {
            name: attrs.get(name, getattr(self.instance, name, None))
            for name in (
                "pool",
                "gpu_count",
                "kind",
                "data_parallel",
                "tensor_parallel",
                "pipeline_parallel",
                "inference_tensor_parallel",
                "model_architecture",
            )
        }
        errors = {}
        for field, message in workload_consistency_errors(values):
            errors.setdefault(field, message)
        team_problem = workload_team_problem(
            attrs.get("team", getattr(self.instance, "team", None)), values["pool"]
        )
        if team_problem and ("team" in attrs or "pool" in attrs):
            errors.setdefault("team", team_problem)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs
