"""``/api/v1/pilots/``: measured benchmarks per workload, read with their cost per 10⁶
output tokens, and imported by POSTing a result file's text."""

import django_filters
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from apps.catalog.models import GpuModel
from apps.core.money import UNIT_PRICE_PLACES, money_text
from apps.core.serializers import SlugReferenceField, StrictCharField, UnitPriceField
from apps.core.texts import translated
from apps.pilots import selectors, services
from apps.pilots.models import PilotResult, SourceFormat
from apps.pilots.parsers import BenchmarkFormatError
from apps.pools.models import Workload
from apps.pools.querysets import workload_scope_filter
from apps.pools.scoped import ScopedQuerysetMixin, ScopedReferencesMixin

# A benchmark summary is a few kB; GuideLLM's with its request samples a few MB.
MAX_TEXT_CHARACTERS = services.MAX_FILE_BYTES


class StrictIntegerField(serializers.IntegerField):
    """The schema says integer: true, 1.5 and "4" are refused."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class PilotResultFilter(django_filters.FilterSet):
    workload = django_filters.CharFilter(
        field_name="workload__slug", help_text="Only this workload's results (its slug)."
    )
    gpu_model = django_filters.CharFilter(
        field_name="gpu_model__slug", help_text="Only the results on this GPU model (its slug)."
    )

    class Meta:
        model = PilotResult
        fields = ["workload", "gpu_model"]


class PilotResultSerializer(serializers.ModelSerializer):
    workload = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    gpu_model = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    output_tokens_per_second_per_gpu = serializers.FloatField(
        read_only=True, help_text="Output tokens/s ÷ GPUs."
    )
    price_per_gpu_hour_usd = serializers.SerializerMethodField(
        help_text="USD per GPU-hour the cost uses (a pool's converted from its currency at "
        "this month's exchange rate); null when there is no price."
    )
    price_source = serializers.SerializerMethodField(
        help_text="pool: the workload's pool's effective price (its own GPU model); catalog: "
        "the GPU model's reference price; missing_rate: the pool's price is in a currency "
        "whose exchange rate for this month is missing (no price then); none."
    )
    cost_per_million_output_tokens_usd = serializers.SerializerMethodField(
        help_text="price per GPU-hour × GPUs ÷ (output tokens/s × 3600) × 10⁶; null without a "
        "price."
    )

    decode_ceiling_tokens_per_second_per_gpu = serializers.SerializerMethodField(
        help_text="Tokens/s per GPU memory bandwidth allows on this GPU model at the settings "
        "decode_ceiling_basis names; null for training or without a model architecture."
    )
    decode_ceiling_basis = serializers.SerializerMethodField(
        help_text="Whose settings the ceiling holds for: pilot (the concurrency and the mean "
        "input + output tokens per request the file gives, with the workload's tensor "
        "parallelism and precisions) or workload (the file does not give them); null "
        "without a ceiling."
    )
    decode_ceiling_concurrent_sequences = serializers.SerializerMethodField(
        help_text="Sequences decoded at once per replica at the ceiling's settings."
    )
    decode_ceiling_context_length_tokens = serializers.SerializerMethodField(
        help_text="Tokens of context each sequence holds at the ceiling's settings."
    )
    decode_ceiling_settings = serializers.SerializerMethodField(
        help_text="The ceiling's settings in words, and why those: \"at 64 sequences × 1,280 "
        "tokens, the pilot's own\" or \"at the workload's settings (…): the file does not "
        'say its concurrency".'
    )
    share_of_decode_ceiling_pct = serializers.SerializerMethodField(
        help_text="Measured ÷ ceiling × 100, not clamped: above 100 the pilot did more than "
        "memory bandwidth carries at the ceiling's settings (it ran at others, or its GPU "
        "count is wrong)."
    )

    class Meta:
        model = PilotResult
        fields = [
            "id",
            "workload",
            "gpu_model",
            "name",
            "notes",
            "gpu_count",
            "concurrency",
            "input_tokens_per_request",
            "output_tokens_per_request",
            "source_format",
            "source_filename",
            "content_sha256",
            "output_tokens_per_second",
            "output_tokens_per_second_per_gpu",
            "requests_per_second",
            "ttft_p50_ms",
            "ttft_p99_ms",
            "itl_p50_ms",
            "itl_p99_ms",
            "raw_figures",
            "price_per_gpu_hour_usd",
            "price_source",
            "cost_per_million_output_tokens_usd",
            "decode_ceiling_tokens_per_second_per_gpu",
            "decode_ceiling_basis",
            "decode_ceiling_concurrent_sequences",
            "decode_ceiling_context_length_tokens",
            "decode_ceiling_settings",
            "share_of_decode_ceiling_pct",
            "imported_at",
        ]
        read_only_fields = fields

    def _priced(self, result) -> selectors.PricedPilot:
        cache = self.context.setdefault("priced", {})
        if result.pk not in cache:
            ceilings = self.context.setdefault("ceilings", {})
            cache[result.pk] = selectors.priced(
                result,
                result.workload,
                ceilings.setdefault(result.workload_id, {}),
                self.context.setdefault("pool_prices", {}),
            )
        return cache[result.pk]

    @extend_schema_field(UnitPriceField(allow_null=True))
    def get_price_per_gpu_hour_usd(self, result) -> str | None:
        return money_text(self._priced(result).price_per_gpu_hour_usd, UNIT_PRICE_PLACES)

    def get_price_source(self, result) -> str:
        return self._priced(result).price_source

    @extend_schema_field(UnitPriceField(allow_null=True))
    def get_cost_per_million_output_tokens_usd(self, result) -> str | None:
        return money_text(
            self._priced(result).cost_per_million_output_tokens_usd, UNIT_PRICE_PLACES
        )

    def get_decode_ceiling_tokens_per_second_per_gpu(self, result) -> float | None:
        return self._priced(result).decode_ceiling_tokens_per_second_per_gpu

    def _ceiling_settings(self, result) -> selectors.CeilingSettings | None:
        return self._priced(result).decode_ceiling_settings

    def get_decode_ceiling_basis(self, result) -> str | None:
        settings = self._ceiling_settings(result)
        return settings.basis if settings else None

    def get_decode_ceiling_concurrent_sequences(self, result) -> int | None:
        settings = self._ceiling_settings(result)
        return settings.concurrent_sequences if settings else None

    def get_decode_ceiling_context_length_tokens(self, result) -> int | None:
        settings = self._ceiling_settings(result)
        return settings.context_length_tokens if settings else None

    def get_decode_ceiling_settings(self, result) -> str | None:
        settings = self._ceiling_settings(result)
        return settings.description if settings else None

    def get_share_of_decode_ceiling_pct(self, result) -> float | None:
        return self._priced(result).share_of_decode_ceiling_pct


class PilotImportSerializer(ScopedReferencesMixin, serializers.Serializer):
    scoped_references = {"workload": Workload.objects.in_scope}

    workload = SlugReferenceField(slug_field="slug", queryset=Workload.objects.all())
    gpu_model = SlugReferenceField(slug_field="slug", queryset=GpuModel.objects.all())
    gpus = StrictIntegerField(min_value=1, max_value=100_000, help_text="GPUs serving the run.")
    format = serializers.ChoiceField(choices=SourceFormat.choices)
    text = StrictCharField(
        max_length=MAX_TEXT_CHARACTERS,
        trim_whitespace=False,
        help_text="The result file's content, as the tool wrote it.",
    )
    filename = StrictCharField(required=False, default="", allow_blank=True, max_length=255)
    name = StrictCharField(required=False, default="", allow_blank=True, max_length=200)
    notes = StrictCharField(required=False, default="", allow_blank=True, max_length=10_000)
    concurrency = StrictIntegerField(
        required=False, default=None, allow_null=True, min_value=1, max_value=1_000_000
    )
    benchmark = StrictIntegerField(
        required=False,
        default=None,
        allow_null=True,
        min_value=1,
        max_value=10_000,
        help_text="GuideLLM: which benchmark of a sweep, from 1.",
    )


@extend_schema_view(
    create=extend_schema(
        request=PilotImportSerializer,
        responses={
            201: PilotResultSerializer,
            200: OpenApiResponse(
                PilotResultSerializer, description="The same text was imported before: unchanged."
            ),
        },
    )
)
class PilotResultViewSet(
    ScopedQuerysetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Measured benchmark results of the workloads in the caller's scope (``?workload=SLUG``
    for one workload's), each with the price it is costed at and its cost per 10⁶ output
    tokens. POST imports one result file's text (needs the Technical lead or Ops role): a
    text that does not parse is refused with 400 naming the line or key, and nothing is
    stored; the same text again for the same workload answers 200 with the stored result."""

    queryset = PilotResult.objects.select_related(
        "workload__pool", "workload__model_architecture", "gpu_model"
    ).order_by("id")
    serializer_class = PilotResultSerializer
    filterset_class = PilotResultFilter

    def scope_filter(self, scope):
        return workload_scope_filter(scope, "workload__")

    def create(self, request, *args, **kwargs):
        incoming = PilotImportSerializer(data=request.data, context=self.get_serializer_context())
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            outcome = services.import_benchmark(
                workload=data["workload"],
                gpu_model=data["gpu_model"],
                gpu_count=data["gpus"],
                source_format=data["format"],
                content=data["text"].encode("utf-8"),
                filename=data["filename"],
                name=data["name"],
                notes=data["notes"],
                concurrency=data["concurrency"],
                benchmark_number=data["benchmark"],
                user=request.user,
            )
        except BenchmarkFormatError as error:
            raise ValidationError({"text": [translated(error)]}) from error
        result = self.get_queryset().get(pk=outcome.result.pk)
        return Response(
            self.get_serializer(result).data,
            status=status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK,
        )
