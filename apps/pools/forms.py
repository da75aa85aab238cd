from django import forms
from django.utils.text import slugify

from apps.core.forms import TablerFormMixin
from apps.pools.models import Pool, Workload

# Slugs that would shadow a fixed URL such as /pools/new/.
RESERVED_SLUGS = frozenset({"new"})


class SlugFromNameMixin:
    """Fills an empty slug from the name and refuses slugs that shadow fixed URLs."""

    def clean_slug(self):
        slug = self.cleaned_data.get("slug") or slugify(self.data.get("name", ""))
        if not slug:
            raise forms.ValidationError("Enter a slug or a name it can be made from.")
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(f"“{slug}” is reserved for a page address; choose another.")
        return slug


class PoolForm(TablerFormMixin, SlugFromNameMixin, forms.ModelForm):
    class Meta:
        model = Pool
        fields = [
            "name",
            "slug",
            "purpose",
            "deployment",
            "provider",
            "region",
            "gpu_model_name",
            "gpu_count",
            "gpus_per_node",
            "price_per_gpu_hour_usd",
            "owner",
            "description",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["slug"].required = False
        self.fields["slug"].help_text = "Leave empty to derive it from the name."

    def clean(self):
        cleaned = super().clean()
        gpu_count, gpus_per_node = cleaned.get("gpu_count"), cleaned.get("gpus_per_node")
        if gpu_count and gpus_per_node and gpu_count % gpus_per_node:
            self.add_error(
                "gpu_count",
                f"{gpu_count} GPUs do not fill whole nodes of {gpus_per_node}: "
                f"use a multiple of {gpus_per_node}, or change GPUs per node.",
            )
        return cleaned


class WorkloadForm(TablerFormMixin, SlugFromNameMixin, forms.ModelForm):
    class Meta:
        model = Workload
        fields = ["name", "slug", "kind", "pool", "gpu_count", "status", "owner", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["slug"].required = False
        self.fields["slug"].help_text = "Leave empty to derive it from the name."

    def clean(self):
        cleaned = super().clean()
        pool, gpu_count = cleaned.get("pool"), cleaned.get("gpu_count")
        if pool and gpu_count and gpu_count > pool.gpu_count:
            self.add_error(
                "gpu_count",
                f"The pool {pool.name} has {pool.gpu_count} GPUs; "
                f"a workload cannot use {gpu_count}.",
            )
        return cleaned
