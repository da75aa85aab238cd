"""Telemetry over the API: agents push scrapes and request logs; scripts read the
hourly rollups."""

import logging

import django_filters
from django.core.validators import ProhibitNullCharactersValidator
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.scope import scope_of
from apps.clusters.models import Cluster
from apps.core.pagination import StrictLimitOffsetPagination
from apps.core.parsers import BoundedJSONParser
from apps.core.schema import ErrorSerializer
from apps.core.serializers import (
    NoBlankQueryMixin,
    SlugReferenceField,
    StrictBooleanField,
    StrictCharField,
    StrictModelSerializer,
)
from apps.core.texts import translated
from apps.pools.filters import TeamFilterMixin, team_api_filter
from apps.pools.models import Pool, Workload
from apps.pools.querysets import pool_scope_filter
from apps.pools.scoped import ScopedQuerysetMixin, ScopedReferencesMixin
from apps.telemetry.ingest import formats, importer
from apps.telemetry.ingest.parsers import GPU_CSV_FIELDS, REQUEST_CSV_FIELDS, TelemetryFormatError
from apps.telemetry.models import (
    ImportRun,
    PoolHourFlag,
    PoolHourlyUsage,
    PullSource,
    WorkloadHourlyRequests,
)
from apps.telemetry.pull import promql
from apps.telemetry.rollups import reconciliation
from apps.telemetry.scoped import import_runs_of

logger = logging.getLogger(__name__)

MAX_TEXT_CHARACTERS = 20_000_000
# The body that can carry that text: 4 bytes per character (UTF-8's longest, sent
# unescaped) and room for the other fields.
MAX_BODY_BYTES = 4 * MAX_TEXT_CHARACTERS + 64 * 1024


class IngestJSONParser(BoundedJSONParser):
    max_body_bytes = MAX_BODY_BYTES
    limit_sentence = (
        f"The text may hold {MAX_TEXT_CHARACTERS:,} characters; split a larger file into "
        "several pushes."
    )


class _RangeSerializer(serializers.Serializer):
    """Rows with start ≤ hour < end; an end at or before the start selects nothing."""

    start = serializers.DateTimeField(required=False, help_text="ISO 8601; inclusive.")
    end = serializers.DateTimeField(required=False, help_text="ISO 8601; exclusive.")


class PoolUsageQuerySerializer(NoBlankQueryMixin, _RangeSerializer):
    pool = serializers.SlugField(help_text="The pool's slug.")

    not_blank = ("start", "end")


class RequestUsageQuerySerializer(NoBlankQueryMixin, _RangeSerializer):
    workload = serializers.SlugField(help_text="The workload's slug.")

    not_blank = ("start", "end")


def _by_slug(request, model, slug):
    """A 404 naming what is missing: the query was well formed, the object is not there
    (or out of the caller's scope, which reads the same)."""
    found = model.objects.in_scope(scope_of(request.user)).filter(slug=slug).first()
    if found is None:
        raise NotFound(f"No {model._meta.verbose_name} with slug “{slug}”.")
    return found


NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No object with that slug.")


class PoolHourlyUsageSerializer(serializers.ModelSerializer):
    hour = serializers.DateTimeField(help_text="Start of the UTC hour.")
    coverage_pct = serializers.SerializerMethodField(
        help_text="100 × physical GPUs reporting ÷ GPUs declared; above 100 only in an hour "
        "flagged over_reported (GET /api/v1/reconciliation/)."
    )

    class Meta:
        model = PoolHourlyUsage
        fields = [
            "hour",
            "reporting_gpus",
            "coverage_pct",
            "capacity_gpu_hours",
            "busy_gpu_hours",
            "avg_utilization_pct",
            "max_utilization_pct",
            "max_memory_used_mib",
            "energy_kwh",
        ]

    def get_coverage_pct(self, row) -> float | None:
        if not row.capacity_gpu_hours:
            return None
        return 100 * row.reporting_gpus / row.capacity_gpu_hours


class WorkloadHourlyRequestsSerializer(serializers.ModelSerializer):
    hour = serializers.DateTimeField(help_text="Start of the UTC hour.")

    class Meta:
        model = WorkloadHourlyRequests
        fields = ["hour", "requests", "input_tokens", "output_tokens", "errors", "p95_latency_ms"]


def _in_range(queryset, params):
    if params.get("start"):
        queryset = queryset.filter(hour__gte=params["start"])
    if params.get("end"):
        queryset = queryset.filter(hour__lt=params["end"])
    return queryset


class PoolHourlyUsageView(APIView):
    """Hourly utilization of one pool (definitions in apps/telemetry/rollups/hourly.py)."""

    @extend_schema(
        parameters=[PoolUsageQuerySerializer],
        responses={200: PoolHourlyUsageSerializer(many=True), 404: NOT_FOUND},
    )
    def get(self, request):
        query = PoolUsageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        pool = _by_slug(request, Pool, params["pool"])
        rows = _in_range(PoolHourlyUsage.objects.filter(pool=pool), params)
        return Response(PoolHourlyUsageSerializer(rows.order_by("hour"), many=True).data)


class WorkloadHourlyRequestsView(APIView):
    """Hourly requests, tokens, errors and p95 latency of one workload."""

    @extend_schema(
        parameters=[RequestUsageQuerySerializer],
        responses={200: WorkloadHourlyRequestsSerializer(many=True), 404: NOT_FOUND},
    )
    def get(self, request):
        query = RequestUsageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        workload = _by_slug(request, Workload, params["workload"])
        rows = _in_range(WorkloadHourlyRequests.objects.filter(workload=workload), params)
        return Response(WorkloadHourlyRequestsSerializer(rows.order_by("hour"), many=True).data)


class RowErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    message = serializers.CharField()


class ImportResultSerializer(serializers.Serializer):
    import_run = serializers.IntegerField()
    status = serializers.CharField()
    accepted = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    rejected = serializers.IntegerField()
    errors = RowErrorSerializer(many=True)
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="What was kept but needs a look: samples outside their pool's service "
        "period, samples dated ahead of their arrival (clock skew).",
    )
    message = serializers.CharField()


class AlreadyImportedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    import_run = serializers.IntegerField(help_text="The earlier import of the same content.")
    url = serializers.URLField(help_text="Its page.")


ALREADY_IMPORTED = OpenApiResponse(
    AlreadyImportedSerializer,
    description="The same content was already imported successfully: nothing is stored.",
)


class _IngestSerializer(serializers.Serializer):
    text = StrictCharField(
        max_length=MAX_TEXT_CHARACTERS,
        trim_whitespace=False,
        help_text="The file's content: a /metrics scrape, an nvidia-smi or other CSV.",
    )
    columns = serializers.DictField(
        child=StrictCharField(),
        required=False,
        default=dict,
        help_text="CSV only: our field name → the file's header.",
    )
    time_zone = StrictCharField(required=False, default="UTC")
    skip_bad_rows = StrictBooleanField(required=False, default=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A NUL character in the text is refused by the import with its line, as in a file.
        text = self.fields["text"]
        text.validators = [
            validator
            for validator in text.validators
            if not isinstance(validator, ProhibitNullCharactersValidator)
        ]

    def validate_time_zone(self, value):
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            return ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as error:
            raise ValidationError(f"unknown time zone “{value}”") from error


class GpuIngestSerializer(ScopedReferencesMixin, _IngestSerializer):
    # A pool out of the caller's scope is refused as an unknown slug (400, as today).
    scoped_references = {"pool": Pool.objects.in_scope}

    format = serializers.ChoiceField(choices=formats.names_of(formats.GPU, formats.API))
    pool = SlugReferenceField(
        slug_field="slug",
        queryset=Pool.objects.all(),
        required=False,
        allow_null=True,
        default=None,
        help_text="Devices first seen here join this pool.",
    )
    scraped_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="dcgm: when the scrape was taken (default: now).",
    )

    def validate_columns(self, value):
        unknown = set(value) - set(GPU_CSV_FIELDS)
        if unknown:
            raise ValidationError(f"unknown fields {sorted(unknown)}; known: {GPU_CSV_FIELDS}")
        return value


class RequestIngestSerializer(ScopedReferencesMixin, _IngestSerializer):
    scoped_references = {"workload": Workload.objects.in_scope}

    format = serializers.ChoiceField(choices=formats.names_of(formats.REQUESTS, formats.API))
    workload = SlugReferenceField(slug_field="slug", queryset=Workload.objects.all())

    def validate_columns(self, value):
        unknown = set(value) - set(REQUEST_CSV_FIELDS)
        if unknown:
            raise ValidationError(f"unknown fields {sorted(unknown)}; known: {REQUEST_CSV_FIELDS}")
        return value


def _result(run: ImportRun) -> dict:
    """ImportResultSerializer's fields, the run's sentences said in the request's language
    (Accept-Language, English by default) as the pages say them."""
    return {
        "import_run": run.pk,
        "status": run.status,
        "accepted": run.rows_accepted,
        "duplicates": run.rows_duplicate,
        "rejected": run.rows_rejected,
        "errors": [
            {"line": error["line"], "message": error["message"]}
            for error in run.errors_in_language()
        ],
        "warnings": run.warnings_in_language(),
        "message": run.message_in_language(),
    }


class _IngestView(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [IngestJSONParser]
    kind = ""

    def check_permissions(self, request):
        super().check_permissions(request)
        # Read-only tokens are refused by the default ReadOnlyTokenPermission; this
        # endpoint replaces the defaults, so it checks again.
        from apps.accounts.permissions import ReadOnlyTokenPermission

        if not ReadOnlyTokenPermission().has_permission(request, self):
            raise PermissionDenied(ReadOnlyTokenPermission.message)
        if not request.user.has_perm("telemetry.add_importrun"):
            raise PermissionDenied("Importing telemetry needs the Technical lead or Ops role.")

    def _ingest(self, request, serializer_class):
        serializer = serializer_class(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        digest = importer.content_sha256(data["text"])
        earlier = importer.earlier_identical_import(
            kind=self.kind, digest=digest, runs=import_runs_of(request.user)
        )
        if earlier is not None:
            return Response(
                {
                    "detail": importer.already_imported_sentence(earlier),
                    "import_run": earlier.pk,
                    "url": request.build_absolute_uri(
                        reverse("telemetry:import_detail", kwargs={"pk": earlier.pk})
                    ),
                },
                status=409,
            )
        run = ImportRun.objects.create(
            content_sha256=digest,
            kind=self.kind,
            format=data["format"],
            source=ImportRun.Source.API,
            created_by=request.user,
            pool=data.get("pool"),
            workload=data.get("workload"),
            skip_bad_rows=data["skip_bad_rows"],
            status=ImportRun.Status.RUNNING,
            started_at=timezone.now(),
        )
        try:
            summary = importer.run_import(
                run,
                data["text"],
                columns=data["columns"],
                tz=data["time_zone"],
                scraped_at=data.get("scraped_at"),
                scope=scope_of(request.user),
            )
        except TelemetryFormatError as error:
            raise ValidationError({"text": [translated(error)]}) from error
        except Exception:
            # run_import marked the run failed with a sentence: the client reads it, the
            # log keeps the traceback.
            logger.exception("import run %s failed", run.pk)
            run.refresh_from_db()
            return Response(_result(run), status=500)
        return Response(_result(run), status=422 if summary.rejected_whole else 201)


class GpuIngestView(_IngestView):
    """Push GPU telemetry (what an agent scraped). Rows are keyed by (device, timestamp),
    and the same text pushed again after a successful import is refused with 409 and the
    earlier import's URL. 422 when the text has bad rows and ``skip_bad_rows`` is false
    (nothing is stored; the errors say which lines)."""

    kind = "gpu"

    @extend_schema(
        request=GpuIngestSerializer,
        responses={
            201: ImportResultSerializer,
            409: ALREADY_IMPORTED,
            413: ErrorSerializer,
            422: ImportResultSerializer,
        },
    )
    def post(self, request):
        return self._ingest(request, GpuIngestSerializer)


class RequestIngestView(_IngestView):
    """Push an inference request log for a workload (Azure LLM trace format or CSV)."""

    kind = "requests"

    @extend_schema(
        request=RequestIngestSerializer,
        responses={
            201: ImportResultSerializer,
            409: ALREADY_IMPORTED,
            413: ErrorSerializer,
            422: ImportResultSerializer,
        },
    )
    def post(self, request):
        return self._ingest(request, RequestIngestSerializer)


class ReconciliationQuerySerializer(NoBlankQueryMixin, _RangeSerializer):
    pool = serializers.SlugField(required=False, help_text="Only this pool's slug.")
    kind = serializers.ChoiceField(
        choices=PoolHourFlag.Kind.choices, required=False, help_text="Only this flag."
    )

    not_blank = ("start", "end", "pool", "kind")


class PoolHourFlagSerializer(serializers.ModelSerializer):
    hour = serializers.DateTimeField(help_text="Start of the UTC hour.")
    label = serializers.CharField(source="get_kind_display")

    class Meta:
        model = PoolHourFlag
        fields = ["hour", "kind", "label", "gpus", "samples", "detail"]


class PoolDaySerializer(serializers.Serializer):
    pool = serializers.CharField(source="pool.slug")
    day = serializers.DateField(help_text="UTC day.")
    declared_gpus = serializers.IntegerField(source="pool.gpu_count")
    in_service_hours = serializers.IntegerField()
    reporting_gpu_hours = serializers.FloatField(help_text="Σ GPUs reporting over the hours.")
    coverage_pct = serializers.FloatField(
        allow_null=True,
        help_text="100 × reporting GPU-hours ÷ (declared GPUs × in-service hours).",
    )
    flagged_hours = serializers.IntegerField()
    flags = PoolHourFlagSerializer(many=True)


class ReconciliationView(APIView):
    """Flagged pool-hours per pool and UTC day, newest first
    (apps/telemetry/rollups/reconciliation.py)."""

    pagination_class = StrictLimitOffsetPagination

    @extend_schema(
        parameters=[ReconciliationQuerySerializer],
        responses={200: PoolDaySerializer(many=True), 404: NOT_FOUND},
    )
    def get(self, request):
        query = ReconciliationQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        pool = _by_slug(request, Pool, params["pool"]) if params.get("pool") else None
        kind = params.get("kind", "")
        keys = reconciliation.flagged_pool_days(
            pool=pool,
            kind=kind,
            start=params.get("start"),
            end=params.get("end"),
            scope=scope_of(request.user),
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(keys, request, view=self)
        days = reconciliation.pool_days(list(page), kind=kind)
        return paginator.get_paginated_response(PoolDaySerializer(days, many=True).data)


class _NullableSlugReferenceField(SlugReferenceField):
    """A reference by slug, or null for none; "" is neither (DRF would read it as null)."""

    def run_validation(self, data=serializers.empty):
        if data == "":
            self.fail("does_not_exist", slug_name=self.slug_field, value="")
        return super().run_validation(data)


class PullSourceSerializer(ScopedReferencesMixin, StrictModelSerializer):
    """A pull source; ``pool`` is the pool's slug (one in the caller's scope, or null),
    ``label_filters`` PromQL label matchers (``prometheus_hourly`` sources), stored in one
    canonical spelling."""

    scoped_references = {"pool": Pool.objects.in_scope}

    pool = _NullableSlugReferenceField(
        slug_field="slug", queryset=Pool.objects.all(), required=False, allow_null=True
    )
    cluster = SlugReferenceField(
        slug_field="slug",
        queryset=Cluster.objects.all(),
        required=False,
        help_text="The cluster's slug; left out of a create: the `default` cluster.",
    )

    class Meta:
        model = PullSource
        fields = [
            "name",
            "slug",
            "kind",
            "url",
            "pool",
            "cluster",
            "label_filters",
            "interval_seconds",
            "enabled",
            "pulled_until",
            "last_pulled_at",
            "last_status",
            "last_message",
        ]
        read_only_fields = ["pulled_until", "last_pulled_at", "last_status", "last_message"]
        extra_kwargs = {"slug": {"required": True}}

    def validate_label_filters(self, value):
        try:
            return promql.format_label_filters(promql.parse_label_filters(value))
        except promql.LabelFilterError as error:
            raise serializers.ValidationError(str(error)) from None

    def validate(self, attrs):
        kind = attrs.get("kind", getattr(self.instance, "kind", None))
        filters = attrs.get("label_filters", getattr(self.instance, "label_filters", ""))
        if filters and kind != PullSource.Kind.PROMETHEUS_HOURLY:
            raise serializers.ValidationError(
                {"label_filters": ["Label filters apply to prometheus_hourly sources only."]}
            )
        return attrs


class PullSourceFilter(TeamFilterMixin, django_filters.FilterSet):
    """``?team=`` is the source's pool's team (``shared``: a shared pool's or no pool)."""

    team_paths = ("pool__team", None)

    team = team_api_filter()

    class Meta:
        model = PullSource
        fields = ["team", "kind"]


class PullSourceViewSet(ScopedQuerysetMixin, viewsets.ModelViewSet):
    """Where telemetry is pulled from, addressed by slug: dcgm-exporter endpoints,
    Prometheus servers (raw samples) and Prometheus-compatible TSDBs asked for hourly
    aggregates (``prometheus_hourly``). Writes need the Technical lead role. Beat pulls
    each enabled source every ``interval_seconds``; a deleted source's device-hours stay.
    The caller sees the sources of the pools in their scope and those of no pool."""

    queryset = PullSource.objects.select_related("pool", "cluster").order_by("name")
    serializer_class = PullSourceSerializer
    filterset_class = PullSourceFilter
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def scope_filter(self, scope):
        return pool_scope_filter(scope, "pool__")

    # A pull stores only what its last editor could import by hand (models: pull_scope_key).
    def perform_create(self, serializer):
        serializer.save(pull_scope_key=scope_of(self.request.user).cache_key)

    def perform_update(self, serializer):
        serializer.save(pull_scope_key=scope_of(self.request.user).cache_key)
