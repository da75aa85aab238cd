from decimal import Decimal

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.accounts.models import Team
from apps.backups.models import DrillVerdict
from apps.core.money import money_text
from apps.core.serializers import (
    MoneyField,
    NoBlankQueryMixin,
    SlugReferenceField,
    StrictModelSerializer,
    UnitPriceField,
)
from apps.currencies.codes import USD, currency_problem
from apps.currencies.serializers import MissingRateSerializer
from apps.pools.models import Pool
from apps.reports.cost.rates import missing_text
from apps.showback.models import Budget


class TeamSerializer(StrictModelSerializer):
    members = SlugReferenceField(
        slug_field="username",
        many=True,
        required=False,
        queryset=get_user_model().objects.all(),
        help_text="The members' usernames.",
    )

    class Meta:
        model = Team
        fields = ["slug", "name", "description", "members", "created_at"]
        read_only_fields = ["created_at"]

    def to_internal_value(self, data):
        # DRF reads any iterable (an object's keys) as the list; the schema says array.
        if isinstance(data, dict) and "members" in data and not isinstance(data["members"], list):
            raise serializers.ValidationError({"members": ["Expected a list of usernames."]})
        return super().to_internal_value(data)


class BudgetSerializer(StrictModelSerializer):
    team = SlugReferenceField(
        slug_field="slug",
        queryset=Team.objects.all(),
        required=False,
        allow_null=True,
        help_text="The team's slug (its showback spend counts); null for a pool's budget.",
    )
    pool = SlugReferenceField(
        slug_field="slug",
        queryset=Pool.objects.all(),
        required=False,
        allow_null=True,
        help_text="The pool's slug (its whole cost counts); null for a team's budget.",
    )
    currency = serializers.CharField(
        required=False,
        max_length=3,
        help_text="ISO 4217 code of amount_per_month; default: the reporting currency. A "
        "budget keeps it: the burn-down converts the amount to the reporting currency at "
        "the month's exchange rate.",
    )
    amount_usd_per_month = MoneyField(
        required=False,
        allow_null=True,
        min_value=Decimal("0.01"),
        help_text="Written instead of amount_per_month: the budget is stated in USD (its "
        "currency is then USD). Read: the amount in USD at this month's exchange rate; null "
        "when that rate is missing.",
    )
    amount = MoneyField(
        read_only=True,
        allow_null=True,
        help_text="The amount in the reporting currency (reporting_currency) at this "
        "month's exchange rate; null when that rate is missing (missing_rates).",
    )
    spent = MoneyField(
        read_only=True, help_text="Spent this month so far, in the reporting currency."
    )
    forecast = MoneyField(
        read_only=True,
        allow_null=True,
        help_text="forecast_usd in the reporting currency.",
    )
    reporting_currency = serializers.CharField(
        read_only=True,
        help_text="ISO 4217 code of amount, spent and forecast: the installation's "
        "REPORTING_CURRENCY.",
    )
    missing_rates = MissingRateSerializer(
        many=True,
        read_only=True,
        help_text="Exchange rates missing this month: to convert the amount (then amount, "
        "used_pct and the forecast's share are null and state is unknown) or some of the "
        "spend (then it is incomplete).",
    )
    spent_usd = MoneyField(read_only=True, help_text="Spent this month so far, USD.")
    used_pct = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="spent ÷ amount × 100, in the reporting currency; above 100 when over "
        "budget; null when the amount's exchange rate is missing.",
    )
    forecast_usd = MoneyField(
        read_only=True,
        allow_null=True,
        help_text="spent + mean daily spend of the last 7 complete days (fewer early in the "
        "month) × days left; null before the month's first complete day.",
    )
    forecast_days = serializers.IntegerField(
        read_only=True, help_text="Complete days the mean daily spend is taken over (at most 7)."
    )
    state = serializers.ChoiceField(
        read_only=True,
        choices=["ok", "50", "75", "90", "over", "unknown"],
        help_text="ok below 50 % used, then 50, 75, 90, and over from 100 %; unknown when "
        "the amount's exchange rate is missing.",
    )

    class Meta:
        model = Budget
        fields = [
            "id",
            "team",
            "pool",
            "amount_per_month",
            "currency",
            "amount_usd_per_month",
            "note",
            "amount",
            "spent",
            "forecast",
            "reporting_currency",
            "missing_rates",
            "spent_usd",
            "used_pct",
            "forecast_usd",
            "forecast_days",
            "state",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]
        extra_kwargs = {
            "amount_per_month": {
                "required": False,
                "help_text": "The monthly amount, in currency. Give it or amount_usd_per_month.",
            }
        }

    def validate_currency(self, value):
        problem = currency_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value

    def validate(self, attrs):
        attrs = super().validate(attrs)
        team = attrs.get("team", getattr(self.instance, "team", None))
        pool = attrs.get("pool", getattr(self.instance, "pool", None))
        if bool(team) == bool(pool):
            raise serializers.ValidationError(
                {"team": ["A budget is for one team or one pool: give exactly one of the two."]}
            )
        usd = attrs.pop("amount_usd_per_month", None)
        if usd is not None:
            if "amount_per_month" in attrs:
                raise serializers.ValidationError(
                    {
                        "amount_usd_per_month": [
                            "Give amount_per_month (with currency) or amount_usd_per_month, "
                            "not both."
                        ]
                    }
                )
            if attrs.get("currency", USD) != USD:
                raise serializers.ValidationError(
                    {"currency": ["amount_usd_per_month states the budget in USD."]}
                )
            attrs["amount_per_month"], attrs["currency"] = usd, USD
        if self.instance is None and "amount_per_month" not in attrs:
            raise serializers.ValidationError(
                {"amount_per_month": ["A budget needs its monthly amount."]}
            )
        return attrs

    def to_representation(self, instance):
        data = super().to_representation(instance)
        item = self.context.get("burndowns", {}).get(instance.pk)
        if item is not None:
            figures, usd = item.figures, item.figures_usd
            data.update(
                amount_usd_per_month=money_text(usd.amount),
                amount=money_text(figures.amount),
                spent=money_text(figures.spent),
                forecast=money_text(figures.forecast),
                reporting_currency=figures.currency,
                missing_rates=missing_text(figures.missing_rates),
                spent_usd=money_text(usd.spent),
                used_pct=figures.used_pct,
                forecast_usd=money_text(usd.forecast),
                forecast_days=figures.window_days,
                state=figures.state,
            )
        return data


class ShowbackQuerySerializer(NoBlankQueryMixin, serializers.Serializer):
    not_blank = ("month",)
    month = serializers.RegexField(
        r"^2\d{3}-(0[1-9]|1[0-2])$",
        required=False,
        help_text="YYYY-MM (UTC); default: this month, up to now.",
    )


class ClusterShowbackQuerySerializer(ShowbackQuerySerializer):
    not_blank = ("month", "cluster")
    cluster = serializers.SlugField(
        required=False,
        help_text="A cluster's slug: the spend on that cluster's pools only.",
    )


class AuditQuerySerializer(ShowbackQuerySerializer):
    month = serializers.RegexField(
        r"^2\d{3}-(0[1-9]|1[0-2])$",
        required=False,
        help_text="YYYY-MM (UTC); default: the last complete month.",
    )


class ShowbackRowSerializer(serializers.Serializer):
    team = serializers.CharField(allow_null=True, help_text="The team's slug; null: unattributed.")
    name = serializers.CharField()
    cost_usd = MoneyField()
    adjusts_month = serializers.CharField(
        allow_null=True,
        default=None,
        help_text="An adjustment line: the closed month (YYYY-MM) whose figures moved "
        "since it closed, by cost_usd; null for the team's own spend.",
    )
    unallocated_usd = MoneyField(
        default=0,
        help_text="Of cost_usd, what no running workload holds: the unallocated capacity of "
        "the team's own pools (unattributed row: of shared pools, and pools without "
        "workloads); 0 on an adjustment line.",
    )
    cost = MoneyField(
        help_text="cost_usd in the reporting currency (currency): the cost report's cost of "
        "the same shares, each month's hours at that month's exchange rates."
    )
    unallocated = MoneyField(
        default=0, help_text="unallocated_usd in the reporting currency (currency)."
    )
    currency = serializers.CharField(
        help_text="ISO 4217 code of cost and unallocated: the installation's REPORTING_CURRENCY."
    )


class ShowbackSerializer(serializers.Serializer):
    month = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    rows = ShowbackRowSerializer(many=True)
    total_usd = MoneyField(
        allow_null=True, help_text="The fleet's cost; null for a caller who sees only their teams."
    )
    rounding_usd = MoneyField(
        allow_null=True,
        help_text="total_usd − the sum of the rows' cost_usd, each to the cent: what a "
        "rounding line shows (0.00 when the rows add up); null without a total.",
    )
    total = MoneyField(
        allow_null=True,
        help_text="total_usd in the reporting currency (currency); it equals the cost "
        "report's total cost in that currency. Null for a caller who sees only their teams.",
    )
    rounding = MoneyField(allow_null=True, help_text="rounding_usd for total and the rows' cost.")
    currency = serializers.CharField(
        help_text="ISO 4217 code of total, rounding and the rows' cost: REPORTING_CURRENCY."
    )
    missing_rates = MissingRateSerializer(
        many=True,
        help_text="Exchange rates missing to convert some pools' costs: the amounts they "
        "would convert are left out of every figure (USD and reporting currency), which "
        "is then incomplete.",
    )


class AuditPoolSerializer(serializers.Serializer):
    slug = serializers.CharField(
        allow_null=True, help_text="Null: another team's pool the team's workloads ran on."
    )
    name = serializers.CharField()
    cost_usd = MoneyField(help_text="The team's showback share of the pool, USD.")
    cost = MoneyField(help_text="cost_usd in the reporting currency (the bundle's currency).")


class AuditWorkloadSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    pool_name = serializers.CharField()
    kind = serializers.CharField()
    is_training = serializers.BooleanField()
    cost_usd = MoneyField(help_text="The cost report's row for the workload, USD.")
    cost = MoneyField(help_text="cost_usd in the reporting currency (the bundle's currency).")
    requests = serializers.IntegerField()
    tokens = serializers.IntegerField()
    cost_per_1k_requests_usd = UnitPriceField(
        allow_null=True, help_text="Inference cost ÷ requests × 1000; null without requests."
    )
    cost_per_1m_tokens_usd = UnitPriceField(
        allow_null=True, help_text="Inference cost ÷ tokens × 10⁶; null without tokens."
    )
    effective_training_gpu_hours = serializers.FloatField(allow_null=True)
    effective_training_source = serializers.ChoiceField(
        choices=["measured", "estimate"],
        allow_null=True,
        help_text="measured: from the training event logs; estimate: busy − lost GPU-hours.",
    )
    goodput_pct = serializers.FloatField(
        allow_null=True,
        help_text="The month's goodput, as /api/v1/workloads/{slug}/goodput/ gives it for "
        "the month; null for inference or without measured time.",
    )


class AuditDrillSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    workload_slug = serializers.CharField()
    workload_name = serializers.CharField()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField()
    actual_rto_minutes = serializers.FloatField(help_text="Start → service or training back.")
    rto_target_minutes = serializers.FloatField(help_text="The policy's RTO when recorded.")
    rto_met = serializers.BooleanField()
    actual_rpo_minutes = serializers.FloatField(help_text="The restored version's age.")
    rpo_target_minutes = serializers.FloatField(help_text="The policy's RPO when recorded.")
    rpo_met = serializers.BooleanField()
    verdict = serializers.ChoiceField(choices=DrillVerdict.values)
    passed = serializers.BooleanField()
    notes = serializers.CharField(allow_blank=True)


class AuditTotalsSerializer(serializers.Serializer):
    cost_usd = MoneyField(help_text="The team's showback total for the month.")
    cost = MoneyField(help_text="cost_usd in the reporting currency (the bundle's currency).")
    workloads_usd = MoneyField(help_text="Sum of the workloads' costs.")
    not_in_a_workload_usd = MoneyField(
        help_text="The team's share of its pools that no workload's usage accounts for."
    )
    drills = serializers.IntegerField()
    drills_passed = serializers.IntegerField()


class AuditBundleSerializer(serializers.Serializer):
    team = serializers.CharField(source="team.slug")
    name = serializers.CharField(source="team.name")
    month = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    pools = AuditPoolSerializer(many=True)
    workloads = AuditWorkloadSerializer(many=True)
    drills = AuditDrillSerializer(many=True)
    currency = serializers.CharField(
        help_text="ISO 4217 code of every `cost`: the installation's REPORTING_CURRENCY."
    )
    missing_rates = serializers.SerializerMethodField()
    totals = serializers.SerializerMethodField()

    @extend_schema_field(MissingRateSerializer(many=True))
    def get_missing_rates(self, bundle) -> list[dict]:
        """The exchange rates missing to convert some of the month's costs: their amounts
        are left out of every figure."""
        return missing_text(bundle.missing_rates)

    @extend_schema_field(AuditTotalsSerializer)
    def get_totals(self, bundle) -> dict:
        return AuditTotalsSerializer(
            {
                "cost_usd": bundle.total_usd,
                "cost": bundle.total,
                "workloads_usd": bundle.workloads_usd,
                "not_in_a_workload_usd": bundle.not_in_a_workload_usd,
                "drills": len(bundle.drills),
                "drills_passed": bundle.drills_passed,
            }
        ).data


class PeriodSerializer(serializers.Serializer):
    month = serializers.CharField(help_text="YYYY-MM.")
    state = serializers.ChoiceField(choices=["open", "closed"])
    closed_at = serializers.DateTimeField(allow_null=True)
    closed_by = serializers.CharField(
        allow_null=True, help_text="The username of who closed it; null for an open month."
    )
    cost_usd = serializers.DecimalField(
        max_digits=18,
        decimal_places=2,
        help_text="The fleet's cost of the month: as frozen for a closed month, computed "
        "for an open one (the current one to date, with the adjustments booked in it).",
    )
    cost = MoneyField(
        help_text="cost_usd in the reporting currency (currency); a closed month read in "
        "another reporting currency than it closed in converts its dollars at the rate it "
        "closed with."
    )
    currency = serializers.CharField(help_text="ISO 4217 code of cost: REPORTING_CURRENCY.")
    missing_rates = MissingRateSerializer(
        many=True, help_text="Exchange rates missing: their amounts are left out of cost."
    )


class ReopenSerializer(serializers.Serializer):
    reason = serializers.CharField(help_text="Why the month reopens; kept with it.")
