"""``GET /api/v1/exports/focus/?start=YYYY-MM-DD&end=YYYY-MM-DD``: the FOCUS dataset of a
range of UTC days, scoped to the caller's teams, as CSV."""

from datetime import UTC, datetime, time, timedelta

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import APIView

from apps.accounts.scope import scope_of
from apps.clusters.models import Cluster
from apps.core.schema import VALIDATION_ERROR, ErrorSerializer
from apps.showback.focus.exports import FOCUS_VERSION, focus_response
from apps.showback.focus.rows import MissingReportingRate, focus_rows

# Each day is a charge period computed from the cost report: a year at most per file.
MAX_DAYS = 366


def day_start(day) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def range_problem(start, end) -> dict | None:
    """{field: [message]} when [start, end) is not a range the export takes, else None."""
    if end <= start:
        return {"end": ["The end must be after the start (the end day is not included)."]}
    if (end - start) > timedelta(days=MAX_DAYS):
        return {"end": [f"At most {MAX_DAYS} days per export."]}
    return None


class FocusQuerySerializer(serializers.Serializer):
    start = serializers.DateField(
        help_text="First UTC day of the range, YYYY-MM-DD (included).", input_formats=["iso-8601"]
    )
    end = serializers.DateField(
        help_text="UTC day after the range, YYYY-MM-DD (not included); at most 366 days "
        "after the start.",
        input_formats=["iso-8601"],
    )
    cluster = serializers.SlugField(
        required=False,
        help_text="A cluster's slug: the rows of that cluster's pools only (x_Cluster).",
    )

    def validate(self, attrs):
        problem = range_problem(attrs["start"], attrs["end"])
        if problem:
            raise serializers.ValidationError(problem)
        return attrs


class CsvOrJsonNegotiation(BaseContentNegotiation):
    """Whatever the client accepts (``text/csv`` only, say): the dataset is an
    HttpResponse of its own, and an error is JSON, as the schema documents."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class FocusExportView(APIView):
    """The cost of [start, end) as a FOCUS dataset (CSV): one row per pool, day and
    allocation (each workload, the unallocated capacity, the unattributed pools), closed
    months as they were frozen; the caller's teams' pools and the shared ones. The rows'
    BilledCost adds up to the cost report of the same range, to the cent."""

    content_negotiation_class = CsvOrJsonNegotiation

    @extend_schema(
        parameters=[FocusQuerySerializer],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description=f"FOCUS {FOCUS_VERSION} CSV; the FOCUS-Version header states the "
                "version.",
            ),
            400: VALIDATION_ERROR,
            404: OpenApiResponse(ErrorSerializer, description="No cluster with that slug."),
        },
    )
    def get(self, request):
        query = FocusQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        start = day_start(query.validated_data["start"])
        end = day_start(query.validated_data["end"])
        cluster = query.validated_data.get("cluster")
        if cluster and not Cluster.objects.filter(slug=cluster).exists():
            raise NotFound(f"No cluster with slug “{cluster}”.")
        try:
            rows = focus_rows(start, end, scope=scope_of(request.user), cluster=cluster)
        except MissingReportingRate as missing:
            raise serializers.ValidationError({"detail": [str(missing)]}) from None
        return focus_response(rows, start, end)
