"""Cost and utilisation reports over the API, and interruptions of training jobs: over
the pools and workloads in the caller's scope (apps/accounts/scope.py); a pool or
interruption out of it answers 404, as a missing one does."""

from datetime import timedelta
from zoneinfo import ZoneInfo, available_timezones

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.scope import scope_of
from apps.clusters.models import Cluster
from apps.core.schema import ErrorSerializer
from apps.core.serializers import (
    MoneyField,
    NoBlankQueryMixin,
    QueryBooleanField,
    SlugReferenceField,
    StrictModelSerializer,
    UnitPriceField,
)
from apps.currencies.rates import missing_rate_data, usd_price
from apps.currencies.serializers import MissingRateSerializer, missing_rate_field, usd_price_field
from apps.pools.models import Interruption, Pool, Purpose, Workload
from apps.pools.querysets import workload_scope_filter
from apps.pools.scoped import ScopedQuerysetMixin, ScopedReferencesMixin
from apps.reports.cost import explain, periods
from apps.reports.cost.report import GROUP_BY_CHOICES
from apps.reports.lending import capacity as lending
from apps.reports.lending import selectors as lending_selectors
from apps.reports.usage.curves import usage_profile

DEFAULT_RANGE = timedelta(days=30)
# Listed in the schema, so a client (and schemathesis) knows which names are valid.
TIME_ZONES = sorted(available_timezones())
NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No pool with that slug.")
POOL_OR_CLUSTER_NOT_FOUND = OpenApiResponse(
    ErrorSerializer, description="No pool or cluster with that slug."
)


class ReportRangeSerializer(NoBlankQueryMixin, serializers.Serializer):
    start = serializers.DateTimeField(
        required=False, help_text="ISO 8601, inclusive; default: 30 days before the end."
    )
    end = serializers.DateTimeField(
        required=False, help_text="ISO 8601, exclusive; default: now. Clipped to now."
    )

    not_blank = ("start", "end", "pool", "tz", "purpose", "group_by", "cluster")

    def validate(self, attrs):
        attrs = super().validate(attrs)
        # An end at or before the start selects nothing, as in the usage API.
        end = attrs.get("end") or timezone.now()
        start = attrs.get("start") or end - DEFAULT_RANGE
        attrs["start"], attrs["end"] = start, end
        return attrs


class CostQuerySerializer(ReportRangeSerializer):
    group_by = serializers.ChoiceField(choices=GROUP_BY_CHOICES, default="pool")
    purpose = serializers.ChoiceField(choices=Purpose.choices, required=False)
    pool = serializers.SlugField(required=False, help_text="Only this pool.")
    cluster = serializers.SlugField(
        required=False,
        help_text="Only the pools of this cluster (its slug); group_by=cluster: a row per cluster.",
    )
    explain = QueryBooleanField(
        required=False,
        default=False,
        help_text="1: add to each row how each of its figures is computed (``explain``).",
    )
    not_blank = (*ReportRangeSerializer.not_blank, "explain")


class ExplainStepSerializer(serializers.Serializer):
    label = serializers.CharField(help_text="What this step computes (a pool, a sum, a ratio).")
    expression = serializers.CharField(
        help_text="The formula in words with the actual numbers, e.g. "
        "“8 GPUs × 672 h × $2.49/GPU-h”."
    )
    value = serializers.FloatField(allow_null=True, help_text="The step's result; null: undefined.")
    unit = serializers.CharField(help_text="USD, GPU-h, %, requests, tokens, USD/GPU-h, …")
    note = serializers.CharField(allow_blank=True, help_text="e.g. “of which unmeasured 5 h”.")
    kind = serializers.ChoiceField(
        choices=["line", "sum"],
        help_text="line: one pool's part or an input; sum: the lines above.",
    )


class CostRowSerializer(serializers.Serializer):
    key = serializers.CharField(
        help_text="Pool or workload slug, purpose, “unallocated” (the pools' GPUs no running "
        "workload holds), “unattributed” (pools without any workload), or “other-teams”: the "
        "workloads of teams outside the caller's scope on a shared pool, unnamed."
    )
    label = serializers.CharField()
    cluster = serializers.CharField(
        allow_null=True,
        help_text="The slug of the cluster the row's pools are in; null when they span "
        "several (a purpose's row, the unallocated rest).",
    )
    capacity_gpu_hours = serializers.FloatField(help_text="GPUs × hours paid for in the range.")
    measured_capacity_gpu_hours = serializers.FloatField(help_text="Of those, with telemetry.")
    unmeasured_gpu_hours = serializers.FloatField(help_text="GPU-hours without telemetry.")
    busy_gpu_hours = serializers.FloatField()
    utilization_pct = serializers.FloatField(
        allow_null=True, help_text="100 × busy ÷ measured capacity."
    )
    cost_usd = MoneyField(help_text="Every hour of the range, measured or not.")
    unmeasured_cost_usd = MoneyField(help_text="Part of cost_usd without telemetry.")
    idle_cost_usd = MoneyField(help_text="Measured cost × (1 − busy ÷ measured capacity).")
    cost_per_busy_gpu_hour_usd = UnitPriceField(allow_null=True)
    requests = serializers.IntegerField()
    cost_per_1k_requests_usd = UnitPriceField(
        allow_null=True, help_text="Inference cost ÷ requests × 1,000."
    )
    tokens = serializers.IntegerField(help_text="Input + output tokens.")
    cost_per_1m_tokens_usd = UnitPriceField(allow_null=True)
    lost_gpu_hours = serializers.FloatField(help_text="Lost to recorded interruptions.")
    effective_training_gpu_hours = serializers.FloatField(
        allow_null=True,
        help_text="measured: Σ effective seconds of the training event logs × GPUs ÷ 3600; "
        "estimate: busy training GPU-hours − lost GPU-hours.",
    )
    effective_training_source = serializers.ChoiceField(
        choices=["measured", "estimate"],
        allow_null=True,
        help_text="measured when the event logs measure every training workload of the row.",
    )
    effective_training_above_busy = serializers.BooleanField(
        help_text="true: the measured effective GPU-hours exceed the busy training GPU-hours "
        "the telemetry measured; check the workload's GPUs and reference step time.",
    )
    cost_per_effective_training_gpu_hour_usd = UnitPriceField(allow_null=True)
    interruption_cost_usd = MoneyField(help_text="Lost GPU-hours × price.")
    cost = MoneyField(
        help_text="cost_usd in the reporting currency (`currency`): each month's hours at "
        "that month's exchange rates."
    )
    currency = serializers.CharField(
        help_text="ISO 4217 code of `cost`: the installation's REPORTING_CURRENCY."
    )
    missing_rates = MissingRateSerializer(
        many=True,
        help_text="Exchange rates missing to convert the row's amounts: the amounts they "
        "would convert are left out of every money figure, which is then incomplete.",
    )
    missing_exchange_rates = serializers.CharField(
        allow_null=True,
        help_text="null, or missing_rates as text, e.g. “CNY 2026-04”, as the CSV export "
        "writes them.",
    )
    split_rule = serializers.ChoiceField(
        choices=["", "measured", "declared", "scaled_down", "not_running", "unallocated"]
        + ["unattributed"],
        help_text="Grouped by workload: the rule that gave the row its share of its pool "
        "(measured: pod labels only; declared: declared GPUs ÷ pool GPUs while running, "
        "after the labelled GPU-hours; scaled_down: declared, scaled down because the "
        "running workloads declared more GPUs than the pool has; not_running: no running "
        "hour, no cost). Empty when grouped by pool or purpose.",
    )
    split_rule_text = serializers.CharField(
        help_text="The rule in words, e.g. “declared: 2 of 8 GPUs while running (96 h)”."
    )
    split_scaled_down = serializers.BooleanField(
        help_text="true: the running workloads declared more GPUs than the pool has, and "
        "the row's share was scaled down."
    )
    explain = serializers.DictField(
        child=ExplainStepSerializer(many=True),
        required=False,
        help_text="With explain=1 only: figure name → the steps that compute it; the last "
        "step's value is the figure.",
    )


def _pool_or_404(slug: str, scope) -> Pool:
    pool = Pool.objects.in_scope(scope).filter(slug=slug).select_related("gpu_model").first()
    if pool is None:
        raise NotFound(f"No GPU pool with slug “{slug}”.")
    return pool


def _cluster_or_404(slug: str) -> Cluster:
    cluster = Cluster.objects.filter(slug=slug).first()
    if cluster is None:
        raise NotFound(f"No cluster with slug “{slug}”.")
    return cluster


class CostReportView(APIView):
    """Cost, idle cost and unit costs over a range, grouped by pool, purpose or workload
    (definitions in apps/reports/cost/costmodel.py). Undefined ratios are null."""

    @extend_schema(
        parameters=[CostQuerySerializer],
        responses={200: CostRowSerializer(many=True), 404: POOL_OR_CLUSTER_NOT_FOUND},
    )
    def get(self, request):
        query = CostQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        scope = scope_of(request.user)
        if params.get("pool"):
            # Not an empty report that reads as "cost nothing".
            _pool_or_404(params["pool"], scope)
        if params.get("cluster"):
            _cluster_or_404(params["cluster"])
        rows = periods.cost_report(
            params["start"],
            params["end"],
            params["group_by"],
            purpose=params.get("purpose"),
            pool_slug=params.get("pool"),
            cluster_slug=params.get("cluster"),
            scope=scope,
        )
        data = [row.as_dict() for row in rows]
        if params["explain"]:
            for values, row in zip(data, rows, strict=True):
                values["explain"] = {
                    figure: [step.as_dict() for step in steps]
                    for figure, steps in explain.explain_row(row).items()
                }
        return Response(CostRowSerializer(data, many=True).data)


class ProfileQuerySerializer(ReportRangeSerializer):
    pool = serializers.SlugField(required=False, help_text="One pool (or use purpose).")
    purpose = serializers.ChoiceField(choices=Purpose.choices, required=False)
    cluster = serializers.SlugField(
        required=False, help_text="Only the pools of this cluster (its slug)."
    )
    tz = serializers.ChoiceField(
        choices=TIME_ZONES, required=False, default="UTC", help_text="IANA time zone."
    )

    def validate_tz(self, value):
        return ZoneInfo(value)


class HourOfDaySerializer(serializers.Serializer):
    hour_of_day = serializers.IntegerField(min_value=0, max_value=23)
    avg_utilization_pct = serializers.FloatField(
        allow_null=True, help_text="100 × Σ busy GPU-hours ÷ Σ reporting GPUs."
    )
    p95_utilization_pct = serializers.FloatField(
        allow_null=True, help_text="95th percentile (linear) of the pool-hours' utilisation."
    )
    mean_requests_per_hour = serializers.FloatField(allow_null=True)
    is_peak = serializers.BooleanField()


class UsageProfileView(APIView):
    """The hour-of-day curve, 24 rows in the given time zone: a pool's, a purpose's, a
    cluster's, or the whole fleet's when none is given."""

    @extend_schema(
        parameters=[ProfileQuerySerializer],
        responses={200: HourOfDaySerializer(many=True), 404: POOL_OR_CLUSTER_NOT_FOUND},
    )
    def get(self, request):
        query = ProfileQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        scope = scope_of(request.user)
        pool = _pool_or_404(params["pool"], scope) if params.get("pool") else None
        if params.get("cluster"):
            _cluster_or_404(params["cluster"])
        zone: ZoneInfo = params["tz"]
        rows = usage_profile(
            params["start"],
            params["end"],
            zone,
            pool=pool,
            purpose=params.get("purpose"),
            cluster=params.get("cluster"),
            scope=scope,
        )
        return Response(HourOfDaySerializer([vars(row) for row in rows], many=True).data)


class InterruptionSerializer(ScopedReferencesMixin, StrictModelSerializer):
    workload = SlugReferenceField(slug_field="slug", queryset=Workload.objects.all())
    scoped_references = {"workload": lambda scope: Workload.objects.in_scope(scope)}
    lost_minutes = serializers.FloatField(
        read_only=True, allow_null=True, help_text="Work since the checkpoint + restart."
    )
    gpus = serializers.IntegerField(
        min_value=1,
        allow_null=True,
        required=False,
        help_text="GPUs that lost the work (a Slurm job's own); null: the workload's GPUs.",
    )
    lost_gpu_hours = serializers.FloatField(
        read_only=True, allow_null=True, help_text="lost_minutes ÷ 60 × gpus (else the workload's)."
    )
    recorded_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = Interruption
        fields = [
            "id",
            "workload",
            "occurred_at",
            "cause",
            "restart_minutes",
            "last_checkpoint_at",
            "gpus",
            "notes",
            "lost_minutes",
            "lost_gpu_hours",
            "recorded_by",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]

    def validate(self, attrs):
        def current(name):
            return attrs.get(name, getattr(self.instance, name, None))

        errors = Interruption.rule_errors(
            current("occurred_at"),
            current("last_checkpoint_at"),
            current("workload"),
            timezone.now(),
        )
        if errors:
            raise ValidationError({name: [message] for name, message in errors.items()})
        return attrs


class InterruptionViewSet(ScopedQuerysetMixin, viewsets.ModelViewSet):
    """Interruptions of training jobs: technical leads and Ops record them; everyone reads
    those of the workloads in their scope."""

    serializer_class = InterruptionSerializer
    queryset = Interruption.objects.select_related("workload", "recorded_by").order_by(
        "-occurred_at", "-id"
    )

    def scope_filter(self, scope):
        return workload_scope_filter(scope, "workload__")

    def get_queryset(self):
        queryset = super().get_queryset()
        workload = self.request.query_params.get("workload")
        if workload:
            queryset = queryset.filter(workload__slug=workload)
        return queryset

    def perform_create(self, serializer):
        serializer.save(recorded_by=self.request.user)


class LendableWindowSerializer(serializers.Serializer):
    weekday = serializers.IntegerField(min_value=1, max_value=7, help_text="ISO: 1 = Monday.")
    weekday_name = serializers.CharField(help_text="Mon … Sun.")
    start_hour = serializers.IntegerField(min_value=0, max_value=23, help_text="Local, inclusive.")
    end_hour = serializers.IntegerField(
        min_value=1, max_value=24, help_text="Local, exclusive (24: midnight at the day's end)."
    )
    hours = serializers.IntegerField()
    gpus = serializers.IntegerField(help_text="GPUs free through every hour of the window.")
    gpu_hours = serializers.IntegerField(help_text="Σ of each hour's free GPUs × 1 h.")
    label = serializers.CharField(help_text="e.g. “Mon 01:00–07:00”, in the pool's time zone.")


class LendableSerializer(serializers.Serializer):
    pool = serializers.CharField(help_text="The pool's slug.")
    name = serializers.CharField()
    is_inference_pool = serializers.BooleanField(
        help_text="Lendable capacity is computed for inference pools only; false: every "
        "figure below is null."
    )
    time_zone = serializers.CharField(help_text="The pool's IANA time zone: slots are local.")
    start = serializers.DateTimeField(allow_null=True, help_text="First hour of the window.")
    end = serializers.DateTimeField(allow_null=True, help_text="End of the window (exclusive).")
    gpu_count = serializers.IntegerField()
    safety_margin_pct = serializers.IntegerField(allow_null=True)
    safety_margin_gpus = serializers.IntegerField(
        allow_null=True, help_text="⌈GPUs × safety_margin_pct ÷ 100⌉."
    )
    price_per_gpu_hour_usd = usd_price_field()
    missing_exchange_rate = missing_rate_field()
    lendable_gpu_hours_per_week = serializers.IntegerField(
        allow_null=True,
        help_text="Σ over the 168 weekday × hour slots of ⌊GPUs − p95 busy GPUs − margin⌋ "
        "(at least 0).",
    )
    value_usd_per_week = MoneyField(
        allow_null=True, help_text="lendable_gpu_hours_per_week × price_per_gpu_hour_usd."
    )
    slots_without_data = serializers.IntegerField(
        allow_null=True, help_text="Slots of 168 with fewer than 2 measured hours: not lendable."
    )
    windows = LendableWindowSerializer(many=True, allow_null=True)
    largest_window = LendableWindowSerializer(allow_null=True)
    free_gpus = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(allow_null=True)),
        allow_null=True,
        help_text="7 × 24: [weekday − 1][local hour] → free GPUs; null: too little data.",
    )
    p95_busy_gpus = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True)),
        allow_null=True,
        help_text="7 × 24: the 95th percentile of busy GPUs; null: too little data.",
    )


def _lendable_data(result: lending.Lendable) -> dict:
    return {"is_inference_pool": True, **result.as_dict()}


def _not_inference_data(pool: Pool) -> dict:
    price = usd_price(pool, timezone.now())
    empty = dict.fromkeys(
        (
            "start",
            "end",
            "safety_margin_pct",
            "safety_margin_gpus",
            "lendable_gpu_hours_per_week",
            "value_usd_per_week",
            "slots_without_data",
            "windows",
            "largest_window",
            "free_gpus",
            "p95_busy_gpus",
        )
    )
    return {
        **empty,
        "pool": pool.slug,
        "name": pool.name,
        "is_inference_pool": False,
        "time_zone": pool.timezone or "UTC",
        "gpu_count": pool.gpu_count,
        "price_per_gpu_hour_usd": price.usd,
        "missing_exchange_rate": missing_rate_data(price.missing),
    }


class PoolLendableView(APIView):
    """A pool's lendable off-peak capacity over the last 28 days (definition in
    apps/reports/lending/capacity.py)."""

    @extend_schema(responses={200: LendableSerializer, 404: NOT_FOUND})
    def get(self, request, slug):
        scope = scope_of(request.user)
        pool = _pool_or_404(slug, scope)
        if pool.purpose != Purpose.INFERENCE:
            return Response(LendableSerializer(_not_inference_data(pool)).data)
        result = lending_selectors.pool_lendable_figures(pool, timezone.now(), scope)
        return Response(LendableSerializer(_lendable_data(result)).data)


class LendableListView(APIView):
    """Every inference pool in service in the caller's scope, with its lendable
    off-peak capacity."""

    @extend_schema(responses={200: LendableSerializer(many=True)})
    def get(self, request):
        fleet = lending_selectors.lendable_figures(timezone.now(), scope_of(request.user))
        return Response(
            LendableSerializer([_lendable_data(row) for row in fleet.rows], many=True).data
        )
