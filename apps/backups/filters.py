import django_filters

from apps.backups.models import BackupVersion, DrillVerdict, RestoreDrill, Tier, VersionKind
from apps.core.serializers import StrictBooleanFilter


class BackupVersionFilter(django_filters.FilterSet):
    workload = django_filters.CharFilter(field_name="workload__slug", help_text="Workload slug.")
    kind = django_filters.ChoiceFilter(choices=VersionKind.choices)
    tier = django_filters.ChoiceFilter(choices=Tier.choices)

    class Meta:
        model = BackupVersion
        fields = ["workload", "kind", "tier"]


class RestoreDrillFilter(django_filters.FilterSet):
    workload = django_filters.CharFilter(
        field_name="policy__workload__slug", help_text="Workload slug."
    )
    passed = StrictBooleanFilter()
    verdict = django_filters.ChoiceFilter(choices=DrillVerdict.choices)

    class Meta:
        model = RestoreDrill
        fields = ["workload", "passed", "verdict"]
