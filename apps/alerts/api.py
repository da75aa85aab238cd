import django_filters
from django.db.models import Count, Q
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from apps.accounts.scope import scope_of
from apps.alerts import services
from apps.alerts.forms import may_manage_fleet_wide
from apps.alerts.models import Alert, AlertChannel, AlertRule, Silence
from apps.alerts.serializers import (
    AlertChannelSerializer,
    AlertRuleSerializer,
    AlertSerializer,
    SilenceSerializer,
)
from apps.core.serializers import StrictBooleanFilter

SLUG_PATTERN = "[-a-zA-Z0-9_]+"


class AlertChannelFilter(django_filters.FilterSet):
    enabled = StrictBooleanFilter()

    class Meta:
        model = AlertChannel
        fields = ["kind", "enabled"]


class AlertRuleFilter(django_filters.FilterSet):
    enabled = StrictBooleanFilter()

    class Meta:
        model = AlertRule
        fields = ["kind", "enabled"]


class ScopedViewSet(viewsets.ModelViewSet):
    """Lists and details hold what the user's scope holds (out of it: 404); a fleet-wide
    object (no team) is changed only by those who may manage fleet-wide objects."""

    def get_queryset(self):
        return super().get_queryset().in_scope(scope_of(self.request.user))

    def check_may_change(self, obj):
        if obj.team_id is None and not may_manage_fleet_wide(self.request.user):
            raise PermissionDenied("It is fleet-wide: administrators change it.")

    def update(self, request, *args, **kwargs):
        self.check_may_change(self.get_object())  # before the body is validated
        return super().update(request, *args, **kwargs)

    def perform_destroy(self, instance):
        self.check_may_change(instance)
        instance.delete()


class ChannelTestResultSerializer(serializers.Serializer):
    sent = serializers.BooleanField(help_text="The channel accepted the test notification.")
    response_status = serializers.IntegerField(
        allow_null=True, help_text="The HTTP status the webhook answered; null for email."
    )
    error = serializers.CharField(allow_null=True, help_text="Why it was not sent; null if sent.")


class AlertChannelViewSet(ScopedViewSet):
    """Where alerts go, addressed by slug: ``webhook`` (Alertmanager's webhook JSON,
    version 4), ``slack`` (incoming-webhook JSON) or ``email``. Writes need the Ops role;
    a channel that rules use answers 409 to a DELETE."""

    queryset = AlertChannel.objects.select_related("team").order_by("name")
    serializer_class = AlertChannelSerializer
    lookup_field = "slug"
    lookup_value_regex = SLUG_PATTERN
    filterset_class = AlertChannelFilter

    @extend_schema(request=None, responses={200: ChannelTestResultSerializer})
    @action(detail=True, methods=["post"], pagination_class=None, filterset_class=None)
    def test(self, request, slug=None):
        """Send a test notification now: ``sent`` and, when it was not, ``error``."""
        if not request.user.has_perm("alerts.change_alertchannel"):
            raise PermissionDenied()
        channel = self.get_object()
        outcome = services.send_test_notification(channel, user=request.user)
        return Response(
            {
                "sent": outcome.sent,
                "response_status": outcome.response_status,
                "error": str(outcome.error) if outcome.error else None,
            }
        )


class AlertRuleViewSet(ScopedViewSet):
    """Alert rules, addressed by slug; ``channel``, ``team``, ``pool`` and ``workload``
    are slugs. Thresholds carry their unit in their names; those the kind does not use
    are cleared. Writes need the Technical lead or Ops role."""

    queryset = (
        AlertRule.objects.select_related("channel", "team", "pool", "workload")
        .annotate(firing_count=Count("alerts", filter=Q(alerts__status=Alert.Status.FIRING)))
        .order_by("name")
    )
    serializer_class = AlertRuleSerializer
    lookup_field = "slug"
    lookup_value_regex = SLUG_PATTERN
    filterset_class = AlertRuleFilter

    def perform_destroy(self, instance):
        self.check_may_change(instance)
        services.delete_rule(instance)


class AlertViewSet(viewsets.ReadOnlyModelViewSet):
    """Alerts, firing and resolved, newest first: one per subject breaching a rule, from
    the evaluation that saw it first to the one that no longer did."""

    queryset = Alert.objects.select_related("rule").order_by("-starts_at", "-id")
    serializer_class = AlertSerializer
    filterset_fields = ["status", "kind", "fingerprint"]

    def get_queryset(self):
        return super().get_queryset().in_scope(scope_of(self.request.user))


class SilenceViewSet(ScopedViewSet):
    """Silences: firing notifications of a rule's alerts, or of the alerts whose labels
    hold every matcher, are held back from ``starts_at`` to ``ends_at``. Writes need the
    Technical lead or Ops role; ``POST …/expire/`` ends one now."""

    queryset = Silence.objects.select_related("rule", "team", "created_by").order_by(
        "-ends_at", "-id"
    )
    serializer_class = SilenceSerializer

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def expire(self, request, pk=None):
        if not request.user.has_perm("alerts.change_silence"):
            raise PermissionDenied()
        silence = self.get_object()
        self.check_may_change(silence)
        now = timezone.now()
        if silence.ends_at > now:
            silence.ends_at = max(now, silence.starts_at)
            silence.save(update_fields=["ends_at"])
        return Response(self.get_serializer(silence).data)
