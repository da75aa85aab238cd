import re

from django.utils import timezone
from rest_framework import serializers

from apps.accounts.models import Team
from apps.accounts.scope import scope_of
from apps.alerts import registry, services
from apps.alerts.forms import may_manage_fleet_wide, teams_of
from apps.alerts.models import (
    KIND_CHOICES,
    Alert,
    AlertChannel,
    AlertRule,
    Silence,
    channel_errors,
    masked_url,
    rule_errors,
    silence_errors,
)
from apps.core.serializers import SlugReferenceField, StrictCharField, StrictModelSerializer
from apps.pools.models import Pool, Workload

LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _request_user(serializer):
    """The user whose scope limits the choices, or None while the schema is drawn (its
    user is not saved)."""
    request = serializer.context.get("request")
    user = getattr(request, "user", None)
    return user if user is not None and user.pk else None


class OptionalSlugReference(SlugReferenceField):
    """A slug or null; DRF would read "" as null, which the schema does not admit."""

    def run_validation(self, data=serializers.empty):
        if data == "":
            self.fail("does_not_exist", slug_name=self.slug_field, value="")
        return super().run_validation(data)


def _optional_slug(queryset, help_text):
    return OptionalSlugReference(
        slug_field="slug", queryset=queryset, allow_null=True, required=False, help_text=help_text
    )


class TeamScopedSerializerMixin:
    """``team`` takes the slug of one of the user's teams (any team for fleet-wide users);
    null (fleet-wide) only for those who may manage fleet-wide objects."""

    def get_fields(self):
        fields = super().get_fields()
        user = _request_user(self)
        if user is not None and "team" in fields:
            fields["team"].queryset = teams_of(user)
        return fields

    def _value(self, attrs, name):
        if name in attrs:
            return attrs[name]
        return getattr(self.instance, name) if self.instance is not None else None

    def validate(self, attrs):
        attrs = super().validate(attrs)
        request = self.context["request"]
        if self._value(attrs, "team") is None and not may_manage_fleet_wide(request.user):
            mine = ", ".join(teams_of(request.user).values_list("slug", flat=True)) or "none"
            raise serializers.ValidationError(
                {
                    "team": [
                        "Fleet-wide (no team) is for administrators: give one of your teams "
                        f"({mine})."
                    ]
                }
            )
        return attrs


class AlertChannelSerializer(TeamScopedSerializerMixin, StrictModelSerializer):
    team = _optional_slug(Team.objects.none(), "The team whose rules may use it; null: every rule.")

    class Meta:
        model = AlertChannel
        fields = [
            "slug",
            "name",
            "kind",
            "url",
            "to",
            "language",
            "team",
            "enabled",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]
        extra_kwargs = {
            "url": {
                "help_text": "webhook and slack: where to POST. Shown with its path held back "
                "to those who may not change channels."
            },
            "to": {"help_text": "email: addresses separated by commas."},
        }

    def to_representation(self, instance):
        data = super().to_representation(instance)
        user = _request_user(self)
        if user is None or not user.has_perm("alerts.change_alertchannel"):
            data["url"] = masked_url(instance.url)
        return data

    def validate(self, attrs):
        attrs = super().validate(attrs)
        errors = channel_errors(
            kind=self._value(attrs, "kind"),
            url=self._value(attrs, "url") or "",
            to=self._value(attrs, "to") or "",
        )
        if errors:
            raise serializers.ValidationError({name: [message] for name, message in errors.items()})
        return attrs


class AlertRuleSerializer(TeamScopedSerializerMixin, StrictModelSerializer):
    kind = serializers.ChoiceField(
        choices=KIND_CHOICES,
        help_text="budget: a budget's share used this month reaches threshold_pct (50, 75, "
        "90 or 100). dollars_at_risk: a training workload's dollars at risk (GPUs × price "
        "per GPU-hour × hours since its newest proven checkpoint) exceed threshold_usd.",
    )
    channel = SlugReferenceField(slug_field="slug", queryset=AlertChannel.objects.none())
    team = _optional_slug(
        Team.objects.none(),
        "A team's rule looks at its pools and workloads and the shared ones; null: the "
        "whole fleet.",
    )
    pool = _optional_slug(Pool.objects.none(), "Only this pool.")
    workload = _optional_slug(Workload.objects.none(), "Only this workload.")
    firing_count = serializers.IntegerField(read_only=True, help_text="Its alerts firing now.")

    class Meta:
        model = AlertRule
        fields = [
            "slug",
            "name",
            "kind",
            "channel",
            "threshold_usd",
            "threshold_pct",
            "window_hours",
            "stale_minutes",
            "team",
            "pool",
            "workload",
            "enabled",
            "firing_count",
            "last_evaluated_at",
            "last_error",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["last_evaluated_at", "last_error", "created_at", "updated_at"]

    def get_fields(self):
        fields = super().get_fields()
        user = _request_user(self)
        if user is not None:
            scope = scope_of(user)
            fields["channel"].queryset = AlertChannel.objects.in_scope(scope)
            fields["pool"].queryset = Pool.objects.active().in_scope(scope)
            fields["workload"].queryset = Workload.objects.active().in_scope(scope)
        return fields

    def to_representation(self, instance):
        if not hasattr(instance, "firing_count"):
            instance.firing_count = instance.alerts.filter(status=Alert.Status.FIRING).count()
        return super().to_representation(instance)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        errors = rule_errors(
            kind=self._value(attrs, "kind"),
            thresholds={name: self._value(attrs, name) for name in registry.THRESHOLD_FIELDS},
            channel=self._value(attrs, "channel"),
            team=self._value(attrs, "team"),
            pool=self._value(attrs, "pool"),
            workload=self._value(attrs, "workload"),
        )
        if errors:
            raise serializers.ValidationError({name: [message] for name, message in errors.items()})
        return attrs

    def create(self, validated_data):
        rule = AlertRule(**validated_data, created_by=self.context["request"].user)
        return services.save_rule(rule)

    def update(self, instance, validated_data):
        for name, value in validated_data.items():
            setattr(instance, name, value)
        return services.save_rule(instance)


class AlertSerializer(serializers.ModelSerializer):
    rule = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    labels = serializers.DictField(child=serializers.CharField(), read_only=True)
    annotations = serializers.DictField(
        child=serializers.CharField(),
        read_only=True,
        help_text="summary and description, in English.",
    )

    class Meta:
        model = Alert
        fields = [
            "id",
            "rule",
            "rule_name",
            "kind",
            "severity",
            "status",
            "fingerprint",
            "labels",
            "annotations",
            "starts_at",
            "ends_at",
        ]
        read_only_fields = fields


class SilenceSerializer(TeamScopedSerializerMixin, StrictModelSerializer):
    rule = _optional_slug(
        AlertRule.objects.none(), "Every alert of this rule; its team is the silence's."
    )
    team = _optional_slug(Team.objects.none(), "Silences only this team's rules; null: every rule.")
    matchers = serializers.DictField(
        child=StrictCharField(max_length=200),
        required=False,
        help_text='Label → value, e.g. {"pool": "infer-h100"}: an alert is silenced when '
        "its labels hold them all.",
    )
    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    active = serializers.SerializerMethodField()

    class Meta:
        model = Silence
        fields = [
            "id",
            "rule",
            "matchers",
            "team",
            "starts_at",
            "ends_at",
            "comment",
            "created_by",
            "active",
            "created_at",
        ]
        read_only_fields = ["created_at"]

    def get_fields(self):
        fields = super().get_fields()
        user = _request_user(self)
        if user is not None:
            rules = AlertRule.objects.in_scope(scope_of(user))
            if not may_manage_fleet_wide(user):
                rules = rules.filter(team__isnull=False)
            fields["rule"].queryset = rules
        return fields

    def get_active(self, silence) -> bool:
        return silence.is_active()

    def validate_matchers(self, matchers):
        for name in matchers:
            if not LABEL_NAME.fullmatch(name):
                raise serializers.ValidationError(
                    f"“{name}” is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)."
                )
        return matchers

    def validate(self, attrs):
        rule = self._value(attrs, "rule")
        if rule is not None and "team" not in attrs and self.instance is None:
            attrs["team"] = rule.team  # a rule's silence is the rule's team's
        attrs = super().validate(attrs)
        errors = silence_errors(
            rule=rule,
            matchers=self._value(attrs, "matchers") or {},
            team=self._value(attrs, "team"),
            starts_at=self._value(attrs, "starts_at"),
            ends_at=self._value(attrs, "ends_at"),
            now=timezone.now() if self.instance is None else None,
        )
        if errors:
            raise serializers.ValidationError({name: [message] for name, message in errors.items()})
        return attrs

    def create(self, validated_data):
        return Silence.objects.create(**validated_data, created_by=self.context["request"].user)
