from django import forms

from apps.clusters.models import Cluster
from apps.core.forms import SlugFromNameMixin, TablerFormMixin


class ClusterForm(TablerFormMixin, SlugFromNameMixin, forms.ModelForm):
    class Meta:
        model = Cluster
        fields = ["name", "slug", "kind", "region", "timezone", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}
