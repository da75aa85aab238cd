from django.db import models
from django.db.models import BooleanField, Case, ExpressionWrapper, F, IntegerField, Q, Value, When
from django.utils import timezone


class BackupPolicyQuerySet(models.QuerySet):
    def with_status(self, now=None):
        """Overdue, failing, needs-attention and a risk score, all in SQL.

        Risk = missing coverage (0–100) + 100 if the latest drill failed + 100 if a drill
        is overdue: the fleet view sorts by attention first, then by risk.
        """
        now = now or timezone.now()
        overdue = Q(drill_due_at__lt=now)
        failing = Q(last_drill_passed=False)
        return self.annotate(
            is_overdue=ExpressionWrapper(overdue, output_field=BooleanField()),
            is_failing=ExpressionWrapper(failing, output_field=BooleanField()),
            needs_attention=Case(
                When(overdue | failing, then=Value(1)),
                default=Value(0),
                output_field=IntegerField(),
            ),
            risk_score=ExpressionWrapper(
                Value(100)
                - F("coverage_percent")
                + Case(When(failing, then=Value(100)), default=Value(0))
                + Case(When(overdue, then=Value(100)), default=Value(0)),
                output_field=IntegerField(),
            ),
        )

    def ranked_by_risk(self, now=None):
        return (
            self.with_status(now)
            .select_related("workload__pool")
            .order_by("-needs_attention", "-risk_score", "workload__name")
        )


class BackupVersionQuerySet(models.QuerySet):
    def kept(self):
        return self.filter(purged_at__isnull=True)

    def stable(self):
        return self.filter(stable_since__isnull=False).order_by("-stable_since")
