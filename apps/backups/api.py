from django.db import transaction
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.scope import scope_of
from apps.backups import at_risk, checkpointing, services
from apps.backups.filters import BackupVersionFilter, RestoreDrillFilter
from apps.backups.models import BackupPolicy, BackupVersion, RestoreDrill, VersionChecksum
from apps.backups.serializers import (
    BackupPolicySerializer,
    BackupVersionSerializer,
    CheckpointIntervalRequestSerializer,
    CheckpointIntervalResponseSerializer,
    ChecksumListSerializer,
    ChecksumSerializer,
    RestoreDrillSerializer,
    checksum_list_errors,
)
from apps.core.schema import ErrorSerializer
from apps.core.serializers import MoneyField
from apps.currencies.serializers import missing_rate_field, usd_price_field
from apps.pools.models import Workload
from apps.pools.querysets import workload_scope_filter
from apps.pools.scoped import ScopedQuerysetMixin

SLUG_REGEX = "[-a-zA-Z0-9_]+"


class BackupPolicyViewSet(ScopedQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    """Backup policies, addressed by their workload's slug; edited in the dashboard by Ops.
    The caller sees those of the workloads in their scope."""

    queryset = BackupPolicy.objects.select_related("workload").order_by("workload__name")
    serializer_class = BackupPolicySerializer
    lookup_field = "workload__slug"
    lookup_url_kwarg = "workload"
    lookup_value_regex = SLUG_REGEX

    def scope_filter(self, scope):
        return workload_scope_filter(scope, "workload__")


class BackupVersionViewSet(ScopedQuerysetMixin, viewsets.ModelViewSet):
    """The version registry: training scripts and CI register checkpoints and releases,
    with per-node checksums. ``workload`` is the workload's slug (one in the caller's
    scope); the name is generated from model, precision, data version, config hash, step
    and tag, never a date alone."""

    queryset = (
        BackupVersion.objects.select_related("workload", "registered_by")
        .prefetch_related("checksums")
        .order_by("-created_at", "-id")
    )
    serializer_class = BackupVersionSerializer
    filterset_class = BackupVersionFilter
    lookup_value_regex = "[0-9]+"

    def scope_filter(self, scope):
        return workload_scope_filter(scope, "workload__")

    @extend_schema(
        request=ChecksumListSerializer,
        responses={200: ChecksumSerializer(many=True)},
        summary="Add or update per-node checksums of a version",
    )
    @action(detail=True, methods=["post"], pagination_class=None, filterset_class=None)
    def checksums(self, request, pk=None):
        """Each node or replica registers its own checksum; a node's earlier one is replaced."""
        version = self.get_object()
        payload = ChecksumListSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        pairs = payload.validated_data["checksums"]
        errors = checksum_list_errors(pairs, version.checksum_algorithm)
        if errors:
            raise ValidationError(errors)
        with transaction.atomic():
            services.set_checksums(version, [(p["node"], p["checksum"]) for p in pairs])
        # Not version.checksums.all(): that is the prefetched set from before the write.
        stored = VersionChecksum.objects.filter(version=version).order_by("node")
        return Response(ChecksumSerializer(stored, many=True).data)


class RestoreDrillViewSet(
    ScopedQuerysetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Restore drills as recorded by Ops, with actual RTO/RPO, consistency and the verdict."""

    queryset = RestoreDrill.objects.select_related("policy__workload", "performed_by").order_by(
        "-finished_at", "-id"
    )
    serializer_class = RestoreDrillSerializer
    filterset_class = RestoreDrillFilter
    lookup_value_regex = "[0-9]+"

    def scope_filter(self, scope):
        return workload_scope_filter(scope, "policy__workload__")


class CheckpointIntervalEstimateView(APIView):
    """Young's and Daly's checkpoint intervals and the expected fraction of time lost.

    Read-only in effect (nothing is stored), so read-only tokens may call it.
    """

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=CheckpointIntervalRequestSerializer,
        responses={200: CheckpointIntervalResponseSerializer},
    )
    def post(self, request):
        payload = CheckpointIntervalRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        write = payload.validated_data["checkpoint_write_seconds"]
        mtbf = payload.validated_data["mtbf_seconds"]
        restart = payload.validated_data["restart_seconds"]
        daly = checkpointing.daly_interval_seconds(write, mtbf)
        result = {
            "young_seconds": checkpointing.young_interval_seconds(write, mtbf),
            "daly_seconds": daly,
            "expected_lost_fraction": checkpointing.expected_lost_fraction(
                daly, write, mtbf, restart
            ),
        }
        return Response(CheckpointIntervalResponseSerializer(result).data)


class AtRiskVersionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class AtRiskDrillSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    finished_at = serializers.DateTimeField()
    verdict = serializers.CharField()


class WorkloadAtRiskSerializer(serializers.Serializer):
    workload = serializers.CharField()
    basis = serializers.ChoiceField(
        choices=at_risk.BASES,
        help_text="proven: from the checkpoint a passing drill proved; nothing_proven: from "
        "the first training event; no_events, not_training: no figure.",
    )
    usd_at_risk = MoneyField(
        allow_null=True, help_text="GPUs × effective price per GPU-hour × hours at risk."
    )
    hours_at_risk = serializers.FloatField(allow_null=True, help_text="now − since, in hours.")
    gpu_count = serializers.IntegerField()
    price_per_gpu_hour_usd = usd_price_field()
    missing_exchange_rate = missing_rate_field()
    since = serializers.DateTimeField(allow_null=True)
    proven_step = serializers.IntegerField(allow_null=True)
    proven_at = serializers.DateTimeField(allow_null=True)
    version = AtRiskVersionSerializer(allow_null=True)
    drill = AtRiskDrillSerializer(allow_null=True)
    explanation = serializers.CharField()
    computed_at = serializers.DateTimeField()


class WorkloadAtRiskView(APIView):
    """A training workload's dollars at risk now: GPUs × the pool's effective price per
    GPU-hour × the hours since the newest checkpoint a passing restore drill proved
    restorable (apps/backups/at_risk.py). Another team's workload answers 404."""

    @extend_schema(responses={200: WorkloadAtRiskSerializer, 404: ErrorSerializer})
    def get(self, request, slug):
        workload = (
            Workload.objects.in_scope(scope_of(request.user))
            .select_related("pool")
            .filter(slug=slug)
            .first()
        )
        if workload is None:
            raise NotFound(f"No workload with slug “{slug}”.")
        figures = at_risk.workload_at_risk(workload, timezone.now())
        return Response(WorkloadAtRiskSerializer(figures.as_data()).data)
