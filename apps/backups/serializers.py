from django.db import transaction
from rest_framework import serializers

from apps.backups import services
from apps.backups.models import (
    BackupPolicy,
    BackupVersion,
    RestoreDrill,
    version_name,
    version_name_clash,
    version_rule_errors,
)
from apps.backups.validators import checksum_error
from apps.core.serializers import (
    SlugReferenceField,
    StrictCharField,
    StrictFloatField,
    StrictModelSerializer,
)
from apps.pools.models import Workload
from apps.pools.scoped import ScopedReferencesMixin


class ChecksumSerializer(serializers.Serializer):
    node = StrictCharField(max_length=100, help_text="Node or replica, e.g. node-03/rank-24.")
    checksum = StrictCharField(
        max_length=128, help_text="Lowercase hex, as long as the version's algorithm makes it."
    )


class ChecksumListSerializer(serializers.Serializer):
    checksums = ChecksumSerializer(many=True, allow_empty=False)


def checksum_list_errors(pairs, algorithm) -> dict | None:
    errors, seen = {}, set()
    for index, pair in enumerate(pairs):
        problem = checksum_error(pair["checksum"], algorithm)
        if problem is None and pair["node"] in seen:
            problem = f"{pair['node']} is listed twice."
        seen.add(pair["node"])
        if problem:
            errors[index] = {"checksum": [problem]}
    return {"checksums": errors} if errors else None


class BackupVersionSerializer(ScopedReferencesMixin, StrictModelSerializer):
    # A workload out of the requesting user's scope is refused as an unknown slug.
    scoped_references = {"workload": Workload.objects.in_scope}

    workload = SlugReferenceField(slug_field="slug", queryset=Workload.objects.all())
    checksums = ChecksumSerializer(
        many=True,
        required=False,
        help_text="Per node or replica. On create, the initial set; on update, replaces it.",
    )
    registered_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = BackupVersion
        fields = [
            "id",
            "workload",
            "kind",
            "name",
            "model_name",
            "data_version",
            "precision",
            "config_hash",
            "step",
            "tag",
            "tier",
            "location",
            "size_bytes",
            "created_at",
            "checksum_algorithm",
            "checksums",
            "stable_since",
            "gray_ratio_percent",
            "rollback_steps",
            "validation_results",
            "release_owner",
            "purged_at",
            "registered_by",
            "registered_at",
        ]
        read_only_fields = ["name", "stable_since", "registered_at"]
        validators = []  # the name's uniqueness is checked in validate(), once it is made

    def validate(self, attrs):
        def current(name, default=None):
            return attrs.get(name, getattr(self.instance, name, default))

        workload = current("workload")
        errors = version_rule_errors(
            workload=workload,
            kind=current("kind"),
            precision=current("precision"),
            data_version=current("data_version"),
        )
        if "checksums" in attrs:
            checksum_errors = checksum_list_errors(
                attrs["checksums"], current("checksum_algorithm", "sha256")
            )
            if checksum_errors:
                errors.update(checksum_errors)
        elif self.instance is not None and "checksum_algorithm" in attrs:
            stored = [
                {"node": row.node, "checksum": row.checksum}
                for row in self.instance.checksums.all()
            ]
            if checksum_list_errors(stored, attrs["checksum_algorithm"]):
                errors["checksum_algorithm"] = (
                    "The stored checksums are not of this algorithm: send them again with it."
                )
        if errors:
            raise serializers.ValidationError(errors)
        if workload is not None:
            name = version_name(
                model_name=current("model_name"),
                precision=current("precision"),
                data_version=current("data_version", ""),
                config_hash=current("config_hash"),
                step=current("step"),
                tag=current("tag", ""),
            )
            clash = version_name_clash(
                workload, name, exclude_pk=self.instance.pk if self.instance else None
            )
            if clash:
                raise serializers.ValidationError({"name": clash})
        return attrs

    @transaction.atomic
    def create(self, validated_data):
        checksums = validated_data.pop("checksums", None)
        version = BackupVersion(**validated_data)
        request = self.context.get("request")
        return services.save_version(
            version,
            checksums=[(c["node"], c["checksum"]) for c in checksums] if checksums else None,
            user=request.user if request else None,
        )

    @transaction.atomic
    def update(self, instance, validated_data):
        checksums = validated_data.pop("checksums", None)
        for name, value in validated_data.items():
            setattr(instance, name, value)
        return services.save_version(
            instance,
            checksums=[(c["node"], c["checksum"]) for c in checksums]
            if checksums is not None
            else None,
        )


class BackupPolicySerializer(StrictModelSerializer):
    workload = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    coverage_summary = serializers.SerializerMethodField()
    coverage_gaps = serializers.SerializerMethodField()
    is_overdue = serializers.SerializerMethodField()
    last_drill_verdict = serializers.SerializerMethodField(
        help_text="passed, failed or not_verified; null when never drilled."
    )

    class Meta:
        model = BackupPolicy
        fields = [
            "workload",
            "covered_items",
            "coverage_percent",
            "coverage_summary",
            "coverage_gaps",
            "current_data_version",
            "hot_location",
            "hot_retention_count",
            "hot_retention_days",
            "hot_price_per_gb_month_usd",
            "warm_location",
            "warm_retention_count",
            "warm_retention_days",
            "warm_price_per_gb_month_usd",
            "cold_location",
            "cold_retention_count",
            "cold_retention_days",
            "cold_price_per_gb_month_usd",
            "rpo_minutes",
            "rto_minutes",
            "drill_frequency_days",
            "drill_retry_interval_days",
            "mtbf_hours",
            "checkpoint_size_gb",
            "last_drill_at",
            "last_drill_passed",
            "last_drill_verdict",
            "drill_due_at",
            "is_overdue",
        ]
        read_only_fields = fields

    def get_coverage_summary(self, policy) -> str:
        return policy.coverage().summary

    def get_coverage_gaps(self, policy) -> list[str]:
        return policy.coverage().gaps()

    def get_is_overdue(self, policy) -> bool:
        return policy.is_overdue_at()

    def get_last_drill_verdict(self, policy) -> str | None:
        return policy.last_drill_verdict


class ChecksumMismatchSerializer(serializers.Serializer):
    node = serializers.CharField()
    expected = serializers.CharField(allow_null=True)
    observed = serializers.CharField(allow_null=True)


class RestoreDrillSerializer(serializers.ModelSerializer):
    workload = serializers.SlugRelatedField(
        source="policy.workload", slug_field="slug", read_only=True
    )
    version = serializers.PrimaryKeyRelatedField(read_only=True)
    performed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    checksum_mismatches = ChecksumMismatchSerializer(many=True, read_only=True)
    checksums_unverified = ChecksumMismatchSerializer(
        many=True,
        read_only=True,
        help_text="Nodes whose checksum is null on one side: neither a match nor a mismatch.",
    )
    checksum_summary = serializers.CharField(read_only=True)
    failure_reasons = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = RestoreDrill
        fields = [
            "id",
            "workload",
            "version",
            "restored_from_tier",
            "performed_by",
            "started_at",
            "finished_at",
            "reference_time",
            "resumed",
            "outcome",
            "actual_rto_seconds",
            "rto_target_minutes",
            "actual_rpo_seconds",
            "rpo_target_minutes",
            "checksums_compared",
            "checksums_matched",
            "checksum_mismatches",
            "checksums_unverified",
            "checksum_summary",
            "verdict",
            "passed",
            "failure_reasons",
            "notes",
        ]
        read_only_fields = fields


class CheckpointIntervalRequestSerializer(serializers.Serializer):
    # Bounded so √(2·C·M) stays a finite float; a century is far past any real job.
    checkpoint_write_seconds = StrictFloatField(
        min_value=0.001, max_value=3.2e9, help_text="C: how long one checkpoint takes to write."
    )
    mtbf_seconds = StrictFloatField(
        min_value=0.001, max_value=3.2e9, help_text="M: mean time between failures of the job."
    )
    restart_seconds = StrictFloatField(
        min_value=0,
        max_value=3.2e9,
        required=False,
        default=0.0,
        help_text="R: time to restart after a failure (adds R/M to the time lost).",
    )


class CheckpointIntervalResponseSerializer(serializers.Serializer):
    young_seconds = serializers.FloatField(help_text="√(2·C·M), Young 1974.")
    daly_seconds = serializers.FloatField(help_text="Daly 2006's higher-order optimum.")
    expected_lost_fraction = serializers.FloatField(
        help_text="C/τ + τ/(2M) + R/M at Daly's τ, capped at 1."
    )
