"""Figures for pool pages. Pure builders: rows in, ``go.Figure`` out."""

import plotly.graph_objects as go

from apps.core.colours import PURPOSE_COLOURS

_BASE_LAYOUT = {
    "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 12},
    "legend": {"orientation": "h", "y": -0.2},
}


def build_gpus_by_purpose_figure(
    gpus_by_purpose: dict[str, int], labels: dict[str, str]
) -> go.Figure:
    """Donut of GPU counts per purpose (training / inference / mixed)."""
    purposes = [purpose for purpose, gpus in gpus_by_purpose.items() if gpus]
    figure = go.Figure(
        go.Pie(
            labels=[labels[purpose] for purpose in purposes],
            values=[gpus_by_purpose[purpose] for purpose in purposes],
            marker={"colors": [PURPOSE_COLOURS[purpose] for purpose in purposes]},
            hole=0.55,
            sort=False,
            hovertemplate="%{label}: %{value} GPUs (%{percent})<extra></extra>",
            textinfo="label+value",
        )
    )
    figure.update_layout(title="GPUs by purpose", showlegend=True, **_BASE_LAYOUT)
    return figure


def build_pool_hourly_price_figure(pools) -> go.Figure:
    """Horizontal bars: what each pool costs per hour (USD/h), coloured by purpose."""
    pools = sorted(pools, key=lambda pool: pool.price_per_hour_usd)
    figure = go.Figure()
    for purpose, colour in PURPOSE_COLOURS.items():
        of_purpose = [pool for pool in pools if pool.purpose == purpose]
        if not of_purpose:
            continue
        figure.add_trace(
            go.Bar(
                name=of_purpose[0].get_purpose_display(),
                orientation="h",
                y=[pool.name for pool in of_purpose],
                x=[float(pool.price_per_hour_usd) for pool in of_purpose],
                marker_color=colour,
                customdata=[
                    [pool.gpu_count, float(pool.price_per_gpu_hour_usd)] for pool in of_purpose
                ],
                hovertemplate=(
                    "%{y}: $%{x:,.2f}/h<br>%{customdata[0]} GPUs × $%{customdata[1]:.2f}/GPU-h"
                    "<extra></extra>"
                ),
            )
        )
    figure.update_layout(
        title="Price per hour by pool",
        xaxis_title="USD per hour",
        yaxis={"automargin": True, "categoryorder": "total ascending"},
        barmode="stack",
        legend_traceorder="normal",
        **_BASE_LAYOUT,
    )
    return figure
