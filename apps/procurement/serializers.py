"""Scenarios as the read API shows them, and ``POST /api/v1/estimates/capacity-mix/``."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.bounds import BOUNDS
from apps.core.serializers import (
    BoundedSerializerMixin,
    MoneyField,
    PlainFloatField,
    PlainIntegerField,
    StrictFloatField,
    UnitPriceField,
)
from apps.procurement.models import OptionRegionRtt, Scenario, ScenarioOption, UserRegion

# Bounds that keep the curve (one cost per whole baseline GPU) and the sums finite.
MAX_HOURS = 100_000
MAX_GPUS_PER_HOUR = 100_000
MAX_PRICE = 1_000_000
# r ÷ o, the break-even, stays finite: 5e-324 USD would make it infinity, which JSON
# cannot carry. A millionth of a dollar per GPU-hour is below any real price.
MIN_ON_DEMAND_PRICE = 1e-6


class CapacityMixRequestSerializer(serializers.Serializer):
    hourly_demand_gpus = serializers.ListField(
        child=StrictFloatField(min_value=0, max_value=MAX_GPUS_PER_HOUR),
        min_length=1,
        max_length=MAX_HOURS,
        help_text="GPUs needed in each hour, d_h (fractions allowed).",
    )
    reserved_price_per_gpu_hour = StrictFloatField(
        min_value=0,
        max_value=MAX_PRICE,
        help_text="r: reserved (or owned) price per GPU-hour, paid every hour.",
    )
    on_demand_price_per_gpu_hour = StrictFloatField(
        min_value=MIN_ON_DEMAND_PRICE,
        max_value=MAX_PRICE,
        help_text="o: on-demand price per GPU-hour, paid for the hours used; at least "
        "0.000001 (r ÷ o is the break-even).",
    )


class CapacityMixResponseSerializer(serializers.Serializer):
    optimal_reserved_gpus = serializers.IntegerField(
        help_text="R minimising Cost(R): the (1 − r/o) quantile of hourly demand."
    )
    total_cost = MoneyField(help_text="Cost at the optimum, R·r·H + o·Σ burst.")
    cost_by_reserved_gpus = serializers.ListField(
        child=MoneyField(),
        help_text="Cost(R) for R = 0, 1, … ⌈max demand⌉ (index = reserved GPUs).",
    )
    break_even_utilization = serializers.FloatField(help_text="r ÷ o.")
    hours = serializers.IntegerField(help_text="H, the hours given.")


class OptionResultSerializer(serializers.Serializer):
    throughput_ratio = serializers.FloatField(source="spec.throughput_ratio")
    peak_gpus = serializers.IntegerField()
    baseline_gpus = serializers.IntegerField()
    optimal_baseline_gpus = serializers.IntegerField(allow_null=True)
    paid_gpu_hours = serializers.FloatField()
    burst_gpu_hours = serializers.FloatField()
    cost = serializers.DictField(
        source="cost.as_dict",
        child=MoneyField(),
        help_text="compute, power, storage, network, operations and total, over the horizon.",
    )
    cost_per_effective_gpu_hour = UnitPriceField(allow_null=True)
    cost_per_million_tokens = UnitPriceField(allow_null=True)
    cost_per_thousand_requests = UnitPriceField(allow_null=True)
    paid_utilization = serializers.FloatField(allow_null=True)
    break_even_utilization = serializers.FloatField(allow_null=True)
    notes = serializers.ListField(child=serializers.CharField())


class UserRegionSerializer(serializers.ModelSerializer):
    class Meta:
        model = UserRegion
        fields = ["name", "max_rtt_ms"]
        read_only_fields = fields


class OptionRttSerializer(serializers.ModelSerializer):
    region = serializers.CharField(source="region.name", read_only=True)

    class Meta:
        model = OptionRegionRtt
        fields = ["region", "rtt_ms"]
        read_only_fields = fields


class MissSerializer(serializers.Serializer):
    criterion = serializers.CharField(
        help_text="ddos, line_type, icp_filing, ip_addresses or rtt:<user region>."
    )
    message = serializers.CharField(help_text="Which requirement and by how much.")
    not_stated = serializers.BooleanField(help_text="The option does not state the criterion.")


class OptionSerializer(serializers.ModelSerializer):
    gpu_model = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    source_pool = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    needs_icp_filing = serializers.BooleanField(read_only=True)
    rtts = OptionRttSerializer(
        many=True, read_only=True, help_text="Round-trip time from each user region (ms)."
    )

    class Meta:
        model = ScenarioOption
        fields = [
            "id",
            "position",
            "name",
            "kind",
            "provider",
            "region",
            "compliance_zone",
            "needs_icp_filing",
            "gpu_model",
            "source_pool",
            "price_note",
            "on_demand_price_per_gpu_hour",
            "reserved_price_per_gpu_hour",
            "reserved_upfront_per_gpu",
            "reserved_term_months",
            "purchase_price_per_gpu",
            "amortisation_months",
            "power_price_per_kwh",
            "pue",
            "colocation_per_gpu_month",
            "operations_per_month",
            "storage_per_month",
            "network_per_month",
            "hybrid_baseline",
            "baseline_gpus",
            "throughput_basis",
            "efficiency",
            "ddos_protection_gbps",
            "line_type",
            "ip_address_count",
            "rtts",
        ]
        read_only_fields = fields


class ScenarioSerializer(serializers.ModelSerializer):
    exchange_rate_in_use = serializers.DecimalField(
        source="exchange_rate",
        max_digits=24,
        decimal_places=10,
        read_only=True,
        allow_null=True,
        help_text="Units of `currency` per USD the comparison uses: usd_exchange_rate when "
        "typed, else the exchange rates' latest month up to now; null: none recorded.",
    )
    exchange_rate_source = serializers.CharField(
        read_only=True, help_text="Where exchange_rate_in_use comes from."
    )
    team = serializers.SlugRelatedField(
        slug_field="slug",
        read_only=True,
        allow_null=True,
        help_text="The team's slug; null: shared by every team.",
    )
    demand_pool = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    demand_workload = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True
    )
    reference_gpu_model = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True
    )
    model_architecture = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True
    )
    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    accepted_line_types = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="Empty: any line type."
    )
    user_regions = UserRegionSerializer(
        many=True, read_only=True, help_text="Where the users are and the RTT each accepts."
    )

    class Meta:
        model = Scenario
        fields = [
            "slug",
            "name",
            "description",
            "team",
            "horizon_months",
            "currency",
            "usd_exchange_rate",
            "exchange_rate_in_use",
            "exchange_rate_source",
            "demand_source",
            "demand_pool",
            "demand_workload",
            "window_days",
            "entered_gpu_hours_per_month",
            "entered_hourly_profile",
            "reference_gpu_model",
            "reference_efficiency",
            "compute_precision",
            "model_architecture",
            "training_tokens",
            "training_gpus",
            "min_ddos_protection_gbps",
            "accepted_line_types",
            "no_icp_filing",
            "min_ip_address_count",
            "user_regions",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class PriceUsedSerializer(serializers.Serializer):
    label = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    unit = serializers.CharField()
    source = serializers.CharField(help_text="Typed on the option, or which pool it came from.")


class ThroughputUsedSerializer(serializers.Serializer):
    source = serializers.ChoiceField(
        choices=["pilot", "estimate"],
        help_text="pilot: measured on both GPU models by the demand workload's pilots; "
        "estimate: the option's throughput basis × efficiency.",
    )
    explanation = serializers.CharField(help_text="Which pilots, or which basis and why.")
    option_pilot = serializers.IntegerField(
        source="option_pilot.pk", allow_null=True, help_text="Pilot result id on the option's GPU."
    )
    reference_pilot = serializers.IntegerField(
        source="reference_pilot.pk",
        allow_null=True,
        help_text="Pilot result id on the reference GPU.",
    )
    option_output_tokens_per_second_per_gpu = serializers.FloatField(
        source="option_pilot.output_tokens_per_second_per_gpu", allow_null=True
    )
    reference_output_tokens_per_second_per_gpu = serializers.FloatField(
        source="reference_pilot.output_tokens_per_second_per_gpu", allow_null=True
    )


class OptionLineSerializer(serializers.Serializer):
    option = OptionSerializer()
    result = OptionResultSerializer(allow_null=True)
    throughput = ThroughputUsedSerializer(
        allow_null=True, help_text="How the throughput ratio was found (null: no demand yet)."
    )
    problem = serializers.CharField(help_text="Why the option could not be costed, or empty.")
    prices_used = PriceUsedSerializer(
        many=True, help_text="Every price the option was costed with, as the exports print them."
    )
    misses = MissSerializer(
        many=True, help_text="Every scenario requirement the option misses (empty: meets all)."
    )
    meets_requirements = serializers.BooleanField()


def _range(name):
    bound = BOUNDS[name]
    return {"min_value": bound.minimum, "max_value": bound.maximum}


class WhatIfQuerySerializer(BoundedSerializerMixin, serializers.Serializer):
    """The scenario page's "What if…" inputs as query parameters: the comparison is
    computed with them, nothing is saved. Ranges from apps/core/bounds.py."""

    horizon_months = PlainIntegerField(required=False, **_range("horizon_months"))
    window_days = PlainIntegerField(required=False, **_range("window_days"))
    reference_efficiency = PlainFloatField(
        required=False, help_text="0.01–1.", **_range("reference_efficiency")
    )
    entered_gpu_hours_per_month = PlainFloatField(
        required=False,
        help_text="Reference GPU-hours per month.",
        **_range("entered_gpu_hours_per_month"),
    )


class DemandSummarySerializer(serializers.Serializer):
    source = serializers.CharField()
    reference_gpu_model = serializers.CharField(allow_null=True)
    hours = serializers.IntegerField()
    peak_reference_gpus = serializers.FloatField(allow_null=True)
    mean_reference_gpus = serializers.FloatField(allow_null=True)
    reference_gpu_hours = serializers.FloatField(
        allow_null=True, help_text="Work over the horizon."
    )
    fallback_used = serializers.BooleanField()
    empty_message = serializers.CharField()
    notes = serializers.ListField(child=serializers.CharField())


class ComparisonSerializer(serializers.Serializer):
    demand = DemandSummarySerializer()
    recommendation = serializers.CharField(allow_null=True)
    reasons = serializers.ListField(child=serializers.CharField())
    options = OptionLineSerializer(many=True)


class WhatIfAppliedSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.JSONField(help_text="The value the comparison used.")
    saved = serializers.JSONField(help_text="The value saved on the scenario.")


class ScenarioDetailSerializer(ScenarioSerializer):
    """A scenario and its comparison. With what-if query parameters the scenario's fields
    and the comparison show the what-if values, and ``what_if_applied`` lists each with
    the saved value it replaced."""

    comparison = serializers.SerializerMethodField()
    what_if_applied = serializers.SerializerMethodField()

    class Meta(ScenarioSerializer.Meta):
        fields = [*ScenarioSerializer.Meta.fields, "what_if_applied", "comparison"]
        read_only_fields = fields

    @extend_schema_field(WhatIfAppliedSerializer(many=True))
    def get_what_if_applied(self, scenario):
        from apps.procurement.comparison.what_if import json_value

        saved = getattr(scenario, "what_if_saved", {})
        return WhatIfAppliedSerializer(
            [
                {
                    "name": name,
                    "value": json_value(getattr(scenario, name)),
                    "saved": json_value(value),
                }
                for name, value in saved.items()
            ],
            many=True,
        ).data

    @extend_schema_field(ComparisonSerializer)
    def get_comparison(self, scenario):
        from apps.procurement.comparison.options import prices_used
        from apps.procurement.comparison.services import build_comparison

        result = build_comparison(scenario)
        demand, info = result.demand, result.info
        payload = {
            "demand": {
                "source": info.source_label,
                "reference_gpu_model": info.reference_gpu.slug if info.reference_gpu else None,
                "hours": info.hours,
                "peak_reference_gpus": demand.peak if demand else None,
                "mean_reference_gpus": demand.mean if demand else None,
                "reference_gpu_hours": demand.reference_gpu_hours if demand else None,
                "fallback_used": info.fallback_used,
                "empty_message": info.empty_message,
                "notes": info.notes,
            },
            "recommendation": result.comparison.recommendation if result.comparison else None,
            "reasons": list(result.comparison.reasons) if result.comparison else [],
            "options": [
                {
                    "option": row.option,
                    "result": row.result,
                    "throughput": row.throughput,
                    "problem": row.problem,
                    "prices_used": prices_used(scenario, row),
                    "misses": [miss.as_dict() for miss in row.misses],
                    "meets_requirements": row.meets_requirements,
                }
                for row in result.rows
            ],
        }
        return ComparisonSerializer(payload).data
