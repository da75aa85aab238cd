from dataclasses import dataclass

from django.contrib.auth.decorators import permission_required
from django.db.models import Count
from django.shortcuts import get_object_or_404
from django.urls import reverse
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


def published_difference(architecture: ModelArchitecture, counts: ParameterCounts):
    """(derived − published) ÷ published, or None without a published figure."""
    if not architecture.published_params:
        return None
    return (counts.total - architecture.published_params) / architecture.published_params


def parameter_lines(architecture: ModelArchitecture, counts: ParameterCounts):
    """The count of each part with the formula that gives it (see architecture.py)."""
    shape = architecture.shape
    hidden, vocab = shape.hidden_size, shape.vocab_size
    query_width = shape.attention_heads * shape.head_dim
    key_value_width = shape.kv_heads * shape.head_dim
    attention_formula = (
        f"q + k + v + o = {hidden:,} × {query_width:,} + 2 × {hidden:,} × {key_value_width:,} "
        f"+ {query_width:,} × {hidden:,}"
    )
    if shape.qkv_bias:
        attention_formula += f" + bias {query_width:,} + 2 × {key_value_width:,}"
    mlp_formula = f"3 × hidden × intermediate = 3 × {hidden:,} × {shape.intermediate_size:,}"
    if shape.experts > 1:
        mlp_formula += f" × {shape.experts} experts"
    lines = [
        ParameterLine(
            "Token embedding", f"vocab × hidden = {vocab:,} × {hidden:,}", counts.embedding
        ),
        ParameterLine(
            "Attention, per layer",
            f"{attention_formula} (heads {shape.attention_heads}, "
            f"KV heads {shape.kv_heads}, head dim {shape.head_dim})",
            counts.per_layer_attention,
        ),
        ParameterLine("MLP, per layer", mlp_formula, counts.per_layer_mlp),
    ]
    if counts.per_layer_router:
        lines.append(
            ParameterLine(
                "Router, per layer",
                f"hidden × experts = {hidden:,} × {shape.experts}",
                counts.per_layer_router,
            )
        )
    lines += [
        ParameterLine("Norms, per layer", f"2 × hidden = 2 × {hidden:,}", counts.per_layer_norms),
        ParameterLine(
            f"All {counts.layers} layers",
            f"layers × per layer = {counts.layers} × {counts.per_layer:,}",
            counts.layers * counts.per_layer,
        ),
        ParameterLine("Final norm", f"hidden = {hidden:,}", counts.final_norm),
        ParameterLine(
            "Output head",
            "tied to the token embedding"
            if shape.tied_embeddings
            else f"vocab × hidden = {vocab:,} × {hidden:,}",
            counts.output_head,
        ),
        ParameterLine(
            "Total",
            "embedding + layers × per layer + final norm + output head",
            counts.total,
            is_total=True,
        ),
    ]
    if counts.active != counts.total:
        lines.append(
            ParameterLine(
                "Active per token",
                f"total − {counts.layers} layers × ({shape.experts} − "
                f"{shape.experts_per_token}) idle experts × 3 × {hidden:,} × "
                f"{shape.intermediate_size:,}",
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
    "pretitle": "GPU catalog",
    "new_title": "New GPU model",
    "submit_label": "Save GPU model",
}


@permission_required("catalog.add_gpumodel", raise_exception=True)
@require_http_methods(["GET", "POST"])
def gpu_model_create(request):
    return form_page(
        request,
        form_class=GpuModelForm,
        noun="GPU model",
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
        noun="GPU model",
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
        noun="GPU model",
        blocking=list(gpu_model.pools.order_by("name")),
        blocking_label="pools",
        list_url="catalog:gpu_model_list",
        cancel_url=gpu_model.get_absolute_url(),
        pretitle="GPU catalog",
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
    "pretitle": "Model architectures",
    "new_title": "New model architecture",
    "submit_label": "Save architecture",
}


@permission_required("catalog.add_modelarchitecture", raise_exception=True)
@require_http_methods(["GET", "POST"])
def architecture_create(request):
    return form_page(
        request,
        form_class=ModelArchitectureForm,
        noun="Model architecture",
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
        noun="Model architecture",
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
        noun="Model architecture",
        blocking=list(architecture.workloads.order_by("name")),
        blocking_label="workloads",
        list_url="catalog:architecture_list",
        cancel_url=architecture.get_absolute_url(),
        pretitle="Model architectures",
    )
