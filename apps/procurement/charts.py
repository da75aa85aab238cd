"""Figures for the scenario page. Pure builders: comparison results in, ``go.Figure`` out."""

import plotly.graph_objects as go
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.core.charts import BASE_LAYOUT, category_axis, hour_axis, hover_name, short_label

BREAKDOWN_LINES = (
    ("compute", gettext_lazy("Compute"), "#206bc4"),
    ("power", gettext_lazy("Power"), "#f76707"),
    ("storage", gettext_lazy("Storage"), "#ae3ec9"),
    ("network", gettext_lazy("Network"), "#2fb344"),
    ("operations", gettext_lazy("Operations"), "#667382"),
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
                name=str(label),
                orientation="h",
                y=names,
                x=values,
                customdata=[hover_name(name) for name in names],
                marker_color=colour,
                hovertemplate=f"%{{customdata}}<br>{label}: %{{x:,.0f}} {currency}<extra></extra>",
            )
        )
    figure.update_layout(
        title=_("Total cost over %(months)s months (%(currency)s)")
        % {"months": horizon_months, "currency": currency},
        xaxis_title=currency,
        yaxis=category_axis(names, autorange="reversed"),
        barmode="stack",
        **BASE_LAYOUT,
    )
    return figure


def build_cost_per_unit_figure(results, currency: str) -> go.Figure:
    """Cost per effective (reference) GPU-hour of each option, and per 1M tokens if known:
    horizontal bars, one panel per unit side by side on the same option rows, so the
    option names read level however long they are."""
    names = [result.spec.name for result in results]
    per_gpu_hour_unit = _("%(currency)s per reference GPU-hour") % {"currency": currency}
    figure = go.Figure(
        go.Bar(
            name=_("per effective GPU-hour"),
            orientation="h",
            y=names,
            x=[result.cost_per_effective_gpu_hour for result in results],
            customdata=[hover_name(name) for name in names],
            marker_color="#206bc4",
            hovertemplate="%{customdata}<br>%{x:,.2f} "
            + _("%(currency)s/reference GPU-h") % {"currency": currency}
            + "<extra></extra>",
        )
    )
    xaxis = {"title": per_gpu_hour_unit, "automargin": True, "rangemode": "tozero"}
    if any(result.cost_per_million_tokens for result in results):
        per_million_unit = _("%(currency)s per 1M tokens") % {"currency": currency}
        figure.add_trace(
            go.Bar(
                name=_("per 1M output tokens"),
                orientation="h",
                y=names,
                x=[result.cost_per_million_tokens for result in results],
                customdata=[hover_name(name) for name in names],
                marker_color="#f76707",
                xaxis="x2",
                hovertemplate="%{customdata}<br>%{x:,.2f} " + per_million_unit + "<extra></extra>",
            )
        )
        # Two units, two panels: one bar scale across both would flatten the smaller. Each
        # panel's axis says the currency; the legend beside each colour says per what, so
        # two long unit titles never meet at the seam.
        xaxis.update(domain=[0, 0.45], title=currency)
        figure.update_layout(
            xaxis2={
                "title": currency,
                "domain": [0.55, 1],
                "anchor": "y",
                "automargin": True,
                "rangemode": "tozero",
            },
        )
    figure.update_layout(
        title=_("Cost per unit of work"),
        xaxis=xaxis,
        yaxis=category_axis(names, autorange="reversed"),
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
            name=_("Total cost"),
            line={"color": "#206bc4"},
            hovertemplate=_("%%{x} baseline GPUs: %%{y:,.0f} %(currency)s<extra></extra>")
            % {"currency": currency},
        )
    )
    optimum = result.optimal_baseline_gpus
    figure.add_trace(
        go.Scatter(
            x=[optimum],
            y=[curve[optimum]],
            mode="markers",
            name=_("Optimum: %(gpus)s GPUs") % {"gpus": optimum},
            marker={"color": "#d63939", "size": 11, "symbol": "diamond"},
            hovertemplate=_("Optimum %%{x} GPUs: %%{y:,.0f} %(currency)s<extra></extra>")
            % {"currency": currency},
        )
    )
    figure.update_layout(
        title=_("%(name)s: cost by baseline size") % {"name": short_label(result.spec.name)},
        xaxis_title=_("Baseline GPUs (reserved or owned)"),
        yaxis_title=_("%(currency)s over the horizon") % {"currency": currency},
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
            name=_("Demand (reference GPUs)"),
            line={"color": "#206bc4", "shape": "hv"},
            hovertemplate="%{x}: %{y:,.1f} " + _("reference GPUs") + "<extra></extra>",
        )
    )
    # Each baseline is a dashed line of its own in the legend, not a label on the plot: a
    # label at the line's end sits on the demand curve wherever demand crosses it.
    for result in results:
        if result.spec.kind == "hybrid" and abs(result.spec.throughput_ratio - 1) < 1e-9:
            label = _("%(name)s: baseline %(gpus)s GPUs") % {
                "name": short_label(result.spec.name),
                "gpus": result.baseline_gpus,
            }
            figure.add_trace(
                go.Scatter(
                    x=[x[0], x[-1]] if x else [],
                    y=[result.baseline_gpus] * (2 if x else 0),
                    mode="lines",
                    name=label,
                    line={"color": "#d63939", "dash": "dash"},
                    hovertemplate=label + "<extra></extra>",
                )
            )
    figure.update_layout(
        title=_("Demand per hour"),
        xaxis=hour_axis(x, title=_("Hour (UTC)"))
        if hourly_times
        else {"title": _("Hour of the curve"), "automargin": True},
        yaxis_title=_("Reference GPUs"),
        **BASE_LAYOUT,
    )
    return figure
