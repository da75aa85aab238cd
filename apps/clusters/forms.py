from django import forms
from django.db.models import Q

from apps.clusters.models import Cluster, default_cluster_pk
from apps.core.forms import SlugFromNameMixin, TablerFormMixin


class ClusterForm(TablerFormMixin, SlugFromNameMixin, forms.ModelForm):
    class Meta:
        model = Cluster
        fields = [
            "name",
            "slug",
            "kind",
            "region",
            "timezone",
            "description",
            "slurm_pull_enabled",
            "slurm_pull_interval_minutes",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A cluster that does not pull Slurm accounting need not name an interval.
        self.fields["slurm_pull_interval_minutes"].required = False

    def clean_slurm_pull_interval_minutes(self):
        value = self.cleaned_data.get("slurm_pull_interval_minutes")
        if value is None:
            return Cluster._meta.get_field("slurm_pull_interval_minutes").default
        return value


class ClusterFieldMixin:
    """A ``cluster`` field that may be left out of a post: the object stays in its cluster,
    and a new one joins ``default``. Archived clusters are offered only to the objects
    already in them."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields.get("cluster")
        if field is None:
            return
        field.required = False
        field.empty_label = None
        current = self.instance.cluster_id if self.instance.pk else None
        field.queryset = Cluster.objects.filter(
            Q(archived_at__isnull=True) | Q(pk=current)
        ).order_by("name")

    def clean_cluster(self):
        cluster = self.cleaned_data.get("cluster")
        if cluster is not None:
            return cluster
        if self.instance.pk:
            return self.instance.cluster
        return Cluster.objects.get(pk=default_cluster_pk())
