"""Figures for the reports, the pool page and the Overview's curves (the Overview's own
are apps/dashboard/charts.py). Pure builders: figures from the query results, ``None``
when there is nothing to draw (the template then shows its empty state). Training,
inference and mixed keep apps/core/colours.py's colours."""

import plotly.graph_objects as go
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.core.charts import BASE_LAYOUT, category_axis, day_axis, hover_name
from apps.core.colours import PURPOSE_COLOURS
from apps.core.money import as_decimal
from apps.pools.models import Purpose

WEEKDAYS = (
    gettext_lazy("Mon"),
    gettext_lazy("Tue"),
    gettext_lazy("Wed"),
    gettext_lazy("Thu"),
    gettext_lazy("Fri"),
    gettext_lazy("Sat"),
    gettext_lazy("Sun"),
)
IDLE_COLOUR = "#adb5bd"
UNMEASURED_COLOUR = "#e9ecef"
PEAK_BAND_COLOUR = "rgba(247, 103, 7, 0.10)"


def build_daily_split_figure(split, *, metric: str) -> go.Figure | None:
    """Stacked areas per purpose and UTC day: busy GPU-hours or measured cost (USD)."""
    series = split.busy_gpu_hours if metric == "busy" else split.measured_cost_usd
    if not split.days or not any(any(values) for values in series.values()):
        return None
    unit = _("GPU-hours") if metric == "busy" else "USD"
    figure = go.Figure()
    for purpose in Purpose:
        values = series[purpose.value]
        if not any(values):
            continue
        figure.add_trace(
            go.Scatter(
                name=str(purpose.label),
                x=[day.isoformat() for day in split.days],
                y=[float(value) for value in values],  # Plotly draws floats
                stackgroup="purpose",
                mode="lines",
                line={"color": PURPOSE_COLOURS[purpose.value], "width": 1},
                hovertemplate=(
                    f"{purpose.label} %{{x}}: %{{y:,.0f}} {unit}<extra></extra>"
                    if metric == "busy"
                    else f"{purpose.label} %{{x}}: $%{{y:,.0f}}<extra></extra>"
                ),
            )
        )
    title = (
        _("Busy GPU-hours per day, by purpose")
        if metric == "busy"
        else _("Cost of measured hours per day, by purpose")
    )
    figure.update_layout(
        title=title,
        xaxis=day_axis(split.days, title=_("Day (UTC)")),
        yaxis_title=_("GPU-hours") if metric == "busy" else _("USD per day"),
        hovermode="x unified",
        **BASE_LAYOUT,
    )
    return figure


def build_hour_of_day_figure(profile, *, zone_name: str) -> go.Figure | None:
    """Utilisation (%) and requests per hour by local hour of the day; peak hours shaded."""
    if not any(row.avg_utilization_pct is not None for row in profile) and not any(
        row.mean_requests_per_hour for row in profile
    ):
        return None
    hours = [row.hour_of_day for row in profile]
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            name=_("Mean utilisation"),
            x=hours,
            y=[row.avg_utilization_pct for row in profile],
            mode="lines+markers",
            # A point at 100 % is drawn whole, not cut by the top of the axis.
            cliponaxis=False,
            line={"color": PURPOSE_COLOURS["training"]},
            hovertemplate=_("%{x}:00 mean %{y:.1f} %<extra></extra>"),
        )
    )
    figure.add_trace(
        go.Scatter(
            name=_("p95 utilisation"),
            x=hours,
            y=[row.p95_utilization_pct for row in profile],
            mode="lines",
            line={"color": PURPOSE_COLOURS["training"], "dash": "dot"},
            hovertemplate="%{x}:00 p95 %{y:.1f} %<extra></extra>",
        )
    )
    if any(row.mean_requests_per_hour for row in profile):
        figure.add_trace(
            go.Bar(
                name=_("Requests per hour"),
                x=hours,
                y=[row.mean_requests_per_hour for row in profile],
                yaxis="y2",
                marker_color=PURPOSE_COLOURS["inference"],
                opacity=0.45,
                hovertemplate=_("%{x}:00 %{y:,.0f} requests/h<extra></extra>"),
            )
        )
    peak_hours = [row.hour_of_day for row in profile if row.is_peak]
    figure.update_layout(shapes=_peak_bands(peak_hours))
    figure.update_layout(
        title=_("Hour of day (%(zone)s); shaded: peak hours (%(hours)s h)")
        % {"zone": zone_name, "hours": len(peak_hours)},
        xaxis={
            "title": _("Hour of day (%(zone)s)") % {"zone": zone_name},
            "dtick": 2,
            "range": [-0.5, 23.5],
        },
        # Percent of capacity: always 0–100, so one quiet hour does not fill the chart.
        yaxis={"title": _("Utilisation (%)"), "range": [0, 100], "ticksuffix": " %"},
        yaxis2={
            "title": _("Requests per hour"),
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
        },
        **BASE_LAYOUT,
    )
    return figure


def _peak_bands(peak_hours: list[int]) -> list[dict]:
    """One shaded rectangle per run of peak hours, given to the layout at once: plotly's
    add_vrect() re-validates every shape already there on each call."""
    bands = []
    for hour in peak_hours:
        if bands and bands[-1][1] == hour - 0.5:
            bands[-1][1] = hour + 0.5
        else:
            bands.append([hour - 0.5, hour + 0.5])
    return [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": x0,
            "x1": x1,
            "y0": 0,
            "y1": 1,
            "fillcolor": PEAK_BAND_COLOUR,
            "line": {"width": 0},
            "layer": "below",
        }
        for x0, x1 in bands
    ]


def build_free_gpus_figure(free_grid, *, zone_name: str) -> go.Figure | None:
    """Free GPUs (lendable, after the safety margin) by weekday × local hour; slots
    without enough data are left blank (apps/reports/lending/capacity.py)."""
    if not any(value is not None for row in free_grid for value in row):
        return None
    figure = go.Figure(
        go.Heatmap(
            z=free_grid,
            x=list(range(24)),
            y=[str(day) for day in WEEKDAYS],
            colorscale="Greens",
            zmin=0,
            colorbar={"title": _("GPUs")},
            hovertemplate="%{y} %{x}:00: %{z} " + _("free GPUs") + "<extra></extra>",
        )
    )
    figure.update_layout(
        title=_("Free GPUs by weekday and hour (%(zone)s)") % {"zone": zone_name},
        xaxis={"title": _("Hour of day (%(zone)s)") % {"zone": zone_name}, "dtick": 2},
        yaxis={"autorange": "reversed", "title": _("Weekday")},
        **BASE_LAYOUT,
    )
    return figure


# Bars a cost chart draws: beyond this a half-width chart's bars are too thin to read
# (and a thousand of them weigh ~200 KB in the page); the table has every row.
COST_CHART_ROWS = 25


def build_cost_breakdown_figure(rows) -> go.Figure | None:
    """Stacked bars per report row: busy, idle and unmeasured cost (USD); for more than
    ``COST_CHART_ROWS`` rows, the costliest of them, costliest first."""
    rows = [row for row in rows if row.cost_usd > 0]
    if not rows:
        return None
    title = _("Cost by group: busy, idle and unmeasured")
    if len(rows) > COST_CHART_ROWS:
        count = len(rows)
        rows = sorted(rows, key=lambda row: -row.cost_usd)[:COST_CHART_ROWS]
        title = _(
            "Cost by group, the %(shown)d costliest of %(count)d: busy, idle and unmeasured"
        ) % {"shown": COST_CHART_ROWS, "count": count}
    labels = [str(row.label) for row in rows]
    # Plotly draws floats; the money is subtracted as Decimal first.
    busy = [
        float(
            as_decimal(row.cost_usd)
            - as_decimal(row.idle_cost_usd)
            - as_decimal(row.unmeasured_cost_usd)
        )
        for row in rows
    ]
    figure = go.Figure()
    colours = [PURPOSE_COLOURS.get(row.purpose, PURPOSE_COLOURS["mixed"]) for row in rows]
    for name, values, colour in (
        (_("Busy"), busy, colours),
        (_("Idle"), [float(row.idle_cost_usd) for row in rows], IDLE_COLOUR),
        (_("Unmeasured"), [float(row.unmeasured_cost_usd) for row in rows], UNMEASURED_COLOUR),
    ):
        figure.add_trace(
            go.Bar(
                name=name,
                y=labels,
                x=values,
                orientation="h",
                customdata=[hover_name(label) for label in labels],
                marker_color=colour,
                hovertemplate=f"%{{customdata}}<br>{name}: $%{{x:,.0f}}<extra></extra>",
            )
        )
    figure.update_layout(
        title=title,
        barmode="stack",
        xaxis_title="USD",
        yaxis=category_axis(labels, autorange="reversed"),
        **BASE_LAYOUT,
    )
    return figure
