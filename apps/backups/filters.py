import django_filters

from apps.backups.models import BackupVersion, DrillVerdict, RestoreDrill, Tier, VersionKind
from apps.core.serializers import StrictBooleanFilter
from apps.pools.filters import TeamFilterMixin, team_api_filter


class BackupVersionFilter(TeamFilterMixin, django_filters.FilterSet):
    # The team the workload runs for: its own, or its pool's.
    team_paths = ("workload__team", "workload__pool__team")

    team = team_api_filter()
    workload = django_filters.CharFilter(field_name="workload__slug", help_text="Workload slug.")
    kind = django_filters.ChoiceFilter(choices=VersionKind.choices)
    tier = django_filters.ChoiceFilter(choices=Tier.choices)

    class Meta:
        model = BackupVersion
        fields = ["team", "workload", "kind", "tier"]


class RestoreDrillFilter(TeamFilterMixin, django_filters.FilterSet):
    team_paths = ("policy__workload__team", "policy__workload__pool__team")

    team = team_api_filter()
    workload = django_filters.CharFilter(
        field_name="policy__workload__slug", help_text="Workload slug."
    )
    passed = StrictBooleanFilter()
    verdict = django_filters.ChoiceFilter(choices=DrillVerdict.choices)

    class Meta:
        model = RestoreDrill
        fields = ["team", "workload", "passed", "verdict"]
