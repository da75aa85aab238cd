"""Figures for pool pages. Pure builders: rows in, ``go.Figure`` out."""

import plotly.graph_objects as go
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.core.charts import BASE_LAYOUT
from apps.core.colours import PURPOSE_COLOURS


def build_gpus_by_purpose_figure(
    gpus_by_purpose: dict[str, int], labels: dict[str, str]
) -> go.Figure:
    """Donut of GPU counts per purpose (training / inference / mixed)."""
    purposes = [purpose for purpose, gpus in gpus_by_purpose.items() if gpus]
    figure = go.Figure(
        go.Pie(
            # Plotly takes plain strings only: labels may be lazy translations.
            labels=[str(labels[purpose]) for purpose in purposes],
            values=[gpus_by_purpose[purpose] for purpose in purposes],
            marker={"colors": [PURPOSE_COLOURS[purpose] for purpose in purposes]},
            hole=0.55,
            sort=False,
            hovertemplate=gettext("%{label}: %{value} GPUs (%{percent})") + "<extra></extra>",
            textinfo="label+value",
        )
    )
    figure.update_layout(title=gettext("GPUs by purpose"), showlegend=True, **BASE_LAYOUT)
    return figure


MEMORY_LINE_COLOURS = {
    "weights": "#206bc4",
    "gradients": "#4299e1",
    "optimizer_states": "#ae3ec9",
    "activations": "#f59f00",
    "kv_cache": "#2fb344",
    "overhead": "#868e96",
}
MEMORY_LINE_LABELS = {
    "weights": _("Weights"),
    "gradients": _("Gradients"),
    "optimizer_states": _("Optimizer states"),
    "activations": _("Activations"),
    "kv_cache": _("KV cache"),
    "overhead": _("Runtime overhead"),
}


def build_memory_breakdown_figure(breakdown, gpu_model, title=None) -> go.Figure:
    """One stacked bar of per-GPU memory by line, in GB (10⁹ bytes), against the GPU's
    memory as a dashed line — the vendor's GB, as the fit engine compares."""
    lines = breakdown.as_dict()
    figure = go.Figure()
    for key, lazy_label in MEMORY_LINE_LABELS.items():
        label = str(lazy_label)
        value_bytes = lines.get(key) or 0
        if not value_bytes:
            continue
        figure.add_trace(
            go.Bar(
                name=label,
                x=[gettext("Needed per GPU")],
                y=[value_bytes / 1e9],
                marker_color=MEMORY_LINE_COLOURS[key],
                hovertemplate=f"{label}: %{{y:,.2f}} GB<extra></extra>",
            )
        )
    gpu_memory_gb = gpu_model.memory_bytes / 1e9
    figure.add_hline(
        y=gpu_memory_gb,
        line_dash="dash",
        line_color="#d63939",
        annotation_text=f"{gpu_model.name}: {gpu_memory_gb:,.0f} GB",
        annotation_position="top left",
    )
    total_gb = (lines.get("total") or 0) / 1e9
    figure.update_layout(
        title=title or gettext("Memory per GPU"),
        barmode="stack",
        yaxis_title=gettext("GB per GPU (10⁹ bytes)"),
        yaxis_range=[0, max(total_gb, gpu_memory_gb) * 1.15],
        **BASE_LAYOUT,
    )
    return figure
