import django_filters
from django import forms
from django.utils.translation import gettext_lazy as _

from apps.accounts.scope import scope_of
from apps.catalog.models import GpuModel
from apps.pools.models import Deployment, Pool, Purpose, Workload
from apps.pools.scoped import team_condition, team_filter_choices


def _archived_filter():
    # Applied in filter_queryset, so that no choice (the default) hides archived objects.
    return django_filters.ChoiceFilter(
        label=_("Show"),
        choices=[("all", _("Show archived")), ("true", _("Archived only"))],
        empty_label=_("Hide archived"),
        method="keep",
    )


class ArchivedFilterMixin:
    """``?archived=`` for the lists of archivable models (``ArchivableQuerySet``), with
    Tabler's classes on every field."""

    def keep(self, queryset, name, value):
        return queryset

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        return queryset.by_archived(self.form.cleaned_data.get("archived"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.form.fields.values():
            css = "form-select" if isinstance(field.widget, forms.Select) else "form-control"
            field.widget.attrs["class"] = f"{css} form-select-sm" if css == "form-select" else css


class TeamFilterMixin:
    """``?team=<slug>`` keeps a team's objects, ``?team=shared`` those of no team, among
    the objects in scope (the queryset filtered). On a page the choices are the teams in
    the requesting user's scope; in the API any text is taken, and another team's slug
    lists nothing, as an unknown one does. ``team_paths`` are (own team, inherited team
    or None) of the model."""

    team_paths: tuple[str, str | None] = ("team", None)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        user = getattr(self.request, "user", None)
        team = self.filters["team"]
        if user is not None and isinstance(team, django_filters.ChoiceFilter):
            team.extra["choices"] = team_filter_choices(scope_of(user))

    def filter_team(self, queryset, name, value):
        own, inherited = self.team_paths
        return queryset.filter(team_condition(value, own=own, inherited=inherited))


def _team_filter():
    return django_filters.ChoiceFilter(
        label=_("Team"),
        choices=[],
        empty_label=_("All teams"),
        method="filter_team",
    )


def team_api_filter():
    """``?team=`` of an API list (with ``TeamFilterMixin``): a team's slug, or shared."""
    return django_filters.CharFilter(
        method="filter_team",
        help_text="A team's slug, or shared for the objects of no team.",
    )


def _regions(request=None):
    regions = Pool.objects.exclude(region="").order_by("region").values_list("region", flat=True)
    return [(region, region) for region in regions.distinct()]


class PoolFilter(ArchivedFilterMixin, TeamFilterMixin, django_filters.FilterSet):
    team = _team_filter()
    purpose = django_filters.ChoiceFilter(
        choices=Purpose.choices, empty_label=_("All purposes"), label=_("Purpose")
    )
    deployment = django_filters.ChoiceFilter(
        choices=Deployment.choices, empty_label=_("All deployments"), label=_("Deployment")
    )
    region = django_filters.ChoiceFilter(
        choices=_regions, empty_label=_("All regions"), label=_("Region")
    )
    gpu_model = django_filters.ModelChoiceFilter(
        queryset=GpuModel.objects.all(),
        to_field_name="slug",
        empty_label=_("All GPU models"),
        label=_("GPU model"),
    )
    q = django_filters.CharFilter(
        method="search",
        label=_("Search"),
        widget=forms.TextInput(attrs={"placeholder": _("Name")}),
    )
    archived = _archived_filter()

    class Meta:
        model = Pool
        fields = ["purpose", "deployment", "region", "gpu_model"]

    def search(self, queryset, name, value):
        return queryset.filter(name__icontains=value)


class WorkloadFilter(ArchivedFilterMixin, TeamFilterMixin, django_filters.FilterSet):
    team_paths = ("team", "pool__team")

    team = _team_filter()
    archived = _archived_filter()

    class Meta:
        model = Workload
        fields = ["team"]


class PoolApiFilter(TeamFilterMixin, django_filters.FilterSet):
    """The API's pool list filters (archived ones are the viewset's ``?archived=``)."""

    team = team_api_filter()

    class Meta:
        model = Pool
        fields = ["team", "purpose", "deployment", "region", "compliance_zone"]


class WorkloadApiFilter(TeamFilterMixin, django_filters.FilterSet):
    team_paths = ("team", "pool__team")

    team = team_api_filter()

    class Meta:
        model = Workload
        fields = ["team", "kind", "status"]
