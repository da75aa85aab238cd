"""Figures only the Overview shows: the cost share by purpose and the utilisation
heatmap. Pure builders, as apps/reports/charts.py's: ``None`` when there is nothing to
draw."""

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from apps.core.charts import BASE_LAYOUT
from apps.core.colours import PURPOSE_COLOURS
from apps.reports.charts import IDLE_COLOUR, WEEKDAYS


def build_share_donut(rows, *, metric: str = "cost_usd") -> go.Figure | None:
    """Donut of cost (USD) or busy GPU-hours by purpose, from cost-report rows."""
    rows = [row for row in rows if getattr(row, metric) > 0]
    if not rows:
        return None
    unit_format = "$%{value:,.0f}" if metric == "cost_usd" else "%{value:,.0f} GPU-h"
    figure = go.Figure(
        go.Pie(
            labels=[row.label for row in rows],
            values=[getattr(row, metric) for row in rows],
            marker={"colors": [PURPOSE_COLOURS.get(row.key, IDLE_COLOUR) for row in rows]},
            hole=0.55,
            sort=False,
            hovertemplate=f"%{{label}}: {unit_format} (%{{percent}})<extra></extra>",
            textinfo="label+percent",
        )
    )
    title = _("Cost share by purpose") if metric == "cost_usd" else _("GPU-hour share by purpose")
    figure.update_layout(title=title, showlegend=True, **BASE_LAYOUT)
    return figure


def build_heatmap_figure(grid, *, zone_name: str) -> go.Figure | None:
    """Mean utilisation (%) by weekday × local hour."""
    if not any(value is not None for row in grid for value in row):
        return None
    figure = go.Figure(
        go.Heatmap(
            z=grid,
            x=list(range(24)),
            y=[str(day) for day in WEEKDAYS],
            colorscale="Blues",
            zmin=0,
            zmax=100,
            colorbar={"title": "%"},
            hovertemplate="%{y} %{x}:00: %{z:.1f} %<extra></extra>",
        )
    )
    figure.update_layout(
        title=_("Utilisation by weekday and hour (%(zone)s)") % {"zone": zone_name},
        xaxis={"title": _("Hour of day (%(zone)s)") % {"zone": zone_name}, "dtick": 2},
        yaxis={"autorange": "reversed", "title": _("Weekday")},
        **BASE_LAYOUT,
    )
    return figure
