"""Training events over the API: a job pushes its event log; scripts read goodput."""

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.scope import scope_of
from apps.core.parsers import BoundedJSONParser
from apps.core.schema import ErrorSerializer
from apps.core.serializers import (
    MoneyField,
    NoBlankQueryMixin,
    SlugReferenceField,
    StrictCharField,
)
from apps.currencies.rates import missing_rate_data
from apps.currencies.serializers import missing_rate_field, usd_price_field
from apps.pools.models import Workload
from apps.pools.scoped import ScopedReferencesMixin
from apps.training import goodput, parsers, services
from apps.training.models import TrainingImportRun

MAX_TEXT_CHARACTERS = 20_000_000
MAX_BODY_BYTES = 4 * MAX_TEXT_CHARACTERS + 64 * 1024


class TrainingEventsJSONParser(BoundedJSONParser):
    max_body_bytes = MAX_BODY_BYTES
    limit_sentence = (
        f"The text may hold {MAX_TEXT_CHARACTERS:,} characters; split a larger log into "
        "several pushes."
    )


class TrainingEventIngestSerializer(ScopedReferencesMixin, serializers.Serializer):
    # A workload out of the caller's scope is refused as an unknown slug, as telemetry's
    # pushes refuse one.
    scoped_references = {"workload": Workload.objects.in_scope}

    workload = SlugReferenceField(slug_field="slug", queryset=Workload.objects.all())
    format = serializers.ChoiceField(choices=parsers.FORMATS, default="jsonl")
    text = StrictCharField(
        max_length=MAX_TEXT_CHARACTERS,
        trim_whitespace=False,
        help_text="The event log: goodput_measure's JSON lines, or a CSV.",
    )
    columns = serializers.DictField(
        child=StrictCharField(),
        required=False,
        default=dict,
        help_text="CSV only: our field → the file's header. Fields: "
        + ", ".join(parsers.CSV_FIELDS),
    )
    filename = StrictCharField(required=False, default="", allow_blank=True, max_length=255)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A NUL character in the text is refused by the import with its line, as in a file.
        text = self.fields["text"]
        text.validators = [
            validator
            for validator in text.validators
            if not isinstance(validator, ProhibitNullCharactersValidator)
        ]

    def validate_columns(self, value):
        unknown = set(value) - set(parsers.CSV_FIELDS)
        if unknown:
            raise ValidationError(
                f"unknown fields {sorted(unknown)}; known: {list(parsers.CSV_FIELDS)}"
            )
        return value


class LineErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    message = serializers.CharField()


class TrainingImportResultSerializer(serializers.Serializer):
    import_run = serializers.IntegerField()
    status = serializers.ChoiceField(choices=TrainingImportRun.Status.values)
    accepted = serializers.IntegerField(help_text="Events stored by this import.")
    duplicates = serializers.IntegerField(help_text="Events already stored: nothing added.")
    errors = LineErrorSerializer(many=True)
    message = serializers.CharField()


def _result(run: TrainingImportRun) -> dict:
    return {
        "import_run": run.pk,
        "status": run.status,
        "accepted": run.events_accepted,
        "duplicates": run.events_duplicate,
        "errors": [
            {"line": error["line"], "message": error["message"]}
            for error in run.errors_in_language()
        ],
        "message": run.message_in_language(),
    }


class TrainingEventIngestView(APIView):
    """Push a training job's event log for a workload. All-or-nothing: 422 with the lines
    and what each should hold when one is wrong (nothing stored); pushing the same log
    again stores nothing new (201, every event counted as a duplicate)."""

    permission_classes = [IsAuthenticated]
    parser_classes = [TrainingEventsJSONParser]

    def check_permissions(self, request):
        super().check_permissions(request)
        from apps.accounts.permissions import ReadOnlyTokenPermission

        if not ReadOnlyTokenPermission().has_permission(request, self):
            raise PermissionDenied(ReadOnlyTokenPermission.message)
        if not request.user.has_perm("training.add_trainingimportrun"):
            raise PermissionDenied(
                "Importing training events needs the Technical lead or Ops role."
            )

    @extend_schema(
        request=TrainingEventIngestSerializer,
        responses={
            201: TrainingImportResultSerializer,
            413: ErrorSerializer,
            422: TrainingImportResultSerializer,
        },
    )
    def post(self, request):
        serializer = TrainingEventIngestSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        run = services.import_events(
            workload=data["workload"],
            text=data["text"],
            format=data["format"],
            columns=data["columns"],
            source=TrainingImportRun.Source.API,
            filename=data["filename"],
            user=request.user,
        )
        status = 201 if run.status == TrainingImportRun.Status.SUCCEEDED else 422
        return Response(_result(run), status=status)


class GoodputQuerySerializer(NoBlankQueryMixin, serializers.Serializer):
    """Events stamped start ≤ timestamp < end."""

    not_blank = ("start", "end")

    start = serializers.DateTimeField(required=False, help_text="ISO 8601; inclusive.")
    end = serializers.DateTimeField(required=False, help_text="ISO 8601; exclusive.")


class AmountsSerializer(serializers.Serializer):
    seconds = serializers.FloatField()
    hours = serializers.FloatField()
    gpu_hours = serializers.FloatField(help_text="Hours × the workload's GPUs.")
    usd = MoneyField(
        allow_null=True,
        help_text="GPU-hours × the pool's effective price per GPU-hour in USD; null when "
        "the exchange rate is missing (missing_exchange_rate).",
    )


class BadputSecondsSerializer(serializers.Serializer):
    checkpoint_loading = serializers.FloatField(help_text="Each start → its checkpoint_loaded.")
    progress_lost = serializers.FloatField(help_text="A run's last save → its termination.")
    restart = serializers.FloatField(help_text="A termination → the next start.")
    checkpoint_saving = serializers.FloatField(help_text="Save durations the log gives.")
    slowdown = serializers.FloatField(help_text="The remainder of the total time.")


class BadputSerializer(serializers.Serializer):
    checkpoint_loading = AmountsSerializer()
    progress_lost = AmountsSerializer()
    restart = AmountsSerializer()
    checkpoint_saving = AmountsSerializer()
    slowdown = AmountsSerializer()


class JobGoodputSerializer(serializers.Serializer):
    job_name = serializers.CharField()
    total_seconds = serializers.FloatField(help_text="First event → last event.")
    effective_seconds = serializers.FloatField(
        help_text="(Highest step saved − lowest step loaded) × the reference step time."
    )
    goodput_pct = serializers.FloatField(
        allow_null=True, help_text="Effective ÷ total × 100; null with no time measured."
    )
    badput_seconds = BadputSecondsSerializer()
    total = AmountsSerializer()
    effective = AmountsSerializer()
    badput = BadputSerializer()
    gpu_hours = serializers.FloatField(help_text="Of the total time.")
    usd = MoneyField(allow_null=True, help_text="Of the total time; null without a rate.")
    min_loaded_step = serializers.IntegerField(allow_null=True)
    max_saved_step = serializers.IntegerField(allow_null=True)
    job_starts = serializers.IntegerField()
    flags = serializers.ListField(
        child=serializers.ChoiceField(choices=goodput.FLAGS),
        help_text="Why a figure is missing or clamped (never silently).",
    )


class WorkloadGoodputSerializer(JobGoodputSerializer):
    workload = serializers.CharField()
    reference_step_seconds = serializers.FloatField(allow_null=True)
    gpu_count = serializers.IntegerField()
    price_per_gpu_hour_usd = usd_price_field()
    missing_exchange_rate = missing_rate_field()
    event_count = serializers.IntegerField()
    jobs = JobGoodputSerializer(many=True)


class WorkloadGoodputView(APIView):
    """A workload's measured goodput from its training events, all jobs together and per
    job (definitions in apps/training/goodput.py, after goodput_measure)."""

    @extend_schema(
        parameters=[GoodputQuerySerializer],
        responses={200: WorkloadGoodputSerializer, 404: ErrorSerializer},
    )
    def get(self, request, slug):
        query = GoodputQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        workload = (
            Workload.objects.in_scope(scope_of(request.user))
            .select_related("pool")
            .filter(slug=slug)
            .first()
        )
        if workload is None:
            raise NotFound(f"No workload with slug “{slug}”.")
        measured = services.workload_goodput(
            workload, start=query.validated_data.get("start"), end=query.validated_data.get("end")
        )
        reference = workload.reference_step_seconds
        return Response(
            {
                **measured.total.as_data(),
                "workload": workload.slug,
                "reference_step_seconds": None if reference is None else float(reference),
                "gpu_count": workload.gpu_count,
                "price_per_gpu_hour_usd": measured.total.price_per_gpu_hour_usd,
                "missing_exchange_rate": missing_rate_data(measured.total.missing_rate),
                "event_count": measured.event_count,
                "jobs": [job.as_data() for job in measured.jobs],
            }
        )
