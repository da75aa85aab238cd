import django_filters
from django import forms
from django.utils.translation import gettext_lazy as _

from apps.catalog.models import GpuModel
from apps.pools.models import Deployment, Pool, Purpose, Workload


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


def _regions(request=None):
    regions = Pool.objects.exclude(region="").order_by("region").values_list("region", flat=True)
    return [(region, region) for region in regions.distinct()]


class PoolFilter(ArchivedFilterMixin, django_filters.FilterSet):
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


class WorkloadFilter(ArchivedFilterMixin, django_filters.FilterSet):
    archived = _archived_filter()

    class Meta:
        model = Workload
        fields = []
