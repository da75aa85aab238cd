"""Figures for telemetry. Pure builders: rollup rows in, ``go.Figure`` out."""

from datetime import timedelta

import plotly.graph_objects as go
from django.utils.translation import gettext

from apps.core.charts import BASE_LAYOUT, hour_axis

AVERAGE_COLOUR = "#206bc4"
BUSIEST_COLOUR = "#f59f00"
_ONE_HOUR = timedelta(hours=1)


def _with_gaps(rows: list[dict]) -> list[dict | None]:
    """A None between hours that are not adjacent, so the line breaks where no GPU
    reported instead of drawing a straight line across the silence."""
    out: list[dict | None] = []
    for row in rows:
        if out and row["hour"] - out[-1]["hour"] > _ONE_HOUR:
            out.append(None)
        out.append(row)
    return out


def build_pool_utilization_figure(rows) -> go.Figure:
    """A pool's hourly utilization from PoolHourlyUsage rows (dicts with ``hour``,
    ``avg_utilization_pct``, and optionally ``max_utilization_pct``, ``reporting_gpus``,
    ``capacity_gpu_hours``), ordered by hour.

    ``avg_utilization_pct`` = 100 × busy GPU-hours ÷ reporting GPUs (apps/telemetry/
    rollups.py), so the line is the mean over the GPUs that reported, not over the pool's
    capacity; the hover says how many reported. No rows → a figure without data, which
    ``{% plotly_chart %}`` renders as its empty state.
    """
    rows = list(rows)
    figure = go.Figure()
    if not rows:
        return figure
    points = _with_gaps(rows)
    hours = [point["hour"] if point else None for point in points]
    reporting = [
        [point.get("reporting_gpus"), point.get("capacity_gpu_hours")] if point else [None, None]
        for point in points
    ]
    figure.add_trace(
        go.Scatter(
            name=gettext("Average of reporting GPUs"),
            x=hours,
            y=[point["avg_utilization_pct"] if point else None for point in points],
            customdata=reporting,
            mode="lines+markers" if len(rows) < 48 else "lines",
            # A point at 100 % is drawn whole, not cut by the top of the axis.
            cliponaxis=False,
            line={"color": AVERAGE_COLOUR, "width": 2},
            connectgaps=False,
            hovertemplate=(
                "%{x|%Y-%m-%d %H:00} UTC<br>"
                + gettext("Average %(value)s %%") % {"value": "%{y:.1f}"}
                + "<br>"
                + gettext("%(reporting)s of %(declared)s GPUs reporting")
                % {"reporting": "%{customdata[0]}", "declared": "%{customdata[1]:.0f}"}
                + "<extra></extra>"
            ),
        )
    )
    if any(point.get("max_utilization_pct") is not None for point in rows):
        figure.add_trace(
            go.Scatter(
                name=gettext("Busiest GPU"),
                x=hours,
                y=[point.get("max_utilization_pct") if point else None for point in points],
                mode="lines",
                cliponaxis=False,
                line={"color": BUSIEST_COLOUR, "width": 1, "dash": "dot"},
                connectgaps=False,
                hovertemplate=(
                    "%{x|%Y-%m-%d %H:00} UTC<br>"
                    + gettext("Busiest GPU %(value)s %%") % {"value": "%{y:.1f}"}
                    + "<extra></extra>"
                ),
            )
        )
    figure.update_layout(
        title=gettext("GPU utilization per hour"),
        xaxis=hour_axis([row["hour"] for row in rows], title=gettext("Hour (UTC)")),
        # Percent of the reporting GPUs: always 0–100, however few hours there are.
        yaxis={"title": gettext("Utilization (%)"), "range": [0, 100], "ticksuffix": " %"},
        showlegend=True,
        **BASE_LAYOUT,
    )
    return figure
