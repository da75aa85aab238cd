"""Figures for the scenario page. Pure builders: comparison results in, ``go.Figure`` out."""

import plotly.graph_objects as go

from apps.core.charts import BASE_LAYOUT

BREAKDOWN_LINES = (
    ("compute", "Compute", "#206bc4"),
    ("power", "Power", "#f76707"),
    ("storage", "Storage", "#ae3ec9"),
    ("network", "Network", "#2fb344"),
    ("operations", "Operations", "#667382"),
)


def build_cost_by_option_figure(results, currency: str, horizon_months: int) -> go.Figure:
    """Stacked horizontal bars: each option's total over the horizon, by cost line."""
    names = [result.spec.name for result in results]
    figure = go.Figure()
    for key, label, colour in BREAKDOWN_LINES:
        values = [getattr(result.cost, key) for result in results]
        if not any(values):
            continue
        figure.add_trace(
            go.Bar(
                name=label,
                orientation="h",
                y=names,
                x=values,
                marker_color=colour,
                hovertemplate=f"%{{y}} · {label}: %{{x:,.0f}} {currency}<extra></extra>",
            )
        )
    figure.update_layout(
        title=f"Total cost over {horizon_months} months ({currency})",
        xaxis_title=currency,
        yaxis={"automargin": True, "autorange": "reversed"},
        barmode="stack",
        **BASE_LAYOUT,
    )
    return figure


def build_cost_per_unit_figure(results, currency: str) -> go.Figure:
    """Cost per effective (reference) GPU-hour of each option, and per 1M tokens if known."""
    names = [result.spec.name for result in results]
    figure = go.Figure(
        go.Bar(
            name="per effective GPU-hour",
            x=names,
            y=[result.cost_per_effective_gpu_hour for result in results],
            marker_color="#206bc4",
            # Side by side although on two axes: barmode="group" alone overlays them.
            offsetgroup="per-gpu-hour",
            hovertemplate=f"%{{x}}: %{{y:,.2f}} {currency}/reference GPU-h<extra></extra>",
        )
    )
    if any(result.cost_per_million_tokens for result in results):
        figure.add_trace(
            go.Bar(
                name="per 1M output tokens",
                x=names,
                y=[result.cost_per_million_tokens for result in results],
                marker_color="#f76707",
                yaxis="y2",
                offsetgroup="per-million-tokens",
                hovertemplate=f"%{{x}}: %{{y:,.2f}} {currency} per 1M tokens<extra></extra>",
            )
        )
        figure.update_layout(
            yaxis2={"title": f"{currency} per 1M tokens", "overlaying": "y", "side": "right"},
            barmode="group",
        )
    figure.update_layout(
        title="Cost per unit of work",
        yaxis_title=f"{currency} per reference GPU-hour",
        xaxis={"automargin": True},
        **BASE_LAYOUT,
    )
    return figure


def build_hybrid_curve_figure(result, currency: str) -> go.Figure | None:
    """Total horizon cost against the baseline size, with the newsvendor optimum marked."""
    curve = result.cost_by_baseline_gpus
    if not curve:
        return None
    figure = go.Figure(
        go.Scatter(
            x=list(range(len(curve))),
            y=list(curve),
            mode="lines+markers" if len(curve) <= 60 else "lines",
            name="Total cost",
            line={"color": "#206bc4"},
            hovertemplate=f"%{{x}} baseline GPUs: %{{y:,.0f}} {currency}<extra></extra>",
        )
    )
    optimum = result.optimal_baseline_gpus
    figure.add_trace(
        go.Scatter(
            x=[optimum],
            y=[curve[optimum]],
            mode="markers",
            name=f"Optimum: {optimum} GPUs",
            marker={"color": "#d63939", "size": 11, "symbol": "diamond"},
            hovertemplate=f"Optimum %{{x}} GPUs: %{{y:,.0f}} {currency}<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"{result.spec.name}: cost by baseline size",
        xaxis_title="Baseline GPUs (reserved or owned)",
        yaxis_title=f"{currency} over the horizon",
        **BASE_LAYOUT,
    )
    return figure


def build_demand_figure(demand, hourly_times, results) -> go.Figure:
    """Demand per hour in reference GPUs, and the hybrid baselines drawn across it."""
    x = list(hourly_times) if hourly_times else list(range(len(demand.hourly_reference_gpus)))
    figure = go.Figure(
        go.Scatter(
            x=x,
            y=list(demand.hourly_reference_gpus),
            mode="lines",
            name="Demand (reference GPUs)",
            line={"color": "#206bc4", "shape": "hv"},
            hovertemplate="%{x}: %{y:,.1f} reference GPUs<extra></extra>",
        )
    )
    for result in results:
        if result.spec.kind == "hybrid" and abs(result.spec.throughput_ratio - 1) < 1e-9:
            figure.add_hline(
                y=result.baseline_gpus,
                line_dash="dash",
                line_color="#d63939",
                annotation_text=f"{result.spec.name}: baseline {result.baseline_gpus} GPUs",
            )
    figure.update_layout(
        title="Demand per hour",
        xaxis_title="Hour (UTC)" if hourly_times else "Hour of the curve",
        yaxis_title="Reference GPUs",
        **BASE_LAYOUT,
    )
    return figure
