from dataclasses import dataclass

from django.contrib.auth.decorators import permission_required
from django.db.models import Count
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods

from apps.catalog.architecture import ParameterCounts, parameter_counts
from apps.catalog.forms import GpuModelForm, ModelArchitectureForm
from apps.catalog.models import GpuModel, ModelArchitecture
from apps.core.crud import delete_page, form_page
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


# GPU models


@require_GET
def gpu_model_list(request):
    gpu_models = GpuModel.objects.annotate(pool_count=Count("pools")).order_by("vendor", "name")
    return render_page(request, "catalog/gpu_model_list.html", {"gpu_models": gpu_models})


@require_GET
def gpu_model_detail(request, slug):
    gpu_model = get_object_or_404(GpuModel, slug=slug)
    pools = gpu_model.pools.order_by("name")
    return render_page(
        request,
        "catalog/gpu_model_detail.html",
        {"gpu_model": gpu_model, "pools": pools, "history": history_rows(gpu_model)},
    )


GPU_FORM_CONTEXT = {
    "pretitle": gettext_lazy("GPU catalog"),
    "new_title": gettext_lazy("New GPU model"),
    "submit_label": gettext_lazy("Save GPU model"),
}


@permission_required("catalog.add_gpumodel", raise_exception=True)
@require_http_methods(["GET", "POST"])
def gpu_model_create(request):
    return form_page(
        request,
        form_class=GpuModelForm,
        noun=gettext_lazy("GPU model"),
        template="catalog/catalog_form.html",
        context={**GPU_FORM_CONTEXT, "cancel_url": reverse("catalog:gpu_model_list")},
    )


@permission_required("catalog.change_gpumodel", raise_exception=True)
@require_http_methods(["GET", "POST"])
def gpu_model_edit(request, slug):
    gpu_model = get_object_or_404(GpuModel, slug=slug)
    return form_page(
        request,
        form_class=GpuModelForm,
        noun=gettext_lazy("GPU model"),
        template="catalog/catalog_form.html",
        instance=gpu_model,
        context={**GPU_FORM_CONTEXT, "cancel_url": gpu_model.get_absolute_url()},
    )


@permission_required("catalog.delete_gpumodel", raise_exception=True)
@require_http_methods(["GET", "POST"])
def gpu_model_delete(request, slug):
    gpu_model = get_object_or_404(GpuModel, slug=slug)
    return delete_page(
        request,
        obj=gpu_model,
        noun=gettext_lazy("GPU model"),
        blocking=list(gpu_model.pools.order_by("name")),
        blocking_label=_("pools"),
        list_url="catalog:gpu_model_list",
        cancel_url=gpu_model.get_absolute_url(),
        pretitle=_("GPU catalog"),
    )


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


@require_GET
def architecture_detail(request, slug):
    architecture = get_object_or_404(ModelArchitecture, slug=slug)
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


ARCHITECTURE_FORM_CONTEXT = {
    "pretitle": gettext_lazy("Model architectures"),
    "new_title": gettext_lazy("New model architecture"),
    "submit_label": gettext_lazy("Save architecture"),
}


@permission_required("catalog.add_modelarchitecture", raise_exception=True)
@require_http_methods(["GET", "POST"])
def architecture_create(request):
    return form_page(
        request,
        form_class=ModelArchitectureForm,
        noun=gettext_lazy("Model architecture"),
        template="catalog/catalog_form.html",
        context={**ARCHITECTURE_FORM_CONTEXT, "cancel_url": reverse("catalog:architecture_list")},
    )


@permission_required("catalog.change_modelarchitecture", raise_exception=True)
@require_http_methods(["GET", "POST"])
def architecture_edit(request, slug):
    architecture = get_object_or_404(ModelArchitecture, slug=slug)
    return form_page(
        request,
        form_class=ModelArchitectureForm,
        noun=gettext_lazy("Model architecture"),
        template="catalog/catalog_form.html",
        instance=architecture,
        context={**ARCHITECTURE_FORM_CONTEXT, "cancel_url": architecture.get_absolute_url()},
    )


@permission_required("catalog.delete_modelarchitecture", raise_exception=True)
@require_http_methods(["GET", "POST"])
def architecture_delete(request, slug):
    architecture = get_object_or_404(ModelArchitecture, slug=slug)
    return delete_page(
        request,
        obj=architecture,
        noun=gettext_lazy("Model architecture"),
        blocking=list(architecture.workloads.order_by("name")),
        blocking_label=_("workloads"),
        list_url="catalog:architecture_list",
        cancel_url=architecture.get_absolute_url(),
        pretitle=_("Model architectures"),
    )
