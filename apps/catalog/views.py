from dataclasses import dataclass

from django.db.models import Count
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET

from apps.catalog.architecture import ParameterCounts, parameter_counts
from apps.catalog.forms import GpuModelForm, ModelArchitectureForm
from apps.catalog.models import GpuModel, ModelArchitecture
from apps.core.crud import ObjectViews
from apps.core.history import history_rows
from apps.core.htmx import render_page


@dataclass(frozen=True)
class ParameterLine:
    label: str
    formula: str
    count: int
    is_total: bool = False
    element_id: str = ""


def published_difference(architecture: ModelArchitecture, counts: ParameterCounts):
    """(derived − published) ÷ published, or None without a published figure."""
    if not architecture.published_params:
        return None
    return (counts.total - architecture.published_params) / architecture.published_params


def parameter_lines(architecture: ModelArchitecture, counts: ParameterCounts):
    """The count of each part with the formula that gives it (see architecture.py), in
    the language of the request."""
    shape = architecture.shape
    hidden, vocab = f"{shape.hidden_size:,}", f"{shape.vocab_size:,}"
    query_width = f"{shape.attention_heads * shape.head_dim:,}"
    key_value_width = f"{shape.kv_heads * shape.head_dim:,}"
    widths = {"hidden": hidden, "query": query_width, "key_value": key_value_width}
    attention_formula = (
        _(
            "q + k + v + o = %(hidden)s × %(query)s + 2 × %(hidden)s × %(key_value)s "
            "+ %(query)s × %(hidden)s"
        )
        % widths
    )
    if shape.qkv_bias:
        attention_formula += _(" + bias %(query)s + 2 × %(key_value)s") % widths
    mlp_formula = _("3 × hidden × intermediate = 3 × %(hidden)s × %(intermediate)s") % {
        "hidden": hidden,
        "intermediate": f"{shape.intermediate_size:,}",
    }
    if shape.experts > 1:
        mlp_formula += _(" × %(experts)s experts") % {"experts": shape.experts}
    embedding_formula = _("vocab × hidden = %(vocab)s × %(hidden)s") % {
        "vocab": vocab,
        "hidden": hidden,
    }
    lines = [
        ParameterLine(_("Token embedding"), embedding_formula, counts.embedding),
        ParameterLine(
            _("Attention, per layer"),
            _("%(formula)s (heads %(heads)s, KV heads %(kv_heads)s, head dim %(head_dim)s)")
            % {
                "formula": attention_formula,
                "heads": shape.attention_heads,
                "kv_heads": shape.kv_heads,
                "head_dim": shape.head_dim,
            },
            counts.per_layer_attention,
        ),
        ParameterLine(_("MLP, per layer"), mlp_formula, counts.per_layer_mlp),
    ]
    if counts.per_layer_router:
        lines.append(
            ParameterLine(
                _("Router, per layer"),
                _("hidden × experts = %(hidden)s × %(experts)s")
                % {"hidden": hidden, "experts": shape.experts},
                counts.per_layer_router,
            )
        )
    lines += [
        ParameterLine(
            _("Norms, per layer"),
            _("2 × hidden = 2 × %(hidden)s") % {"hidden": hidden},
            counts.per_layer_norms,
        ),
        ParameterLine(
            _("All %(layers)s layers") % {"layers": counts.layers},
            _("layers × per layer = %(layers)s × %(per_layer)s")
            % {"layers": counts.layers, "per_layer": f"{counts.per_layer:,}"},
            counts.layers * counts.per_layer,
        ),
        ParameterLine(
            _("Final norm"), _("hidden = %(hidden)s") % {"hidden": hidden}, counts.final_norm
        ),
        ParameterLine(
            _("Output head"),
            _("tied to the token embedding") if shape.tied_embeddings else embedding_formula,
            counts.output_head,
        ),
        ParameterLine(
            _("Total"),
            _("embedding + layers × per layer + final norm + output head"),
            counts.total,
            is_total=True,
            element_id="parameter-total",
        ),
    ]
    if counts.active != counts.total:
        lines.append(
            ParameterLine(
                _("Active per token"),
                _(
                    "total − %(layers)s layers × (%(experts)s − %(per_token)s) idle experts "
                    "× 3 × %(hidden)s × %(intermediate)s"
                )
                % {
                    "layers": counts.layers,
                    "experts": shape.experts,
                    "per_token": shape.experts_per_token,
                    "hidden": hidden,
                    "intermediate": f"{shape.intermediate_size:,}",
                },
                counts.active,
                is_total=True,
            )
        )
    return lines


class CatalogViews(ObjectViews):
    """The catalog's models share one form page; a cancelled new one goes back to the list."""

    template = "catalog/catalog_form.html"
    form_titles: dict = {}
    blocking_label = ""

    def form_context(self, request, obj, parent):
        cancel_url = obj.get_absolute_url() if obj is not None else reverse(self.list_url)
        return {**self.form_titles, "cancel_url": cancel_url}

    def delete_options(self, request, obj):
        return {"blocking": self.blocking(obj), "blocking_label": self.blocking_label}

    def blocking(self, obj) -> list:
        return []


class GpuModelViews(CatalogViews):
    model = GpuModel
    name = "gpu_model"
    noun = gettext_lazy("GPU model")
    form = GpuModelForm
    list_url = "catalog:gpu_model_list"
    pretitle = gettext_lazy("GPU catalog")
    form_titles = {
        "pretitle": gettext_lazy("GPU catalog"),
        "new_title": gettext_lazy("New GPU model"),
        "submit_label": gettext_lazy("Save GPU model"),
    }
    blocking_label = gettext_lazy("pools")

    def blocking(self, gpu_model):
        return list(gpu_model.pools.order_by("name"))


class ArchitectureViews(CatalogViews):
    model = ModelArchitecture
    name = "architecture"
    noun = gettext_lazy("Model architecture")
    form = ModelArchitectureForm
    list_url = "catalog:architecture_list"
    pretitle = gettext_lazy("Model architectures")
    form_titles = {
        "pretitle": gettext_lazy("Model architectures"),
        "new_title": gettext_lazy("New model architecture"),
        "submit_label": gettext_lazy("Save architecture"),
    }
    blocking_label = gettext_lazy("workloads")

    def blocking(self, architecture):
        return list(architecture.workloads.order_by("name"))


gpu_model_views = GpuModelViews()
architecture_views = ArchitectureViews()


# GPU models


@require_GET
def gpu_model_list(request):
    gpu_models = GpuModel.objects.annotate(pool_count=Count("pools")).order_by("vendor", "name")
    return render_page(request, "catalog/gpu_model_list.html", {"gpu_models": gpu_models})


@gpu_model_views.object_view()
@require_GET
def gpu_model_detail(request, gpu_model):
    pools = gpu_model.pools.order_by("name")
    return render_page(
        request,
        "catalog/gpu_model_detail.html",
        {"gpu_model": gpu_model, "pools": pools, "history": history_rows(gpu_model)},
    )


gpu_model_create = gpu_model_views.create_view()
gpu_model_edit = gpu_model_views.edit_view()
gpu_model_delete = gpu_model_views.delete_view()


# Model architectures


@require_GET
def architecture_list(request):
    architectures = ModelArchitecture.objects.annotate(workload_count=Count("workloads")).order_by(
        "family", "name"
    )
    rows = []
    for architecture in architectures:
        counts = parameter_counts(architecture.shape)
        rows.append(
            {
                "architecture": architecture,
                "counts": counts,
                "total_billions": counts.total / 1e9,
                "active_billions": counts.active / 1e9,
                "published_billions": architecture.published_params / 1e9
                if architecture.published_params
                else None,
                "difference": published_difference(architecture, counts),
            }
        )
    return render_page(request, "catalog/architecture_list.html", {"rows": rows})


@architecture_views.object_view()
@require_GET
def architecture_detail(request, architecture):
    counts = parameter_counts(architecture.shape)
    workloads = architecture.workloads.select_related("pool").order_by("name")
    context = {
        "architecture": architecture,
        "counts": counts,
        "lines": parameter_lines(architecture, counts),
        "total_billions": counts.total / 1e9,
        "active_billions": counts.active / 1e9,
        "difference": published_difference(architecture, counts),
        "workloads": workloads,
        "history": history_rows(architecture),
    }
    return render_page(request, "catalog/architecture_detail.html", context)


architecture_create = architecture_views.create_view()
architecture_edit = architecture_views.edit_view()
architecture_delete = architecture_views.delete_view()
