import django_filters
from django import forms

from apps.catalog.models import GpuModel
from apps.pools.models import Deployment, Pool, Purpose, Workload


def _archived_filter():
    # Applied in filter_queryset, so that no choice (the default) hides archived objects.
    return django_filters.ChoiceFilter(
        label="Show",
        choices=[("all", "Show archived"), ("true", "Archived only")],
        empty_label="Hide archived",
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


def _regions(request=None):
    regions = Pool.objects.exclude(region="").order_by("region").values_list("region", flat=True)
    return [(region, region) for region in regions.distinct()]


class PoolFilter(ArchivedFilterMixin, django_filters.FilterSet):
    purpose = django_filters.ChoiceFilter(choices=Purpose.choices, empty_label="All purposes")
    deployment = django_filters.ChoiceFilter(
        choices=Deployment.choices, empty_label="All deployments"
    )
    region = django_filters.ChoiceFilter(choices=_regions, empty_label="All regions")
    gpu_model = django_filters.ModelChoiceFilter(
        queryset=GpuModel.objects.all(), to_field_name="slug", empty_label="All GPU models"
    )
    q = django_filters.CharFilter(
        method="search", label="Search", widget=forms.TextInput(attrs={"placeholder": "Name"})
    )
    archived = _archived_filter()

    class Meta:
        model = Pool
        fields = ["purpose", "deployment", "region", "gpu_model"]

    def search(self, queryset, name, value):
        return queryset.filter(name__icontains=value)


class WorkloadFilter(ArchivedFilterMixin, django_filters.FilterSet):
    archived = _archived_filter()

    class Meta:
        model = Workload
        fields = []
