"""``/api/v1/slurm/jobs/``: GET lists a fleet's Slurm jobs, POST imports sacct text."""

import django_filters
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics, serializers, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from apps.accounts.models import Team
from apps.accounts.permissions import ReadOnlyTokenPermission
from apps.accounts.scope import scope_of
from apps.clusters.models import Cluster
from apps.core.serializers import SlugReferenceField, StrictBooleanFilter, StrictModelSerializer
from apps.pools.models import Workload
from apps.pools.scoped import ScopedReferencesMixin
from apps.slurm.forms import clean_rule_pattern, rule_target_errors
from apps.slurm.mapping import rules_in, shown_mapping
from apps.slurm.models import SlurmImport, SlurmJob, SlurmMappingRule
from apps.slurm.remap import request_remap
from apps.slurm.services import import_sacct

# A month of a large cluster's sacct output fits; more is split by the sender.
MAX_TEXT_CHARACTERS = 20_000_000


class SlurmJobSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    gpu_hours = serializers.DecimalField(
        max_digits=18, decimal_places=6, read_only=True, help_text="GPUs × elapsed ÷ 3600, GPU-h."
    )
    elapsed_seconds = serializers.DecimalField(
        max_digits=14,
        decimal_places=3,
        read_only=True,
        help_text="Seconds; a running job's are counted to its last import.",
    )
    end = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="Null while running."
    )
    workload = serializers.SlugRelatedField(
        slug_field="slug",
        read_only=True,
        allow_null=True,
        help_text="The workload's slug, as the mapping rules say; null when no rule maps "
        "the job to a workload, and when the workload belongs to a team outside the "
        "caller's (`mapped` is then true): another team's workload is not named.",
    )
    team = serializers.SlugRelatedField(
        slug_field="slug",
        read_only=True,
        allow_null=True,
        help_text="The team's slug, as the mapping rules say; null when no rule gives "
        "one, and when it is a team outside the caller's: another team is not named.",
    )
    mapped = serializers.SerializerMethodField(
        help_text="Whether a rule maps the job to a workload, named or not (as "
        "`?mapped=true` keeps it)."
    )

    class Meta:
        model = SlurmJob
        fields = [
            "cluster",
            "job_id",
            "user",
            "account",
            "partition",
            "qos",
            "job_name",
            "state",
            "state_raw",
            "start",
            "end",
            "elapsed_seconds",
            "gpus",
            "gpu_type",
            "gpu_hours",
            "nodes",
            "node_list",
            "billing",
            "workload",
            "team",
            "mapped",
        ]
        read_only_fields = fields

    def get_mapped(self, job) -> bool:
        return job.workload_id is not None

    def to_representation(self, job):
        data = super().to_representation(job)
        workload_shown, team_shown = shown_mapping(job, self.context["scope"])
        if not workload_shown:
            data["workload"] = None
        if not team_shown:
            data["team"] = None
        return data


class SlurmImportSerializer(serializers.Serializer):
    cluster = SlugReferenceField(
        slug_field="slug",
        queryset=Cluster.objects.filter(archived_at__isnull=True),
        help_text="The cluster's slug (an archived cluster takes no imports).",
    )
    text = serializers.CharField(
        max_length=MAX_TEXT_CHARACTERS,
        trim_whitespace=False,
        help_text="`sacct --parsable2` output with its header line, columns in any order.",
    )


class SlurmLineErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    message = serializers.CharField()


class SlurmImportResultSerializer(serializers.Serializer):
    accepted = serializers.IntegerField(help_text="Jobs added.")
    duplicates = serializers.IntegerField(help_text="Jobs already stored as they are.")
    updated = serializers.IntegerField(help_text="Jobs stored before that changed (ended…).")
    rejected = serializers.IntegerField(help_text="Lines refused; see errors.")
    steps = serializers.IntegerField(help_text="Step rows read (they add no GPU-hours).")
    errors = SlurmLineErrorSerializer(many=True)


class SlurmJobFilter(django_filters.FilterSet):
    cluster = django_filters.ModelChoiceFilter(
        queryset=Cluster.objects.all(), to_field_name="slug", help_text="The cluster's slug."
    )
    user = django_filters.CharFilter(help_text="Slurm user name.")
    account = django_filters.CharFilter(help_text="Slurm account.")
    start = django_filters.IsoDateTimeFilter(
        method="ending_after", help_text="Jobs running at or after this time (ISO 8601)."
    )
    end = django_filters.IsoDateTimeFilter(
        method="starting_before", help_text="Jobs that started before this time (ISO 8601)."
    )
    mapped = StrictBooleanFilter(
        method="mapped_to_workload",
        help_text="true: jobs a rule maps to a workload; false: jobs no rule maps.",
    )

    class Meta:
        model = SlurmJob
        fields = ["cluster", "user", "account", "start", "end", "mapped"]

    def mapped_to_workload(self, queryset, name, value):
        if value is None:
            return queryset
        return queryset.filter(workload__isnull=not value)

    def ending_after(self, queryset, name, value):
        return queryset.exclude(end__lte=value)

    def starting_before(self, queryset, name, value):
        return queryset.filter(start__lt=value)


@extend_schema_view(
    get=extend_schema(responses=SlurmJobSerializer(many=True)),
    post=extend_schema(
        request=SlurmImportSerializer,
        responses={201: SlurmImportResultSerializer, 422: SlurmImportResultSerializer},
    ),
)
class SlurmJobsView(generics.ListAPIView):
    """Slurm jobs imported from `sacct --parsable2` output, newest first; every caller
    lists every cluster's jobs, a workload or team outside the caller's teams given as
    null. POST imports a cluster's text (needs the Technical lead or Ops role):
    idempotent by cluster and job id, a running job (End `Unknown`) is counted to the
    import's time and completed by a later import; each line that cannot be read is
    refused with its number and why. 422 when lines were refused and no job row could be
    read (step rows alone are no job)."""

    permission_classes = [IsAuthenticated, ReadOnlyTokenPermission]
    queryset = SlurmJob.objects.select_related("cluster", "workload__pool", "team").order_by(
        "-start", "job_id"
    )
    serializer_class = SlurmJobSerializer
    filterset_class = SlurmJobFilter

    def get_serializer_context(self):
        # Every reader lists every job; another team's workload and team are not named.
        return {**super().get_serializer_context(), "scope": scope_of(self.request.user)}

    def post(self, request):
        if not request.user.has_perm("slurm.add_slurmimport"):
            raise PermissionDenied(
                "Importing Slurm accounting needs the Technical lead or Ops role."
            )
        serializer = SlurmImportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = import_sacct(
            serializer.validated_data["cluster"],
            serializer.validated_data["text"],
            user=request.user,
            source=SlurmImport.Source.API,
        )
        body = {
            "accepted": result.accepted,
            "duplicates": result.duplicates,
            "updated": result.updated,
            "rejected": result.rejected,
            "steps": result.steps,
            "errors": result.error_data(),
        }
        return Response(body, status=422 if result.nothing_read else 201)


class SlurmMappingRuleSerializer(ScopedReferencesMixin, StrictModelSerializer):
    id = serializers.IntegerField(read_only=True)
    cluster = SlugReferenceField(
        slug_field="slug",
        queryset=Cluster.objects.all(),
        allow_null=True,
        required=False,
        help_text="The cluster's slug; null: the jobs of every cluster.",
    )
    field = serializers.ChoiceField(
        choices=SlurmMappingRule.Field.choices,
        help_text="The job's field the pattern is matched against.",
    )
    pattern = serializers.CharField(
        max_length=255,
        help_text="Shell-style (`proj-*`, `gpu?`, `[ab]*`); without wildcards an exact "
        "match. Letter case counts.",
    )
    workload = SlugReferenceField(
        slug_field="slug",
        queryset=Workload.objects.all(),
        allow_null=True,
        required=False,
        help_text="The workload's slug the matched jobs count for.",
    )
    team = SlugReferenceField(
        slug_field="slug",
        queryset=Team.objects.all(),
        allow_null=True,
        required=False,
        help_text="The team's slug; null: the workload's team (its own, else its pool's).",
    )
    scoped_references = {
        "workload": lambda scope: Workload.objects.in_scope(scope),
        "team": lambda scope: Team.objects.filter(scope.team_filter("pk")),
    }

    class Meta:
        model = SlurmMappingRule
        fields = ["id", "cluster", "field", "pattern", "workload", "team", "priority"]

    def validate_pattern(self, value):
        try:
            return clean_rule_pattern(value)
        except DjangoValidationError as error:
            raise serializers.ValidationError(error.messages) from None

    def validate(self, attrs):
        workload = attrs.get("workload", getattr(self.instance, "workload", None))
        team = attrs.get("team", getattr(self.instance, "team", None))
        errors = rule_target_errors(workload, team)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class SlurmMappingRuleViewSet(viewsets.ModelViewSet):
    """Rules mapping Slurm jobs to workloads and teams: a job counts for the first rule,
    by priority (lower first, then the oldest), whose pattern matches its account,
    partition, QOS, user or job name. Every caller reads them; writes need the Technical
    lead role. Each write re-maps the stored jobs before it answers, in the same
    transaction, however many they are (as an import does): the jobs the API lists next
    are mapped by the rules as they now are. The re-map is recorded, and shown on the
    rules page, as the pages' re-maps are; the pages hand a large one to a worker."""

    queryset = SlurmMappingRule.objects.select_related("cluster", "workload", "team").order_by(
        "priority", "id"
    )
    serializer_class = SlurmMappingRuleSerializer
    filterset_fields = ["field"]

    def get_queryset(self):
        # Rules naming another team's workload or team are not shown (404, as if absent).
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the schema
            return self.queryset
        return (
            rules_in(scope_of(self.request.user))
            .select_related("cluster", "workload", "team")
            .order_by("priority", "id")
        )

    def perform_create(self, serializer):
        with transaction.atomic():
            serializer.save()
            request_remap(user=self.request.user, inline=True)

    def perform_update(self, serializer):
        with transaction.atomic():
            serializer.save()
            request_remap(user=self.request.user, inline=True)

    def perform_destroy(self, instance):
        with transaction.atomic():
            instance.delete()
            request_remap(user=self.request.user, inline=True)
