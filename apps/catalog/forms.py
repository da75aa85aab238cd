from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.catalog.models import GpuModel, ModelArchitecture
from apps.core.forms import SlugFromNameMixin, TablerFormMixin

DENSE_PEAK_FIELDS = (
    "bf16_dense_tflops",
    "fp16_dense_tflops",
    "fp8_dense_tflops",
    "int8_dense_tops",
)
DENSE_PEAK_HELP = _(
    "Dense, never 2:4-sparse: datasheets often print the sparse figure, twice as large. "
    "Leave empty if the GPU lacks the format."
)


def _require_positive(form, name, unit):
    """The field's value if it is empty or above zero; otherwise a message naming it."""
    value = form.cleaned_data.get(name)
    if value is not None and value <= 0:
        label = form.fields[name].label
        raise forms.ValidationError(
            gettext("%(label)s must be above 0 %(unit)s; got %(value)s.")
            % {"label": label, "unit": unit, "value": value}
        )
    return value


class GpuModelForm(TablerFormMixin, SlugFromNameMixin, forms.ModelForm):
    """Datasheet figures above 0 and the reference price in range: apps/core/bounds.py,
    shared with the API."""

    class Meta:
        model = GpuModel
        fields = [
            "name",
            "slug",
            "vendor",
            "memory_gb",
            "memory_type",
            "memory_bandwidth_gb_per_second",
            *DENSE_PEAK_FIELDS,
            "tdp_watts",
            "interconnect",
            "interconnect_gb_per_second",
            "mig_support",
            "mig_compute_slices",
            "reference_price_per_gpu_hour_usd",
            "source_note",
        ]
        widgets = {"source_note": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in DENSE_PEAK_FIELDS:
            self.fields[name].help_text = DENSE_PEAK_HELP


class ModelArchitectureForm(TablerFormMixin, SlugFromNameMixin, forms.ModelForm):
    class Meta:
        model = ModelArchitecture
        fields = [
            "name",
            "slug",
            "family",
            "layers",
            "hidden_size",
            "intermediate_size",
            "attention_heads",
            "kv_heads",
            "head_dim",
            "vocab_size",
            "max_context",
            "experts",
            "experts_per_token",
            "tied_embeddings",
            "qkv_bias",
            "published_params",
            "source_note",
        ]
        widgets = {"source_note": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["published_params"].help_text = _(
            "The exact count the model card or checkpoint states (e.g. 8030261248), "
            "compared with the count derived from the shape."
        )

    def clean_published_params(self):
        return _require_positive(self, "published_params", gettext("parameters"))

    def clean(self):
        cleaned = super().clean()
        heads, kv_heads = cleaned.get("attention_heads"), cleaned.get("kv_heads")
        if heads and kv_heads and heads % kv_heads and "kv_heads" not in self.errors:
            self.add_error(
                "kv_heads",
                gettext(
                    "%(kv_heads)s KV heads do not divide %(heads)s attention heads: each KV "
                    "head serves a whole group of query heads, so use a divisor of %(heads)s."
                )
                % {"kv_heads": kv_heads, "heads": heads},
            )
        experts, per_token = cleaned.get("experts"), cleaned.get("experts_per_token")
        if experts and per_token and per_token > experts and "experts_per_token" not in self.errors:
            self.add_error(
                "experts_per_token",
                gettext(
                    "A token cannot be routed to %(per_token)s experts when the model has "
                    "%(experts)s: use at most %(experts)s."
                )
                % {"per_token": per_token, "experts": experts},
            )
        return cleaned
